package plugin

// The host's proxies: one per object in the plugin, implementing the api
// interfaces by calls to the plugin. EVDs and CNOs are host-side queues
// (package eventq) that the completion ring fills; software events,
// waiting, enabling and CNOs never leave the host.

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/dispatch"
	"github.com/godat/godat/internal/eventq"
	pb "github.com/godat/godat/plugin/proto"
)

var bg = context.Background()

// proxy is what every host-side proxy of a plugin object shares.
type proxy interface {
	api.Object
	base() *proxyBase
}

type proxyBase struct {
	api.ContextSlot
	c     *runningPlugin
	ia    *proxyIA
	id    uint64
	typ   api.HandleType
	freed atomic.Bool
}

func (b *proxyBase) base() *proxyBase           { return b }
func (b *proxyBase) HandleType() api.HandleType { return b.typ }

// call checks that the object may be used and returns its connection.
func (b *proxyBase) live() error {
	if b.freed.Load() {
		return api.Errorf(api.InvalidHandle, handleSubtype(b.typ), b.typ.String()+" was freed")
	}
	if b.c.dead.Load() {
		return b.c.gone()
	}
	return nil
}

// register records a new proxy of ia under id.
func (c *runningPlugin) register(o proxy, ia *proxyIA, id uint64, t api.HandleType) {
	b := o.base()
	b.c, b.ia, b.id, b.typ = c, ia, id, t
	c.mu.Lock()
	c.objs[id] = o
	c.mu.Unlock()
}

func (c *runningPlugin) forget(o proxy) {
	b := o.base()
	b.freed.Store(true)
	c.mu.Lock()
	delete(c.objs, b.id)
	c.mu.Unlock()
}

func (c *runningPlugin) lookup(id uint64) proxy {
	if id == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.objs[id]
}

// The proxy lookups return nil interfaces for unknown ids; EPs and CRs the
// provider made on its own get a proxy on first sight.

func (c *runningPlugin) epOf(id uint64, ia *proxyIA) api.EP {
	if e := c.proxyEPOf(id, ia); e != nil {
		return e
	}
	return nil
}

func (c *runningPlugin) proxyEPOf(id uint64, ia *proxyIA) *proxyEP {
	if id == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.objs[id].(*proxyEP); ok {
		return e
	}
	if _, taken := c.objs[id]; taken || ia == nil {
		return nil
	}
	e := &proxyEP{made: true}
	e.c, e.ia, e.id, e.typ = c, ia, id, api.HandleEP
	c.objs[id] = e
	return e
}

func (c *runningPlugin) crOf(id uint64, ia *proxyIA) api.CR {
	if id == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.objs[id].(*proxyCR); ok {
		return r
	}
	if _, taken := c.objs[id]; taken || ia == nil {
		return nil
	}
	r := &proxyCR{}
	r.c, r.ia, r.id, r.typ = c, ia, id, api.HandleCR
	c.objs[id] = r
	return r
}

func (c *runningPlugin) pzOf(id uint64) api.PZ {
	if z, ok := c.lookup(id).(*proxyPZ); ok {
		return z
	}
	return nil
}

func (c *runningPlugin) evdOf(id uint64) api.EVD {
	if e, ok := c.lookup(id).(*proxyEVD); ok {
		return e
	}
	return nil
}

func (c *runningPlugin) srqOf(id uint64) api.SRQ {
	if s, ok := c.lookup(id).(*proxySRQ); ok {
		return s
	}
	return nil
}

func (c *runningPlugin) pspOf(id uint64) api.PSP {
	if s, ok := c.lookup(id).(*proxyPSP); ok {
		return s
	}
	return nil
}

func (c *runningPlugin) rspOf(id uint64) api.RSP {
	if s, ok := c.lookup(id).(*proxyRSP); ok {
		return s
	}
	return nil
}

func (c *runningPlugin) objectOf(id uint64, t api.HandleType, ia *proxyIA) api.Object {
	switch t {
	case api.HandleEP:
		return c.epOf(id, ia)
	case api.HandleCR:
		return c.crOf(id, ia)
	}
	if o := c.lookup(id); o != nil {
		return o
	}
	return nil
}

// idOf is the plugin's id of a proxy argument; 0 for nil.
func idOf(o api.Object) uint64 {
	if h, ok := o.(proxy); ok && !isNilObject(o) {
		return h.base().id
	}
	return 0
}

// badHandle is the error for an argument that is not a proxy of this
// plugin (the guard prevents it; a direct caller may not).
func badHandle(what string) error {
	return api.Errorf(api.InvalidHandle, api.NoSubtype, what+" is not an object of this plugin")
}

// --- events ---

// startEvents starts the completion pump and the liveness watch: an
// Events call the plugin holds open for its whole life, whose end without
// the host asking means the process died.
func (c *runningPlugin) startEvents() error {
	ctx, cancel := context.WithCancel(bg)
	stream, err := c.rpc.Watch(ctx, &pb.WatchReq{})
	if err != nil {
		cancel()
		return fmt.Errorf("the plugin refused the Watch stream: %w", err)
	}
	c.evCancel, c.watchDone, c.pumpDone = cancel, make(chan struct{}), make(chan struct{})
	go c.watch(stream)
	go c.pump()
	return nil
}

func (c *runningPlugin) watch(stream pb.Provider_WatchClient) {
	defer close(c.watchDone)
	_, err := stream.Recv()
	if !c.stopping.Load() {
		c.crashed(err)
	}
}

// pump moves the plugin's events from the completion ring onto the host's
// queues, sleeping on the doorbell when the ring is empty, until the
// doorbell is closed.
func (c *runningPlugin) pump() {
	defer close(c.pumpDone)
	r := c.ringsP.Load()
	for {
		c.consumeCQ()
		if err := sleepOn(r.u32(offCQSleeping), r.cqPending, c.cqBell); err != nil {
			c.consumeCQ()
			return
		}
	}
}

