package minimal

import (
	"context"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/dispatch"
	"github.com/godat/godat/provider/kit/eventq"
	"github.com/godat/godat/provider/kit/memreg"
)

// ia is an open IA. It keeps a table of each kind of object it creates,
// for dat_ia_close(3DAT), and the memory registry of its LMRs and RMRs.
type ia struct {
	api.ContextSlot
	kit.UnsupportedIA // no SRQs
	addr              Addr
	async             *evd
	pzs               kit.Set[*pz]
	evds              kit.Set[*evd]
	cnos              kit.Set[*dispatch.CNOObject]
	eps               kit.Set[*ep]
	psps              kit.Set[*psp]
	rsps              kit.Set[*rsp]
	crs               kit.Set[*cr]
	lmrs              kit.Set[*lmr]
	rmrs              kit.Set[*rmr]
	mem               *memreg.Table[*pz, *ep]
}

func newIA(a Addr) *ia {
	n := limits.MaxObjects
	return &ia{addr: a,
		pzs: kit.NewSet[*pz](api.HandlePZ, n), evds: kit.NewSet[*evd](api.HandleEVD, n),
		cnos: kit.NewSet[*dispatch.CNOObject](api.HandleCNO, n), eps: kit.NewSet[*ep](api.HandleEP, n),
		psps: kit.NewSet[*psp](api.HandlePSP, n), rsps: kit.NewSet[*rsp](api.HandleRSP, n),
		crs: kit.NewSet[*cr](api.HandleCR, 0), lmrs: kit.NewSet[*lmr](api.HandleLMR, n),
		rmrs: kit.NewSet[*rmr](api.HandleRMR, n), mem: memreg.New[*pz, *ep](),
	}
}

// add puts a new object in its table and returns it as the api type I;
// when the table is full it returns no object (a nil I, not a nil
// pointer) and the error.
func add[I any, T comparable](s *kit.Set[T], x T) (I, error) {
	if err := s.Add(x); err != nil {
		var none I
		return none, err
	}
	return any(x).(I), nil
}

func (i *ia) HandleType() api.HandleType { return api.HandleIA }

func (i *ia) AsyncEVD() (api.EVD, error) { return i.async, nil }

// Close closes the IA (dat_ia_close(3DAT)). A graceful close fails while
// the IA has objects, pending connection requests included; an abrupt one
// destroys them: peers see their connections end, requesters see
// NON_PEER_REJECTED and waiters are released. It returns once no
// goroutine of the IA runs.
func (i *ia) Close(flags api.CloseFlags) error {
	fab.Lock()
	tables := []kit.Counted{&i.pzs, &i.evds, &i.cnos, &i.eps, &i.psps, &i.rsps, &i.crs, &i.lmrs, &i.rmrs}
	if err := kit.InUse(tables...); err != nil && flags == api.CloseGraceful {
		fab.Unlock()
		return err
	}
	delete(fab.ias, i.addr)
	var waits []func()
	i.psps.All(func(s *psp) { s.unlist() })
	i.rsps.All(func(r *rsp) { r.unlist() })
	i.crs.All(func(c *cr) { c.abort() })
	i.eps.All(func(p *ep) { waits = append(waits, p.destroy()) })
	i.evds.All(func(e *evd) { e.Q.Close() })
	i.async.Q.Close()
	i.cnos.All(func(c *dispatch.CNOObject) { c.Close(); waits = append(waits, c.WaitIdle) })
	for _, t := range tables {
		t.(interface{ Clear() }).Clear()
	}
	i.mem.Clear()
	fab.Unlock()
	for _, w := range waits {
		w()
	}
	return nil
}

// SyncRDMARead and SyncRDMAWrite only check the segments: copies by the
// processor need no synchronisation (dat_lmr_sync_rdma_read(3DAT)).
func (i *ia) SyncRDMARead(segs []api.LMRTriplet) error { return i.SyncRDMAWrite(segs) }
func (i *ia) SyncRDMAWrite(segs []api.LMRTriplet) error {
	defer lock()()
	return i.mem.CheckSegments(segs)
}

