package registry

// The guard layer. Every object a provider returns is wrapped in a guard
// object of this file's family, which implements the same api interface
// and holds what all providers share (DESIGN §3, package api's doc):
// handle lifetime, the argument checks the DAT pages define, same-IA and
// same-PZ ownership, in-use rules on free, serialization of non-thread-safe
// providers, the translation of provider objects in events and query
// results back into the consumer's handles, and the counting and tracing
// hooks the configuration switches on (hooks.go).
//
// Each guard knows its IA and its provider object. The IA keeps a map from
// provider objects to their guards; it is read on the dequeue path (a
// lock-free sync.Map load), written only when objects are created or freed.

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/godat/godat/api"
)

// hdr is the state every guard object shares.
type hdr struct {
	ia    *iaGuard
	typ   api.HandleType
	id    uint64 // the object's number, unique in the process (name)
	freed atomic.Bool
	users userSet // objects that use this one (in-use rule on Free)
	cc    api.ContextSlot
}

// userSet records which objects use an object: the in-use rule of Free
// asks whether there are any, and its error names them. A user holds one
// count per reference (an EP whose three queues report to one EVD holds
// three) and is named once. It changes only when objects are created,
// modified or freed, never on the data path.
type userSet struct {
	mu sync.Mutex
	by map[*hdr]int32
}

// add adds delta references by user u.
func (s *userSet) add(u *hdr, delta int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = make(map[*hdr]int32)
	}
	if n := s.by[u] + delta; n > 0 {
		s.by[u] = n
	} else {
		delete(s.by, u)
	}
}

// list returns the users, oldest first.
func (s *userSet) list() []*hdr {
	s.mu.Lock()
	l := make([]*hdr, 0, len(s.by))
	for u := range s.by {
		l = append(l, u)
	}
	s.mu.Unlock()
	return sortHandles(l)
}

// sortHandles sorts l by handle number, which is creation order, and
// returns it.
func sortHandles(l []*hdr) []*hdr {
	slices.SortFunc(l, func(a, b *hdr) int { return cmp.Compare(a.id, b.id) })
	return l
}

// names joins the names of l: "EP#5, PSP#7".
func names(l []*hdr) string {
	s := make([]string, len(l))
	for i, h := range l {
		s[i] = h.name()
	}
	return strings.Join(s, ", ")
}

// inUseErr is the error of Free refused because of users, or of a
// graceful IA Close refused because of objects (the IA "has" them):
// DAT_INVALID_STATE with subtype sub, naming the object and the others as
// the trace does. cause, when not nil, is the provider's own refusal,
// whose words and underlying error are kept.
func inUseErr(h *hdr, sub api.Subtype, users []*hdr, cause *api.Error) error {
	verb := "is still used by"
	if h.typ == api.HandleIA {
		verb = "still has"
	}
	msg := h.name()
	if len(users) > 0 {
		msg += fmt.Sprintf(" %s %d object(s): %s", verb, len(users), names(users))
	} else {
		msg += " is still in use"
	}
	e := &api.Error{Type: api.InvalidState, Sub: sub, Msg: msg}
	if cause != nil {
		e.Msg += " (provider: " + cause.Msg + ")"
		e.Cause = cause.Cause
	}
	return e
}

// providerInUse returns the provider's error of type InvalidState and
// subtype sub found in err's chain, or nil.
func providerInUse(err error, sub api.Subtype) *api.Error {
	var de *api.Error
	if sub == api.NoSubtype || !errors.As(err, &de) || de.Type != api.InvalidState || de.Sub != sub {
		return nil
	}
	return de
}

func (h *hdr) header() *hdr { return h }

// HandleType reports the kind of the guarded object (dat_get_handle_type(3DAT)).
func (h *hdr) HandleType() api.HandleType { return h.typ }

// ConsumerContext returns the consumer's value (dat_get_consumer_context(3DAT)).
func (h *hdr) ConsumerContext() (_ any, err error) {
	if hk := h.ia.hooks; hk != nil {
		defer hk.done(opConsumerContext, h, hk.start(opConsumerContext), &err)
	}
	if h.freed.Load() {
		return nil, freedErr(h.typ)
	}
	return h.cc.ConsumerContext()
}

// SetConsumerContext stores the consumer's value (dat_set_consumer_context(3DAT)).
func (h *hdr) SetConsumerContext(v any) (err error) {
	if hk := h.ia.hooks; hk != nil {
		defer hk.done(opSetContext, h, hk.start(opSetContext), &err)
	}
	if h.freed.Load() {
		return freedErr(h.typ)
	}
	return h.cc.SetConsumerContext(v)
}

// live returns ErrInvalidHandle once the object is freed.
func (h *hdr) live() error {
	if h.freed.Load() {
		return freedErr(h.typ)
	}
	return nil
}