// consumeCQ delivers every record on the completion ring. The pump calls
// it, and so does a Dequeue that finds its queue empty while records wait,
// so that a polling consumer needs no system call and no other goroutine.
func (c *runningPlugin) consumeCQ() {
	c.cqMu.Lock()
	r := c.ringsP.Load()
	if r == nil || c.ringsGone {
		c.cqMu.Unlock()
		return
	}
	var last uint64
	for {
		ok, err := r.get(&c.rec)
		if err != nil {
			// A plugin that corrupts the ring has failed: end it, and
			// the crash handling takes over.
			c.corrupt.Store(true)
			syscall.Kill(c.pid, syscall.SIGKILL)
			break
		}
		if !ok {
			break
		}
		last = c.rec.seq
		c.deliver(&c.rec)
	}
	c.rec = event{}
	c.cqMu.Unlock()
	if last != 0 {
		c.seqMu.Lock()
		if last > c.processed {
			c.processed = last
		}
		c.seqCond.Broadcast()
		c.seqMu.Unlock()
	}
}

// deliver queues one event of the plugin on the host EVD it names.
// c.cqMu is held.
func (c *runningPlugin) deliver(e *event) {
	evd, ok := c.lookup(e.evd).(*proxyEVD)
	if !ok {
		return // the EVD was freed meanwhile
	}
	if e.notify {
		evd.Q.Notify()
		return
	}
	ia := evd.ia
	ev := api.Event{Number: e.number}
	switch ev.Number.Stream() {
	case api.EVDDTO:
		ep := c.proxyEPOf(e.ep, ia)
		ev.DTO = api.DTOCompletionData{Cookie: api.Cookie(e.cookie), Status: e.status,
			Length: e.length, Op: e.op, RMRContext: e.rmrContext}
		if ep != nil {
			ev.DTO.EP = ep
			ep.completed(&ev.DTO)
		}
	case api.EVDRMRBind:
		ev.RMRBind = api.RMRBindCompletionData{Cookie: api.Cookie(e.cookie), Status: e.status}
		if m, ok := c.lookup(e.rmr).(*proxyRMR); ok {
			ev.RMRBind.RMR = m
			m.bindDone(ev.RMRBind.Cookie)
		}
	case api.EVDCR:
		ev.CR = api.CRArrivalData{PSP: c.pspOf(e.psp), RSP: c.rspOf(e.rsp), ConnQual: api.ConnQual(e.connQual),
			CR: c.crOf(e.cr, ia), Truncated: e.truncated}
		if e.hasAddr {
			ev.CR.LocalAddr = Addr{Net: e.network, Str: e.addr}
		}
	case api.EVDConnection:
		ev.Conn = api.ConnectionData{PrivateData: e.privateData}
		if ep := c.proxyEPOf(e.ep, ia); ep != nil {
			ev.Conn.EP = ep
			ep.connEvent(ev.Number)
		}
	case api.EVDAsync:
		ev.Async = api.AsyncErrorData{Object: c.objectOf(e.object, e.objectType, ia), Reason: int(e.reason)}
	}
	evd.post(&ev, false)
}

// --- IA ---

// proxyIA is the host's proxy of an IA in the plugin.
type proxyIA struct {
	proxyBase
	async    *proxyEVD
	attr     api.IAAttr
	pattr    api.ProviderAttr
	cnoMu    sync.Mutex
	cnos     []*proxyCNO // CNOs live on the host only
	cnosDone bool        // teardown took the CNOs: no more may be added
}

func (c *runningPlugin) openIA(ctx context.Context, op api.OpenParams) (api.IA, error) {
	r, err := c.rpc.OpenIA(ctx, &pb.OpenReq{Name: op.Name, Params: op.Params, PlatformParams: op.PlatformParams,
		AsyncEvdQlen: int64(op.AsyncEVDQLen), ThreadSafe: op.ThreadSafe})
	if err != nil {
		return nil, c.prov.unavailable("opening an IA in the plugin: %v", c.rpcErr(err))
	}
	if err := errFromPB(r.Err); err != nil {
		return nil, err
	}
	ia := &proxyIA{attr: iaAttrFromPB(r.Attr), pattr: providerAttrFromPB(r.ProviderAttr)}
	c.register(ia, ia, r.Ia, api.HandleIA)
	ia.async = newHEVD(api.EVDAsync, int(r.AsyncEvdQlen))
	c.register(ia.async, ia, r.AsyncEvd, api.HandleEVD)
	c.mu.Lock()
	c.ias = append(c.ias, ia)
	c.mu.Unlock()
	c.waitSeq(r.Seq)
	return ia, nil
}

func (ia *proxyIA) Query() (api.IAAttr, api.ProviderAttr, error) {
	if err := ia.live(); err != nil {
		return api.IAAttr{}, api.ProviderAttr{}, err
	}
	r, err := ia.c.rpc.QueryIA(bg, &pb.Obj{Id: ia.id})
	if err := ia.c.done(r, err); err != nil {
		return api.IAAttr{}, api.ProviderAttr{}, err
	}
	return iaAttrFromPB(r.Attr), providerAttrFromPB(r.ProviderAttr), nil
}

func (ia *proxyIA) AsyncEVD() (api.EVD, error) {
	if ia.freed.Load() {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandleIA, "IA is closed")
	}
	return ia.async, nil
}

// Close closes the IA in the plugin and everything the host holds for it;
// the last IA of a plugin stops its process. Once the plugin is gone, Close
// only releases the host's side and succeeds.
func (ia *proxyIA) Close(flags api.CloseFlags) error {
	if ia.freed.Load() {
		return api.Errorf(api.InvalidHandle, api.SubHandleIA, "IA is closed")
	}
	c := ia.c
	if !c.dead.Load() {
		r, err := c.rpc.CloseIA(bg, &pb.CloseReq{Id: ia.id, Flags: uint32(flags)})
		if err := c.done(r, err); err != nil && !c.dead.Load() {
			return err
		}
	}
	ia.teardown()
	c.prov.released(c)
	return nil
}

// teardown retires every proxy of the IA and closes its queues.
func (ia *proxyIA) teardown() {
	c := ia.c
	c.mu.Lock()
	var mine []proxy
	for id, o := range c.objs {
		if o.base().ia == ia {
			mine = append(mine, o)
			delete(c.objs, id)
		}
	}
	for i, x := range c.ias {
		if x == ia {
			c.ias = append(c.ias[:i], c.ias[i+1:]...)
			break
		}
	}
	c.mu.Unlock()
	for _, o := range mine {
		o.base().freed.Store(true)
		switch x := o.(type) {
		case *proxyEVD:
			x.Q.Close()
		case *proxyLMR:
			c.unshare(x.mem)
		}
	}
	ia.cnoMu.Lock()
	cnos := ia.cnos
	ia.cnos, ia.cnosDone = nil, true
	ia.cnoMu.Unlock()
	for _, cn := range cnos {
		cn.freed.Store(true)
		cn.c.Close()
		cn.c.WaitIdle()
	}
}

