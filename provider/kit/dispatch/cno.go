package dispatch

import (
	"context"
	"sync"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/eventq"
)

var (
	errCNOFreed   = api.Errorf(api.InvalidHandle, api.SubHandleCNO, "CNO was freed")
	errNotLiveCNO = api.Errorf(api.InvalidHandle, api.SubHandleCNO, "not a live CNO of this IA")
)

// CNOObject is the consumer notification object of a provider
// (dat_cno_create(3DAT)): the api.CNO that the provider hands out, over a
// CNO state. The state and the freed mark are guarded by the provider lock
// the object was made with, the lock that guards the IA's other objects;
// Query and Free take it, ModifyAgent and Wait need none.
type CNOObject struct {
	api.ContextSlot
	// BeforeWait, when the provider sets it (before handing the CNO
	// out), runs at the start of every Wait: a provider that makes
	// progress only when its consumer calls in (tcp's quiet mode) hands
	// its connections back to their own goroutines there.
	BeforeWait func()
	n          CNO
	ia         api.IA
	mu         sync.Locker
	release    func(*CNOObject)
	freed      bool
}

// NewCNOObject returns a CNO of ia with wait agent agent (nil for none);
// with fd set, the CNO also owns a file descriptor (FD), readable while
// it holds a trigger (dat_cno_fd_create, DAT 2.0; see eventq.NewFDCNO),
// whose creation may fail. mu is the provider lock that guards it. A
// successful Free calls release with mu held, for the provider to drop
// the CNO from its IA.
func NewCNOObject(agent api.WaitAgent, fd bool, ia api.IA, mu sync.Locker, release func(*CNOObject)) (*CNOObject, error) {
	var c *eventq.CNO
	if fd {
		var err error
		if c, err = eventq.NewFDCNO(agent); err != nil {
			return nil, err
		}
	} else {
		c = eventq.NewCNO(agent)
	}
	o := &CNOObject{ia: ia, mu: mu, release: release}
	o.n = CNO{C: c, Owner: o}
	return o, nil
}

// CNOResult turns what a provider's CNO constructor returned into the
// results of IA.CreateCNO: a nil interface, not a nil pointer, on error.
func CNOResult(o *CNOObject, err error) (api.CNO, error) {
	if err != nil {
		return nil, err
	}
	return o, nil
}

// FDCNOResult is CNOResult for IA.CreateCNOFD, with the CNO's descriptor
// (-1 on error).
func FDCNOResult(o *CNOObject, err error) (api.CNO, int, error) {
	if err != nil {
		return nil, -1, err
	}
	return o, o.FD(), nil
}

// FD returns the file descriptor of a CNO made with one, -1 for any other
// and once the CNO is freed.
func (o *CNOObject) FD() int { return o.n.C.FD() }

// AsCNO converts the CNO argument x of a call on an object of IA owner
// (dat_evd_create(3DAT), dat_evd_modify_cno(3DAT)) to its state, for
// Attach: nil stays nil; anything but a live CNOObject of owner is
// ErrInvalidHandle (SubHandleCNO). The provider lock of owner is held.
func AsCNO(x api.CNO, owner api.IA) (*CNO, error) {
	if x == nil {
		return nil, nil
	}
	o, ok := x.(*CNOObject)
	// The IA is compared before the freed mark is read: only the lock of
	// the CNO's own IA guards the mark.
	if !ok || o == nil || o.ia != owner || o.freed {
		return nil, errNotLiveCNO
	}
	return &o.n, nil
}

// HandleType reports HandleCNO (dat_get_handle_type(3DAT)).
func (o *CNOObject) HandleType() api.HandleType { return api.HandleCNO }

// Query returns the IA and the wait agent of the CNO (dat_cno_query(3DAT));
// ErrInvalidHandle once it is freed.
func (o *CNOObject) Query() (api.CNOParam, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.freed {
		return api.CNOParam{}, errCNOFreed
	}
	return api.CNOParam{IA: o.ia, Agent: o.n.C.Agent()}, nil
}

// ModifyAgent sets the wait agent, nil for none
// (dat_cno_modify_agent(3DAT)). The agent runs on a goroutine of the
// CNO's, once a trigger, with the EVD that triggered; its calls never
// overlap.
func (o *CNOObject) ModifyAgent(agent api.WaitAgent) error {
	o.n.C.SetAgent(agent)
	return nil
}

// Wait blocks until an enabled EVD that feeds the CNO, and has no waiter
// of its own, gets a notification event, and returns that EVD
// (dat_cno_wait(3DAT)). When the IA closes or the last EVD stops feeding
// the CNO it returns (nil, nil); the end of ctx is ErrTimeoutExpired for a
// deadline, ErrInterruptedCall for a cancel. A nil ctx is
// ErrInvalidParameter.
func (o *CNOObject) Wait(ctx context.Context) (api.EVD, error) {
	if o.BeforeWait != nil {
		o.BeforeWait()
	}
	return o.n.Wait(ctx)
}

