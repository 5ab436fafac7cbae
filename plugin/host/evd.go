package host

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/godat/godat/api"
	pb "github.com/godat/godat/plugin/proto"
	"github.com/godat/godat/provider/kit/dispatch"
	"github.com/godat/godat/provider/kit/eventq"
)

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
	se := api.Event{Number: api.SoftwareEvent, Software: ev.Software}
	return e.Q.PostSE(&se)
}

// Dequeue takes the first event (dat_evd_dequeue(3DAT)). When the queue is
// empty but the completion ring holds records, it delivers them itself
// first: polling needs neither a system call nor the pump.
func (e *proxyEVD) Dequeue(ev *api.Event) error {
	err := e.Q.Dequeue(ev)
	if err == nil || !e.c.cqWaiting() {
		return err
	}
	e.c.consumeCQ()
	return e.Q.Dequeue(ev)
}

func (e *proxyEVD) Wait(ctx context.Context, threshold int, ev *api.Event) (int, error) {
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