func (ia *proxyIA) CreatePZ() (api.PZ, error) {
	if err := ia.live(); err != nil {
		return nil, err
	}
	r, err := ia.c.rpc.CreatePZ(bg, &pb.Obj{Id: ia.id})
	if err := ia.c.done(r, err); err != nil {
		return nil, err
	}
	z := &proxyPZ{}
	ia.c.register(z, ia, r.Id, api.HandlePZ)
	return z, nil
}

func (ia *proxyIA) CreateEVD(qlen int, cno api.CNO, flags api.EVDFlags) (api.EVD, error) {
	if err := ia.live(); err != nil {
		return nil, err
	}
	hc, err := ia.cnoArg(cno)
	if err != nil {
		return nil, err
	}
	r, err := ia.c.rpc.CreateEVD(bg, &pb.CreateEVDReq{Ia: ia.id, Qlen: int64(qlen), Flags: uint32(flags)})
	if err := ia.c.done(r, err); err != nil {
		return nil, err
	}
	e := newHEVD(flags, qlen)
	ia.c.register(e, ia, r.Id, api.HandleEVD)
	e.setCNO(hc)
	return e, nil
}

func (ia *proxyIA) CreateEP(pz api.PZ, recv, req, connect api.EVD, attr *api.EPAttr) (api.EP, error) {
	return ia.createEP(pz, recv, req, connect, nil, false, attr)
}

func (ia *proxyIA) CreateEPWithSRQ(pz api.PZ, recv, req, connect api.EVD, srq api.SRQ, attr *api.EPAttr) (api.EP, error) {
	return ia.createEP(pz, recv, req, connect, srq, true, attr)
}

func (ia *proxyIA) createEP(pz api.PZ, recv, req, connect api.EVD, srq api.SRQ, withSRQ bool, attr *api.EPAttr) (api.EP, error) {
	if err := ia.live(); err != nil {
		return nil, err
	}
	r, err := ia.c.rpc.CreateEP(bg, &pb.CreateEPReq{Ia: ia.id, Pz: idOf(pz), RecvEvd: idOf(recv), RequestEvd: idOf(req),
		ConnectEvd: idOf(connect), WithSrq: withSRQ, Srq: idOf(srq), Attr: epAttrToPB(attr)})
	if err := ia.c.done(r, err); err != nil {
		return nil, err
	}
	e := &proxyEP{}
	e.t.recvEVD, _ = recv.(*proxyEVD)
	e.t.reqEVD, _ = req.(*proxyEVD)
	e.t.cnEVD, _ = connect.(*proxyEVD)
	e.t.srq, _ = srq.(*proxySRQ)
	ia.c.register(e, ia, r.Id, api.HandleEP)
	return e, nil
}

func (ia *proxyIA) CreatePSP(q api.ConnQual, evd api.EVD, flags api.PSPFlags) (api.PSP, error) {
	p, _, err := ia.createPSP(false, q, evd, flags)
	return p, err
}

func (ia *proxyIA) CreatePSPAny(evd api.EVD, flags api.PSPFlags) (api.PSP, api.ConnQual, error) {
	return ia.createPSP(true, 0, evd, flags)
}

func (ia *proxyIA) createPSP(anyQ bool, q api.ConnQual, evd api.EVD, flags api.PSPFlags) (api.PSP, api.ConnQual, error) {
	if err := ia.live(); err != nil {
		return nil, 0, err
	}
	r, err := ia.c.rpc.CreatePSP(bg, &pb.CreatePSPReq{Ia: ia.id, Any: anyQ, ConnQual: uint64(q), Evd: idOf(evd), Flags: uint32(flags)})
	if err := ia.c.done(r, err); err != nil {
		return nil, 0, err
	}
	p := &proxyPSP{}
	ia.c.register(p, ia, r.Id, api.HandlePSP)
	return p, api.ConnQual(r.ConnQual), nil
}

func (ia *proxyIA) CreateRSP(q api.ConnQual, ep api.EP, evd api.EVD) (api.RSP, error) {
	if err := ia.live(); err != nil {
		return nil, err
	}
	r, err := ia.c.rpc.CreateRSP(bg, &pb.CreateRSPReq{Ia: ia.id, ConnQual: uint64(q), Ep: idOf(ep), Evd: idOf(evd)})
	if err := ia.c.done(r, err); err != nil {
		return nil, err
	}
	p := &proxyRSP{}
	ia.c.register(p, ia, r.Id, api.HandleRSP)
	return p, nil
}

// errNotShareable is the answer to LMR memory the plugin cannot see.
func errNotShareable(what string) error {
	return api.Errorf(api.InvalidParameter, api.SubArg3, what+": a plugin provider runs in another process and can only register memory from api.AllocMemory, which it shares by file descriptor; allocate the buffer with api.AllocMemory")
}

// CreateLMR shares the AllocMemory region behind region.Bytes with the
// plugin (once per region) and registers the bytes there
// (dat_lmr_create(3DAT)). Memory of any other origin is
// ErrInvalidParameter naming api.AllocMemory.
func (ia *proxyIA) CreateLMR(pz api.PZ, region api.Region, priv api.MemPriv, va api.VAType) (api.LMR, error) {
	if err := ia.live(); err != nil {
		return nil, err
	}
	req := &pb.CreateLMRReq{Ia: ia.id, Pz: idOf(pz), MemType: uint32(region.Type), Priv: uint32(priv), VaType: uint32(va)}
	var mem *api.Memory
	switch region.Type {
	case api.MemTypeLMR:
		req.Lmr = idOf(region.LMR)
	default:
		if len(region.Bytes) == 0 {
			return nil, api.Errorf(api.InvalidParameter, api.SubArg3, "the region to register is empty")
		}
		m, off, ok := api.MemoryOf(region.Bytes)
		if !ok {
			return nil, errNotShareable("the LMR's memory is not from api.AllocMemory")
		}
		id, err := ia.c.share(m)
		if err != nil {
			return nil, err
		}
		mem = m
		req.Mem, req.Offset, req.Length = id, off, uint64(len(region.Bytes))
	}
	r, err := ia.c.rpc.CreateLMR(bg, req)
	if err := ia.c.done(r, err); err != nil {
		ia.c.unshare(mem)
		return nil, err
	}
	l := &proxyLMR{mem: mem}
	ia.c.register(l, ia, r.Id, api.HandleLMR)
	return l, nil
}