// State returns the CNO state EVDs attached to o point to (what AsCNO
// gives and Attach takes), for a provider to find the EVDs that feed it.
func (o *CNOObject) State() *CNO { return &o.n }

// Triggered collects the CNO's latched trigger without waiting
// (dat_cno_trigger, DAT 2.0): the EVD that triggered it last, or nil; see
// eventq.CNO.Collect. ErrInvalidHandle once it is freed.
func (o *CNOObject) Triggered() (api.EVD, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.freed {
		return nil, errCNOFreed
	}
	return o.n.C.Collect(), nil
}

// Free destroys the CNO (dat_cno_free(3DAT)). While an EVD feeds it or a
// goroutine waits on it, it is ErrInvalidState (SubStateCNOInUse); a
// second Free is ErrInvalidHandle. It returns once no agent call runs, so
// the agent itself must not call it.
func (o *CNOObject) Free() error {
	o.mu.Lock()
	if o.freed {
		o.mu.Unlock()
		return errCNOFreed
	}
	if err := o.n.Free(); err != nil {
		o.mu.Unlock()
		return err
	}
	o.freed = true
	if o.release != nil {
		o.release(o)
	}
	o.mu.Unlock()
	// The agent may need the provider lock: wait for it without the lock.
	o.n.C.WaitIdle()
	return nil
}

// Close destroys the CNO along with its IA (dat_ia_close(3DAT)): its
// waiters return (nil, nil) and it counts as freed from then on. The
// provider lock is held; once it has released the lock, the provider
// calls WaitIdle.
func (o *CNOObject) Close() {
	o.freed = true
	o.n.C.Close()
}

// WaitIdle returns once no call of the wait agent runs. The caller holds
// no lock that the agent may need.
func (o *CNOObject) WaitIdle() { o.n.C.WaitIdle() }

// CNOs is the table of an IA's CNOs, with the two calls that make them
// (dat_cno_create(3DAT), dat_cno_fd_create). A provider keeps one in its
// IA, made with NewCNOs, and answers IA.CreateCNO and IA.CreateCNOFD with
// Create and CreateFD. Its IA's Close calls CloseAll. The table is
// guarded by the provider lock; Create and CreateFD take it.
type CNOs struct {
	kit.Set[*CNOObject]
	ia     api.IA
	mu     sync.Locker
	closed bool
	// Prepare, when set, runs under the provider lock on each new CNO
	// before it is handed out (to set BeforeWait, say).
	Prepare func(*CNOObject)
}

// NewCNOs returns an empty table of the CNOs of ia, at most limit of them
// (0: no limit); mu is the lock that guards the IA's objects.
func NewCNOs(ia api.IA, mu sync.Locker, limit int) CNOs {
	return CNOs{Set: kit.NewSet[*CNOObject](api.HandleCNO, limit), ia: ia, mu: mu}
}

// Create makes a CNO with wait agent agent, nil for none.
func (t *CNOs) Create(agent api.WaitAgent) (api.CNO, error) {
	return CNOResult(t.create(agent, false))
}

// CreateFD makes a CNO without agent that owns a file descriptor,
// readable while it holds a trigger (see NewCNOObject).
func (t *CNOs) CreateFD() (api.CNO, int, error) { return FDCNOResult(t.create(nil, true)) }

func (t *CNOs) create(agent api.WaitAgent, fd bool) (*CNOObject, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	// (The guard refuses creates once Close has begun; this is for callers
	// without it: no descriptor may outlive the IA.)
	if t.closed {
		return nil, kit.ErrIAClosed
	}
	if err := t.Room(); err != nil {
		return nil, err
	}
	c, err := NewCNOObject(agent, fd, t.ia, t.mu, func(c *CNOObject) { t.Remove(c) })
	if err != nil {
		return nil, err
	}
	if t.Prepare != nil {
		t.Prepare(c)
	}
	t.Add(c)
	return c, nil
}

// CloseAll closes every CNO along with the IA (see CNOObject.Close),
// empties the table and refuses new CNOs. The provider lock is held; once
// it has released it, the provider calls the function CloseAll returns,
// which waits for the CNOs' agents.
func (t *CNOs) CloseAll() (waitIdle func()) {
	t.closed = true
	var cnos []*CNOObject
	for c := range t.All() {
		c.Close()
		cnos = append(cnos, c)
	}
	t.Clear()
	return func() {
		for _, c := range cnos {
			c.WaitIdle()
		}
	}
}