// simple is the whole of guard method o whose provider call f takes no
// arguments to check: f runs for a live object, serialized like any call,
// under the IA's hooks.
func (h *hdr) simple(o op, f func() error) (err error) {
	if hk := h.ia.hooks; hk != nil {
		defer hk.done(o, h, hk.start(o), &err)
	}
	if err := h.live(); err != nil {
		return err
	}
	h.ia.enter()
	defer h.ia.leave()
	return f()
}

// free is the whole of guard method o that frees g: release under the
// IA's hooks.
func free(g guarded, o op, key any, inUse api.Subtype, f func() error, uses ...*userSet) (err error) {
	h := g.header()
	if hk := h.ia.hooks; hk != nil {
		defer hk.done(o, h, hk.start(o), &err)
	}
	return release(g, key, inUse, f, uses...)
}

// release frees guard g: it refuses while other objects use g (inUse names
// the DAT_INVALID_STATE subtype; NoSubtype skips the rule), runs the
// provider's free, then retires the handle, and g no longer uses the
// objects whose user sets are in uses. Either refusal names g and the
// users the guard knows (see usedBy).
func release(g guarded, key any, inUse api.Subtype, free func() error, uses ...*userSet) error {
	h := g.header()
	if err := h.live(); err != nil {
		return err
	}
	if inUse != api.NoSubtype {
		if users := h.users.list(); len(users) > 0 {
			return inUseErr(h, inUse, users, nil)
		}
	}
	h.ia.enter()
	err := free()
	h.ia.leave()
	if err != nil {
		if pe := providerInUse(err, inUse); pe != nil {
			return inUseErr(h, inUse, usedBy(g), pe)
		}
		return err
	}
	h.ia.retire(key, g)
	for _, u := range uses {
		u.add(h, -1)
	}
	return nil
}

// usedBy returns the objects that use g as the guard sees them: those
// counted in its user set and, for an LMR, the RMRs bound to it, which
// only the provider tracks (an RMR's Query names the LMR of its window).
// It serves errors, not the in-use rule.
func usedBy(g guarded) []*hdr {
	h := g.header()
	users := h.users.list()
	l, ok := g.(*lmrGuard)
	if !ok || !l.hasCtx {
		return users
	}
	h.ia.objs.Range(func(_, v any) bool {
		r, ok := v.(*rmrGuard)
		if !ok || r.freed.Load() {
			return true
		}
		h.ia.enter()
		prm, err := r.p.Query()
		h.ia.leave()
		if err == nil && prm.LMRTriplet.Length > 0 && prm.LMRTriplet.LMRContext == l.ctx {
			users = append(users, &r.hdr)
		}
		return true
	})
	return sortHandles(users)
}

// guarded is implemented by every guard object.
type guarded interface{ header() *hdr }

// Errors returned on hot paths are built once so that rejecting a call
// allocates nothing either.
var (
	errFreedEP  = api.Errorf(api.InvalidHandle, api.SubHandleEP, "EP was freed")
	errFreedEVD = api.Errorf(api.InvalidHandle, api.SubHandleEVDRequest, "EVD was freed")
	errFreedSRQ = api.Errorf(api.InvalidHandle, api.SubHandleSRQ, "SRQ was freed")
	errNilEvent = api.Errorf(api.InvalidParameter, api.SubArg2, "event pointer is nil")
)

// handleSub maps a handle type to the DAT_INVALID_HANDLE subtype naming it.
var handleSub = [...]api.Subtype{
	api.HandleCR: api.SubHandleCR, api.HandleEP: api.SubHandleEP, api.HandleEVD: api.SubHandleEVDRequest,
	api.HandleIA: api.SubHandleIA, api.HandleLMR: api.SubHandleLMR, api.HandlePSP: api.SubHandlePSP,
	api.HandlePZ: api.SubHandlePZ, api.HandleRMR: api.SubHandleRMR, api.HandleRSP: api.SubHandleRSP,
	api.HandleCNO: api.SubHandleCNO, api.HandleSRQ: api.SubHandleSRQ, api.HandleCSP: api.SubHandleCSP,
}

func freedErr(t api.HandleType) error {
	return api.Errorf(api.InvalidHandle, handleSub[t], t.String()+" handle was freed or its IA closed")
}