func (ia *proxyIA) CreateSRQ(pz api.PZ, attr api.SRQAttr) (api.SRQ, error) {
	if err := ia.live(); err != nil {
		return nil, err
	}
	r, err := ia.c.rpc.CreateSRQ(bg, &pb.CreateSRQReq{Ia: ia.id, Pz: idOf(pz), MaxRecvDtos: int64(attr.MaxRecvDTOs),
		MaxRecvIov: int64(attr.MaxRecvIOV), LowWatermark: int64(attr.LowWatermark)})
	if err := ia.c.done(r, err); err != nil {
		return nil, err
	}
	s := &proxySRQ{}
	ia.c.register(s, ia, r.Id, api.HandleSRQ)
	return s, nil
}

func (ia *proxyIA) SyncRDMARead(segs []api.LMRTriplet) error  { return ia.sync(segs, false) }
func (ia *proxyIA) SyncRDMAWrite(segs []api.LMRTriplet) error { return ia.sync(segs, true) }

func (ia *proxyIA) sync(segs []api.LMRTriplet, write bool) error {
	if err := ia.live(); err != nil {
		return err
	}
	r, err := ia.c.rpc.SyncRDMA(bg, &pb.SyncReq{Ia: ia.id, Write: write, Segs: lmrTripletsToPB(segs)})
	return ia.c.done(r, err)
}

// free frees object o in the plugin and forgets its proxy.
func (c *runningPlugin) free(o proxy) error {
	b := o.base()
	if err := b.live(); err != nil {
		return err
	}
	r, err := c.rpc.Free(bg, &pb.Obj{Id: b.id})
	if err := c.done(r, err); err != nil {
		return err
	}
	c.forget(o)
	return nil
}

// query fetches the parameters of o.
func (c *runningPlugin) query(o proxy) (*pb.QueryResp, error) {
	b := o.base()
	if err := b.live(); err != nil {
		return nil, err
	}
	r, err := c.rpc.Query(bg, &pb.Obj{Id: b.id})
	if err := c.done(r, err); err != nil {
		return nil, err
	}
	return r, nil
}

// --- PZ ---

type proxyPZ struct{ proxyBase }

func (z *proxyPZ) Query() (api.PZParam, error) {
	if err := z.live(); err != nil {
		return api.PZParam{}, err
	}
	return api.PZParam{IA: z.ia}, nil
}

func (z *proxyPZ) CreateRMR() (api.RMR, error) {
	if err := z.live(); err != nil {
		return nil, err
	}
	r, err := z.c.rpc.CreateRMR(bg, &pb.Obj{Id: z.id})
	if err := z.c.done(r, err); err != nil {
		return nil, err
	}
	m := &proxyRMR{}
	z.c.register(m, z.ia, r.Id, api.HandleRMR)
	return m, nil
}

func (z *proxyPZ) Free() error { return z.c.free(z) }

// --- EVD and CNO ---

// proxyEVD is an EVD: the plugin's EVD feeds this host queue.
type proxyEVD struct {
	proxyBase
	dispatch.QueueControl // Q, the host-side event queue
	flags                 api.EVDFlags
	mu                    sync.Mutex // cno, resize
	cno                   *proxyCNO
}

func newHEVD(flags api.EVDFlags, qlen int) *proxyEVD {
	e := &proxyEVD{flags: flags}
	e.Q = eventq.New(qlen, e)
	return e
}

// post queues an event; an overflow is reported once per episode on the
// IA's async EVD, as a provider's own EVD would.
func (e *proxyEVD) post(ev *api.Event, notify bool) {
	if e.Q.Post(ev, notify) == eventq.OverflowBegan {
		if a := e.ia.async; a != nil && a != e {
			ov := api.Event{Number: api.AsyncEVDOverflowEvent, Async: api.AsyncErrorData{Object: e, Reason: api.ReasonEVDOverflow}}
			a.Q.Post(&ov, true)
		}
	}
}

func (e *proxyEVD) Query() (api.EVDParam, error) {
	if e.freed.Load() {
		return api.EVDParam{}, api.Errorf(api.InvalidHandle, api.SubHandleEVDRequest, "EVD was freed")
	}
	p := api.EVDParam{IA: e.ia, QLen: e.Q.Cap(), State: e.Q.State(), Flags: e.flags}
	e.mu.Lock()
	if e.cno != nil {
		p.CNO = e.cno
	}
	e.mu.Unlock()
	return p, nil
}