// pz is a protection zone.
type pz struct {
	api.ContextSlot
	ia *ia
}

func (i *ia) CreatePZ() (api.PZ, error)   { defer lock()(); return add[api.PZ](&i.pzs, &pz{ia: i}) }
func (z *pz) HandleType() api.HandleType  { return api.HandlePZ }
func (z *pz) Query() (api.PZParam, error) { return api.PZParam{IA: z.ia}, nil }
func (z *pz) Free() error                 { defer lock()(); z.ia.pzs.Remove(z); return nil }

// evd is an event dispatcher: an eventq.Queue with the dispatch helpers.
type evd struct {
	api.ContextSlot
	dispatch.QueueControl
	ia    *ia
	flags api.EVDFlags
	cno   *dispatch.CNO
}

func newEVD(i *ia, qlen int, flags api.EVDFlags) *evd {
	e := &evd{ia: i, flags: flags}
	e.Q = eventq.New(qlen, e)
	return e
}

func (i *ia) CreateEVD(qlen int, c api.CNO, flags api.EVDFlags) (api.EVD, error) {
	defer lock()()
	e := newEVD(i, qlen, flags)
	v, err := add[api.EVD](&i.evds, e)
	if err == nil {
		e.attach(c)
	}
	return v, err
}

// post delivers a provider event; an EP without this EVD (nil) drops it.
// An overflow is reported on the async EVD.
func (e *evd) post(ev *api.Event, notify bool) {
	if e != nil {
		dispatch.Post(e.Q, ev, notify, e, e.ia.async.Q)
	}
}

// handle returns e as an api.EVD: nil for no EVD.
func (e *evd) handle() api.EVD {
	if e == nil {
		return nil
	}
	return e
}

func (e *evd) HandleType() api.HandleType { return api.HandleEVD }

func (e *evd) Query() (api.EVDParam, error) {
	defer lock()()
	p := dispatch.Param(e.Q, e.flags, e.cno)
	p.IA = e.ia
	return p, nil
}

func (e *evd) Resize(qlen int) error       { return dispatch.Resize(e.Q, qlen, limits.MaxEVDQLen) }
func (e *evd) PostSE(ev *api.Event) error  { return dispatch.PostSE(e.Q, e.flags, ev) }
func (e *evd) Dequeue(ev *api.Event) error { return e.Q.Dequeue(ev) }
func (e *evd) Wait(ctx context.Context, threshold int, ev *api.Event) (int, error) {
	return e.Q.Wait(ctx, threshold, ev)
}

func (e *evd) ModifyCNO(c api.CNO) error { defer lock()(); e.attach(c); return nil }

// attach makes the EVD feed c, or no CNO for nil; the guard has checked
// that c is a CNO of this IA.
func (e *evd) attach(c api.CNO) {
	cno, _ := dispatch.AsCNO(c, e.ia)
	e.cno = dispatch.Attach(e.Q, e.cno, cno)
}

func (e *evd) Free() error {
	defer lock()()
	e.attach(nil)
	e.Q.Close()
	e.ia.evds.Remove(e)
	return nil
}

// CreateCNO and CreateCNOFD make CNOs of the kit (dispatch.CNOObject),
// guarded by the provider's lock.
func (i *ia) CreateCNO(agent api.WaitAgent) (api.CNO, error) {
	return dispatch.CNOResult(i.newCNO(agent, false))
}

func (i *ia) CreateCNOFD() (api.CNO, int, error) { return dispatch.FDCNOResult(i.newCNO(nil, true)) }

func (i *ia) newCNO(agent api.WaitAgent, fd bool) (*dispatch.CNOObject, error) {
	defer lock()()
	c, err := dispatch.NewCNOObject(agent, fd, i, &fab.Mutex, func(c *dispatch.CNOObject) { i.cnos.Remove(c) })
	if err == nil {
		if err = i.cnos.Add(c); err != nil {
			c.Close()
		}
	}
	return c, err
}