// own checks that handle h is a live guard of type G belonging to ia and
// returns it. A nil h is accepted only when nilOK; sub names the argument
// in the error.
func own[G guarded](ia *iaGuard, h any, nilOK bool, sub api.Subtype, what string) (G, error) {
	var zero G
	if isNil(h) {
		if nilOK {
			return zero, nil
		}
		return zero, api.Errorf(api.InvalidHandle, sub, what+" handle is nil")
	}
	g, ok := h.(G)
	if !ok {
		return zero, api.Errorf(api.InvalidHandle, sub, fmt.Sprintf("%s handle %T is not a %s opened through the registry", what, h, what))
	}
	hd := g.header()
	if hd.ia != ia {
		return zero, api.Errorf(api.InvalidHandle, sub, what+" handle belongs to another IA")
	}
	if hd.freed.Load() {
		return zero, api.Errorf(api.InvalidHandle, sub, what+" handle was freed")
	}
	return g, nil
}

// isNil reports whether h is nil or an interface holding a nil pointer of a
// guard type (every type with the guard's header method is a pointer).
func isNil(h any) bool {
	if h == nil {
		return true
	}
	g, ok := h.(guarded)
	return ok && reflect.ValueOf(g).IsNil()
}

// iaGuard guards an IA.
type iaGuard struct {
	hdr
	p      api.IA
	entry  IAEntry
	attr   api.IAAttr
	pattr  api.ProviderAttr
	serial *sync.Mutex // non-nil when the IA is configured non-thread-safe
	hooks  *hooks      // non-nil when the configuration asks for hooks
	// life admits the calls that create provider objects (beginCreate)
	// while the IA is not closing.
	life    sync.RWMutex
	closing bool     // under life: a Close is under way or done
	objs    sync.Map // provider object → guard object
	async   *evdGuard
}

// wrapIA wraps a freshly opened provider IA.
func wrapIA(p api.IA, e IAEntry, hk *hooks) (api.IA, error) {
	attr, pattr, err := p.Query()
	if err != nil {
		p.Close(api.CloseAbrupt)
		return nil, err
	}
	pevd, err := p.AsyncEVD()
	if err != nil {
		p.Close(api.CloseAbrupt)
		return nil, err
	}
	g := &iaGuard{p: p, entry: e, attr: attr, pattr: pattr, hooks: hk}
	g.ia, g.typ, g.id = g, api.HandleIA, nextHandleID.Add(1)
	if !e.ThreadSafe {
		g.serial = new(sync.Mutex)
	}
	g.objs.Store(any(p), g)
	g.async = g.adoptEVD(pevd)
	g.async.users.add(&g.hdr, 1) // the IA uses it; consumers cannot free it
	return g, nil
}

// beginCreate admits a call that creates provider objects, unless the IA
// is closing (ErrInvalidHandle); the call ends with endCreate once its
// guard is registered. Close waits for the calls admitted and refuses
// later ones, so that no object a provider creates, nor its descriptors
// and goroutines, outlives the IA: a provider's Close cleans up only what
// exists when it runs.
func (ia *iaGuard) beginCreate() error {
	ia.life.RLock()
	if ia.closing {
		ia.life.RUnlock()
		return freedErr(api.HandleIA)
	}
	return nil
}

func (ia *iaGuard) endCreate() { ia.life.RUnlock() }

// admitCreate is the start of every IA method that creates an object: the
// IA handle must be live and the IA not closing. On success the caller
// owes an endCreate.
func (ia *iaGuard) admitCreate() error {
	if err := ia.live(); err != nil {
		return err
	}
	return ia.beginCreate()
}

// enter and leave serialize calls for a non-thread-safe IA.
func (ia *iaGuard) enter() {
	if ia.serial != nil {
		ia.serial.Lock()
	}
}

func (ia *iaGuard) leave() {
	if ia.serial != nil {
		ia.serial.Unlock()
	}
}

// register records g as the guard of provider object p.
func (ia *iaGuard) register(p any, g guarded, t api.HandleType) {
	h := g.header()
	h.ia, h.typ, h.id = ia, t, nextHandleID.Add(1)
	ia.objs.Store(p, g)
}

// retire marks g freed and forgets provider object p.
func (ia *iaGuard) retire(p any, g guarded) {
	g.header().freed.Store(true)
	ia.objs.Delete(p)
}

// The as* helpers translate provider objects into guards, adopting objects
// the provider created on its own (an EP for a provider-flagged PSP, a CR).

// --- api.IA ---

// query is the whole of guard method o, a Query: it runs the provider's
// Query q for a live guard, serialized like any call, under the IA's
// hooks, and lets fix translate the provider objects in the result into
// guards.
func query[P any](h *hdr, o op, q func() (P, error), fix func(*P)) (_ P, err error) {
	if hk := h.ia.hooks; hk != nil {
		defer hk.done(o, h, hk.start(o), &err)
	}
	if err := h.live(); err != nil {
		var zero P
		return zero, err
	}
	h.ia.enter()
	prm, err := q()
	h.ia.leave()
	fix(&prm)
	return prm, err
}