func (e *proxyEVD) Resize(qlen int) error {
	if err := e.live(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	old := e.Q.Cap()
	if err := e.Q.Resize(qlen); err != nil {
		return err
	}
	r, err := e.c.rpc.ResizeEVD(bg, &pb.ResizeReq{Id: e.id, N: int64(qlen)})
	if err := e.c.done(r, err); err != nil {
		e.Q.Resize(old)
		return err
	}
	return nil
}

var errNoSoftEVD = api.Errorf(api.InvalidParameter, api.SubArg1, "the EVD was not created with the software event stream flag")

// PostSE queues a software event on the host queue; it never reaches the
// plugin (dat_evd_post_se(3DAT)).
func (e *proxyEVD) PostSE(ev *api.Event) error {
	if e.freed.Load() {
		return api.Errorf(api.InvalidHandle, api.SubHandleEVDRequest, "EVD was freed")
	}
	if e.flags&api.EVDSoftware == 0 {
		return errNoSoftEVD
	}
	if ev == nil {
		return api.Errorf(api.InvalidParameter, api.SubArg2, "event pointer is nil")
	}
	se := api.Event{Number: api.SoftwareEvent, Software: ev.Software}
	return e.Q.PostSE(&se)
}

// Dequeue takes the first event (dat_evd_dequeue(3DAT)). When the queue is
// empty but the completion ring holds records, it delivers them itself
// first: polling needs neither a system call nor the pump.
func (e *proxyEVD) Dequeue(ev *api.Event) error {
	if ev == nil {
		return api.Errorf(api.InvalidParameter, api.SubArg2, "event pointer is nil")
	}
	err := e.Q.Dequeue(ev)
	if err == nil || !e.c.cqWaiting() {
		return err
	}
	e.c.consumeCQ()
	return e.Q.Dequeue(ev)
}

func (e *proxyEVD) Wait(ctx context.Context, threshold int, ev *api.Event) (int, error) {
	if ev == nil || ctx == nil {
		return 0, api.Errorf(api.InvalidParameter, api.NoSubtype, "nil context or event pointer")
	}
	if e.c.cqWaiting() {
		e.c.consumeCQ()
	}
	return e.Q.Wait(ctx, threshold, ev)
}

func (e *proxyEVD) ModifyCNO(cno api.CNO) error {
	if e.freed.Load() {
		return api.Errorf(api.InvalidHandle, api.SubHandleEVDRequest, "EVD was freed")
	}
	hc, err := e.ia.cnoArg(cno)
	if err != nil {
		return err
	}
	e.setCNO(hc)
	return nil
}

// setCNO attaches c (nil detaches); a CNO left without EVDs releases its
// waiters, as dat_cno_wait(3DAT) says.
func (e *proxyEVD) setCNO(c *proxyCNO) {
	e.mu.Lock()
	old := e.cno
	e.cno = c
	e.mu.Unlock()
	if old == c {
		return
	}
	if c != nil {
		c.evds.Add(1)
		e.Q.SetCNO(c.c)
	} else {
		e.Q.SetCNO(nil)
	}
	if old != nil && old.evds.Add(-1) == 0 {
		old.c.ReleaseWaiters()
	}
}

func (e *proxyEVD) Free() error {
	if e == e.ia.async {
		return api.Errorf(api.InvalidState, api.SubStateEVDInUse, "the async EVD belongs to the IA")
	}
	if err := e.c.free(e); err != nil {
		return err
	}
	e.setCNO(nil)
	e.Q.Close()
	return nil
}

// proxyCNO is a CNO; it lives on the host only.
type proxyCNO struct {
	api.ContextSlot
	ia    *proxyIA
	c     *eventq.CNO
	evds  atomic.Int32
	freed atomic.Bool
}

func (c *proxyCNO) HandleType() api.HandleType { return api.HandleCNO }

func (ia *proxyIA) CreateCNO(agent api.WaitAgent) (api.CNO, error) {
	if err := ia.live(); err != nil {
		return nil, err
	}
	c, err := ia.addCNO(eventq.NewCNO(agent))
	if err != nil {
		return nil, err
	}
	return c, nil
}

// CreateCNOFD creates a CNO with a file descriptor (dat_cno_fd_create,
// DAT 2.0) on the host, like every CNO of a plugin IA.
func (ia *proxyIA) CreateCNOFD() (api.CNO, int, error) {
	if err := ia.live(); err != nil {
		return nil, -1, err
	}
	n, err := eventq.NewFDCNO(nil)
	if err != nil {
		return nil, -1, err
	}
	c, err := ia.addCNO(n)
	if err != nil {
		return nil, -1, err
	}
	return c, n.FD(), nil
}

// addCNO records a new CNO of the IA over n. An IA torn down meanwhile
// (a Close racing the create) gets ErrInvalidHandle, and n is closed, so
// that its descriptor does not outlive the IA.
func (ia *proxyIA) addCNO(n *eventq.CNO) (*proxyCNO, error) {
	c := &proxyCNO{ia: ia, c: n}
	ia.cnoMu.Lock()
	defer ia.cnoMu.Unlock()
	if ia.cnosDone {
		n.Close()
		return nil, api.Errorf(api.InvalidHandle, api.SubHandleIA, "the IA closed")
	}
	ia.cnos = append(ia.cnos, c)
	return c, nil
}

func (ia *proxyIA) cnoArg(x api.CNO) (*proxyCNO, error) {
	if x == nil {
		return nil, nil
	}
	c, ok := x.(*proxyCNO)
	if !ok || c == nil || c.freed.Load() || c.ia != ia {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandleCNO, "not a live CNO of this IA")
	}
	return c, nil
}

func (c *proxyCNO) Query() (api.CNOParam, error) {
	if c.freed.Load() {
		return api.CNOParam{}, api.Errorf(api.InvalidHandle, api.SubHandleCNO, "CNO was freed")
	}
	return api.CNOParam{IA: c.ia, Agent: c.c.Agent()}, nil
}

func (c *proxyCNO) ModifyAgent(agent api.WaitAgent) error {
	if c.freed.Load() {
		return api.Errorf(api.InvalidHandle, api.SubHandleCNO, "CNO was freed")
	}
	c.c.SetAgent(agent)
	return nil
}

func (c *proxyCNO) Wait(ctx context.Context) (api.EVD, error) {
	if ctx == nil {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg2, "context is nil")
	}
	return c.c.Wait(ctx)
}

func (c *proxyCNO) Triggered() (api.EVD, error) {
	if c.freed.Load() {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandleCNO, "CNO was freed")
	}
	return c.c.Collect(), nil
}

func (c *proxyCNO) Free() error {
	if c.freed.Load() {
		return api.Errorf(api.InvalidHandle, api.SubHandleCNO, "CNO was freed")
	}
	if c.evds.Load() > 0 || c.c.Waiters() > 0 {
		return api.Errorf(api.InvalidState, api.SubStateCNOInUse, "an EVD feeds the CNO or a goroutine waits on it")
	}
	c.freed.Store(true)
	c.c.Close()
	ia := c.ia
	ia.cnoMu.Lock()
	for i, x := range ia.cnos {
		if x == c {
			ia.cnos = append(ia.cnos[:i], ia.cnos[i+1:]...)
			break
		}
	}
	ia.cnoMu.Unlock()
	c.c.WaitIdle()
	return nil
}

// --- EP ---

type proxyEP struct {
	proxyBase
	made bool // the provider created it for a connection request
	t    epTrack
}

func (e *proxyEP) Query() (api.EPParam, error) {
	r, err := e.c.query(e)
	if err != nil {
		return api.EPParam{}, err
	}
	q := r.Ep
	if q == nil {
		return api.EPParam{}, api.Errorf(api.InternalError, api.NoSubtype, "the plugin returned no EP parameters")
	}
	p := api.EPParam{IA: e.ia, State: api.EPState(q.State), LocalAddr: addrFromPB(q.LocalAddr), LocalPortQual: api.ConnQual(q.LocalPortQual),
		RemoteAddr: addrFromPB(q.RemoteAddr), RemotePortQual: api.ConnQual(q.RemotePortQual), PZ: e.c.pzOf(q.Pz),
		RecvEVD: e.c.evdOf(q.RecvEvd), RequestEVD: e.c.evdOf(q.RequestEvd), ConnectEVD: e.c.evdOf(q.ConnectEvd), SRQ: e.c.srqOf(q.Srq)}
	if a := epAttrFromPB(q.Attr); a != nil {
		p.Attr = *a
	}
	e.t.mu.Lock()
	e.t.maxReq, e.t.maxRecv = p.Attr.MaxRequestDTOs, p.Attr.MaxRecvDTOs
	e.t.mu.Unlock()
	return p, nil
}

func (e *proxyEP) Modify(mask api.EPParamMask, p *api.EPParam) error {
	if err := e.live(); err != nil {
		return err
	}
	if p == nil {
		return api.Errorf(api.InvalidParameter, api.SubArg3, "EP parameters are nil")
	}
	q := &pb.EPParam{State: uint32(p.State), LocalAddr: addrToPB(p.LocalAddr), LocalPortQual: uint64(p.LocalPortQual),
		RemoteAddr: addrToPB(p.RemoteAddr), RemotePortQual: uint64(p.RemotePortQual), Pz: idOf(p.PZ),
		RecvEvd: idOf(p.RecvEVD), RequestEvd: idOf(p.RequestEVD), ConnectEvd: idOf(p.ConnectEVD), Srq: idOf(p.SRQ),
		Attr: epAttrToPB(&p.Attr)}
	r, err := e.c.rpc.ModifyEP(bg, &pb.ModifyEPReq{Ep: e.id, Mask: uint64(mask), Param: q})
	if err := e.c.done(r, err); err != nil {
		return err
	}
	e.t.mu.Lock()
	if mask&api.EPFieldRecvEVD != 0 {
		e.t.recvEVD, _ = p.RecvEVD.(*proxyEVD)
	}
	if mask&api.EPFieldRequestEVD != 0 {
		e.t.reqEVD, _ = p.RequestEVD.(*proxyEVD)
	}
	if mask&api.EPFieldConnectEVD != 0 {
		e.t.cnEVD, _ = p.ConnectEVD.(*proxyEVD)
	}
	e.t.mu.Unlock()
	return nil
}

func (e *proxyEP) GetStatus() (api.EPState, bool, bool, error) {
	if err := e.live(); err != nil {
		return 0, false, false, err
	}
	r, err := e.c.rpc.EPStatus(bg, &pb.Obj{Id: e.id})
	if err := e.c.done(r, err); err != nil {
		return 0, false, false, err
	}
	return api.EPState(r.State), r.RecvIdle, r.RequestIdle, nil
}

func (e *proxyEP) Connect(remote net.Addr, q api.ConnQual, timeout api.Timeout, pd []byte, qos api.QOS, flags api.ConnectFlags) error {
	if err := e.live(); err != nil {
		return err
	}
	e.setConnecting()
	r, err := e.c.rpc.Connect(bg, &pb.ConnectReq{Ep: e.id, Remote: addrToPB(remote), ConnQual: uint64(q), TimeoutNs: int64(timeout),
		PrivateData: pd, Qos: uint32(qos), Flags: uint32(flags)})
	return e.afterConnect(e.c.done(r, err))
}

// afterConnect undoes setConnecting when the call failed; a connection
// that was refused at once also leaves the EP where it was.
func (e *proxyEP) afterConnect(err error) error {
	if err != nil {
		e.t.mu.Lock()
		e.t.inConn = false
		e.t.mu.Unlock()
	}
	return err
}

func (e *proxyEP) DupConnect(dup api.EP, timeout api.Timeout, pd []byte, qos api.QOS) error {
	if err := e.live(); err != nil {
		return err
	}
	d := idOf(dup)
	if d == 0 {
		return badHandle("the duplicate EP")
	}
	e.setConnecting()
	r, err := e.c.rpc.Connect(bg, &pb.ConnectReq{Ep: e.id, Dup: d, TimeoutNs: int64(timeout), PrivateData: pd, Qos: uint32(qos)})
	return e.afterConnect(e.c.done(r, err))
}

func (e *proxyEP) Disconnect(flags api.CloseFlags) error {
	if err := e.live(); err != nil {
		return err
	}
	e.t.mu.Lock()
	e.t.established = false
	e.t.mu.Unlock()
	r, err := e.c.rpc.Disconnect(bg, &pb.CloseReq{Id: e.id, Flags: uint32(flags)})
	return e.c.done(r, err)
}

func (e *proxyEP) Reset() error {
	if err := e.live(); err != nil {
		return err
	}
	e.t.mu.Lock()
	e.t.established = false
	e.t.mu.Unlock()
	r, err := e.c.rpc.ResetEP(bg, &pb.Obj{Id: e.id})
	return e.c.done(r, err)
}

func (e *proxyEP) Free() error { return e.c.free(e) }

// post records the DTO as outstanding and posts it: through the
// submission ring when the EP is connected and surely within its limits
// (the provider then has no reason to refuse it), else by a call that
// returns the provider's answer. A queue full of suppressed requests is
// not surely within its limits: their successes bring no event, so only
// the provider knows whether they are done. If the plugin dies while the post is under way,
// the post counts as accepted: the DTO completes flushed like everything
// else outstanding.
func (e *proxyEP) post(s *submission, op api.DTOOp) error {
	if err := e.live(); err != nil {
		return err
	}
	t := &e.t
	recv := isRecv(op)
	t.mu.Lock()
	q, limit := &t.reqs, t.maxReq
	if recv {
		q, limit = &t.recvs, t.maxRecv
	}
	suppressed := api.CompletionFlags(s.flags)&api.CompletionSuppress != 0
	tok, sure := q.add(api.Cookie(s.cookie), op, nil, suppressed, limit)
	r := e.c.ringsP.Load()
	fast := r != nil && t.established && len(s.iov) <= sqMaxIOV && sure && q.r.Len() <= limit
	t.mu.Unlock()
	if fast {
		s.ep = e.id
		_, ok := r.submit(s, e.c.dead.Load)
		if ok {
			wakeIf(r.u32(offSQSleeping), e.c.sqBell)
		}
		if e.c.dead.Load() {
			// The plugin may have died before taking it: wait for the
			// crash to be dealt with, then flush what is left.
			<-e.c.crashDone
			e.flush()
			return nil
		}
		if ok {
			return nil
		}
		// The ring stayed full: post by a call instead.
	}
	req := &pb.PostReq{Id: e.id, Op: uint32(op), Iov: lmrTripletsToPB(s.iov), Cookie: s.cookie, Flags: s.flags,
		Remote: rmrTripletToPB(s.remote)}
	switch s.kind {
	case subSendInv:
		req.WithInvalidate, req.Invalidate, req.InvalidateRmr = true, s.invalidate, uint32(s.invRMR)
	case subReadToRMR:
		req.LocalRmr, req.ToRmr, req.Iov = rmrTripletToPB(s.local), true, nil
	}
	resp, err := e.c.rpc.Post(bg, req)
	if err != nil && e.c.lostDuring(err) {
		e.flush()
		return nil
	}
	if err := e.c.done(resp, err); err != nil {
		t.mu.Lock()
		q.failed(tok)
		t.mu.Unlock()
		return err
	}
	return nil
}

func (e *proxyEP) PostSend(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) error {
	s := submission{kind: subSend, flags: uint32(flags), cookie: uint64(cookie), iov: iov}
	return e.post(&s, api.OpSend)
}

func (e *proxyEP) PostSendWithInvalidate(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags, invalidate bool, rmr api.RMRContext) error {
	s := submission{kind: subSendInv, flags: uint32(flags), cookie: uint64(cookie), iov: iov, invalidate: invalidate, invRMR: rmr}
	return e.post(&s, api.OpSend)
}

func (e *proxyEP) PostRecv(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) error {
	s := submission{kind: subRecv, flags: uint32(flags), cookie: uint64(cookie), iov: iov}
	return e.post(&s, api.OpReceive)
}

func (e *proxyEP) PostRDMAWrite(iov []api.LMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	s := submission{kind: subWrite, flags: uint32(flags), cookie: uint64(cookie), iov: iov, remote: remote}
	return e.post(&s, api.OpRDMAWrite)
}

func (e *proxyEP) PostRDMARead(iov []api.LMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	s := submission{kind: subRead, flags: uint32(flags), cookie: uint64(cookie), iov: iov, remote: remote}
	return e.post(&s, api.OpRDMARead)
}

func (e *proxyEP) PostRDMAReadToRMR(local api.RMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	s := submission{kind: subReadToRMR, flags: uint32(flags), cookie: uint64(cookie), local: local, remote: remote}
	return e.post(&s, api.OpRDMARead)
}

func (e *proxyEP) RecvQuery() (int, int, error) {
	if err := e.live(); err != nil {
		return 0, 0, err
	}
	r, err := e.c.rpc.RecvQuery(bg, &pb.Obj{Id: e.id})
	if err := e.c.done(r, err); err != nil {
		return 0, 0, err
	}
	return int(r.NbufsAllocated), int(r.BufsAllocSpan), nil
}

func (e *proxyEP) SetWatermark(soft, hard int) error {
	if err := e.live(); err != nil {
		return err
	}
	r, err := e.c.rpc.SetWatermark(bg, &pb.WatermarkReq{Ep: e.id, Soft: int64(soft), Hard: int64(hard)})
	return e.c.done(r, err)
}

// --- PSP, RSP, CR ---

type proxyPSP struct{ proxyBase }

func (s *proxyPSP) Query() (api.PSPParam, error) {
	r, err := s.c.query(s)
	if err != nil {
		return api.PSPParam{}, err
	}
	q := r.Psp
	if q == nil {
		return api.PSPParam{}, api.Errorf(api.InternalError, api.NoSubtype, "the plugin returned no PSP parameters")
	}
	return api.PSPParam{IA: s.ia, ConnQual: api.ConnQual(q.ConnQual), EVD: s.c.evdOf(q.Evd), Flags: api.PSPFlags(q.Flags)}, nil
}

func (s *proxyPSP) Free() error { return s.c.free(s) }

type proxyRSP struct{ proxyBase }

func (s *proxyRSP) Query() (api.RSPParam, error) {
	r, err := s.c.query(s)
	if err != nil {
		return api.RSPParam{}, err
	}
	q := r.Rsp
	if q == nil {
		return api.RSPParam{}, api.Errorf(api.InternalError, api.NoSubtype, "the plugin returned no RSP parameters")
	}
	return api.RSPParam{IA: s.ia, ConnQual: api.ConnQual(q.ConnQual), EVD: s.c.evdOf(q.Evd), EP: s.c.epOf(q.Ep, s.ia)}, nil
}

func (s *proxyRSP) Free() error { return s.c.free(s) }

type proxyCR struct{ proxyBase }

func (r *proxyCR) Query() (api.CRParam, error) {
	resp, err := r.c.query(r)
	if err != nil {
		return api.CRParam{}, err
	}
	q := resp.Cr
	if q == nil {
		return api.CRParam{}, api.Errorf(api.InternalError, api.NoSubtype, "the plugin returned no CR parameters")
	}
	return api.CRParam{RemoteAddr: addrFromPB(q.RemoteAddr), RemotePortQual: api.ConnQual(q.RemotePortQual),
		PrivateData: q.PrivateData, LocalEP: r.c.epOf(q.LocalEp, r.ia)}, nil
}

// localMade returns the proxy of the CR's provider-made local EP, if any.
func (r *proxyCR) localMade() *proxyEP {
	resp, err := r.c.query(r)
	if err != nil || resp.Cr == nil {
		return nil
	}
	if e := r.c.proxyEPOf(resp.Cr.LocalEp, r.ia); e != nil && e.made {
		return e
	}
	return nil
}

// proxyCR's Accept marks the EP that takes the connection as connecting, so
// that a crash before ESTABLISHED still breaks it.

func (r *proxyCR) Accept(ep api.EP, pd []byte) error {
	if err := r.live(); err != nil {
		return err
	}
	he, _ := ep.(*proxyEP)
	if he == nil {
		he = r.localMade()
	}
	resp, err := r.c.rpc.Accept(bg, &pb.CRReq{Cr: r.id, Ep: idOf(ep), PrivateData: pd})
	if err := r.c.done(resp, err); err != nil {
		return err
	}
	r.c.forget(r)
	if he != nil {
		he.setConnecting()
	}
	return nil
}

func (r *proxyCR) Reject(pd []byte) error {
	if err := r.live(); err != nil {
		return err
	}
	local := r.localMade()
	resp, err := r.c.rpc.Reject(bg, &pb.CRReq{Cr: r.id, PrivateData: pd})
	if err := r.c.done(resp, err); err != nil {
		return err
	}
	r.c.forget(r)
	if local != nil {
		r.c.forget(local)
	}
	return nil
}

func (r *proxyCR) Handoff(q api.ConnQual) error {
	if err := r.live(); err != nil {
		return err
	}
	local := r.localMade()
	resp, err := r.c.rpc.Handoff(bg, &pb.CRReq{Cr: r.id, ConnQual: uint64(q)})
	if err := r.c.done(resp, err); err != nil {
		return err
	}
	r.c.forget(r)
	if local != nil {
		r.c.forget(local)
	}
	return nil
}

// --- LMR, RMR, SRQ ---

type proxyLMR struct {
	proxyBase
	mem *api.Memory // the shared region; nil for MemTypeLMR
}

func (l *proxyLMR) Query() (api.LMRParam, error) {
	r, err := l.c.query(l)
	if err != nil {
		return api.LMRParam{}, err
	}
	q := r.Lmr
	if q == nil {
		return api.LMRParam{}, api.Errorf(api.InternalError, api.NoSubtype, "the plugin returned no LMR parameters")
	}
	return api.LMRParam{IA: l.ia, MemType: api.MemType(q.MemType), Length: q.Length, PZ: l.c.pzOf(q.Pz), Priv: api.MemPriv(q.Priv),
		VAType: api.VAType(q.VaType), LMRContext: api.LMRContext(q.LmrContext), RMRContext: api.RMRContext(q.RmrContext),
		RegisteredSize: q.RegisteredSize, RegisteredAddress: api.VAddr(q.RegisteredAddress)}, nil
}

func (l *proxyLMR) Free() error {
	if err := l.c.free(l); err != nil {
		return err
	}
	l.c.unshare(l.mem)
	return nil
}

type proxyRMR struct {
	proxyBase
	mu    sync.Mutex
	binds []*proxyEP // EPs of the outstanding binds, oldest first
}

func (m *proxyRMR) Query() (api.RMRParam, error) {
	r, err := m.c.query(m)
	if err != nil {
		return api.RMRParam{}, err
	}
	q := r.Rmr
	if q == nil {
		return api.RMRParam{}, api.Errorf(api.InternalError, api.NoSubtype, "the plugin returned no RMR parameters")
	}
	return api.RMRParam{IA: m.ia, PZ: m.c.pzOf(q.Pz), LMRTriplet: lmrTripletFromPB(q.LmrTriplet), Priv: api.MemPriv(q.Priv),
		RMRContext: api.RMRContext(q.RmrContext), Scope: api.RMRScope(q.Scope), VAType: api.VAType(q.VaType)}, nil
}

func (m *proxyRMR) Bind(lmr api.LMR, t api.LMRTriplet, priv api.MemPriv, va api.VAType, ep api.EP, cookie api.Cookie, flags api.CompletionFlags) (api.RMRContext, error) {
	if err := m.live(); err != nil {
		return 0, err
	}
	he, _ := ep.(*proxyEP)
	var tok uint64
	if he != nil {
		he.t.mu.Lock()
		tok, _ = he.t.reqs.add(cookie, api.OpBindMW, m, flags&api.CompletionSuppress != 0, he.t.maxReq)
		he.t.mu.Unlock()
		m.mu.Lock()
		m.binds = append(m.binds, he)
		m.mu.Unlock()
	}
	r, err := m.c.rpc.Bind(bg, &pb.BindReq{Rmr: m.id, Lmr: idOf(lmr), Triplet: lmrTripletToPB(t), Priv: uint32(priv),
		VaType: uint32(va), Ep: idOf(ep), Cookie: uint64(cookie), Flags: uint32(flags)})
	if err := m.c.done(r, err); err != nil {
		if he != nil && !m.c.dead.Load() {
			he.t.mu.Lock()
			he.t.reqs.failed(tok)
			he.t.mu.Unlock()
			m.mu.Lock()
			for i := len(m.binds) - 1; i >= 0; i-- {
				if m.binds[i] == he {
					m.binds = append(m.binds[:i], m.binds[i+1:]...)
					break
				}
			}
			m.mu.Unlock()
		}
		return 0, err
	}
	return api.RMRContext(r.RmrContext), nil
}

func (m *proxyRMR) Free() error { return m.c.free(m) }

type proxySRQ struct {
	proxyBase
	mu    sync.Mutex
	recvs workQueue
}

func (s *proxySRQ) Query() (api.SRQParam, error) {
	r, err := s.c.query(s)
	if err != nil {
		return api.SRQParam{}, err
	}
	q := r.Srq
	if q == nil {
		return api.SRQParam{}, api.Errorf(api.InternalError, api.NoSubtype, "the plugin returned no SRQ parameters")
	}
	return api.SRQParam{IA: s.ia, State: api.SRQState(q.State), PZ: s.c.pzOf(q.Pz), MaxRecvDTOs: int(q.MaxRecvDtos),
		MaxRecvIOV: int(q.MaxRecvIov), LowWatermark: int(q.LowWatermark), AvailableDTOCount: int(q.AvailableDtoCount),
		OutstandingDTOCount: int(q.OutstandingDtoCount)}, nil
}

func (s *proxySRQ) PostRecv(iov []api.LMRTriplet, cookie api.Cookie) error {
	if err := s.live(); err != nil {
		return err
	}
	s.mu.Lock()
	tok, _ := s.recvs.add(cookie, api.OpReceive, nil, false, 0)
	s.mu.Unlock()
	r, err := s.c.rpc.Post(bg, &pb.PostReq{Id: s.id, Srq: true, Op: uint32(api.OpReceive), Iov: lmrTripletsToPB(iov), Cookie: uint64(cookie)})
	if err := s.c.done(r, err); err != nil {
		s.mu.Lock()
		s.recvs.failed(tok)
		s.mu.Unlock()
		return err
	}
	return nil
}

func (s *proxySRQ) Resize(n int) error {
	if err := s.live(); err != nil {
		return err
	}
	r, err := s.c.rpc.ResizeSRQ(bg, &pb.ResizeReq{Id: s.id, N: int64(n)})
	return s.c.done(r, err)
}

func (s *proxySRQ) SetLW(n int) error {
	if err := s.live(); err != nil {
		return err
	}
	r, err := s.c.rpc.SetLW(bg, &pb.ResizeReq{Id: s.id, N: int64(n)})
	return s.c.done(r, err)
}

func (s *proxySRQ) Free() error { return s.c.free(s) }

// cqWaiting reports records on the completion ring that nobody has read.
func (c *runningPlugin) cqWaiting() bool {
	r := c.ringsP.Load()
	return r != nil && r.cqPending()
}
