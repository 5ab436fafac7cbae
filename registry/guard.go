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
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/godat/godat/api"
)

// hdr is the state every guard object shares.
type hdr struct {
	ia    *gIA
	typ   api.HandleType
	id    uint32 // the object's number in its IA, for the trace hook
	freed atomic.Bool
	users atomic.Int32 // objects that use this one (in-use rule on Free)
	cc    api.ContextSlot
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

// release frees guard g: it refuses while other objects use g (inUse names
// the DAT_INVALID_STATE subtype; NoSubtype skips the rule), runs the
// provider's free, then retires the handle.
func release(g guarded, key any, inUse api.Subtype, free func() error) error {
	h := g.header()
	if err := h.live(); err != nil {
		return err
	}
	if inUse != api.NoSubtype && h.users.Load() > 0 {
		return api.Errorf(api.InvalidState, inUse, fmt.Sprintf("%s is still used by %d object(s)", h.typ, h.users.Load()))
	}
	h.ia.enter()
	err := free()
	h.ia.leave()
	if err != nil {
		return err
	}
	h.ia.retire(key, g)
	return nil
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
func own[G guarded](ia *gIA, h any, nilOK bool, sub api.Subtype, what string) (G, error) {
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
// guard type.
func isNil(h any) bool {
	switch v := h.(type) {
	case nil:
		return true
	case *gIA:
		return v == nil
	case *gPZ:
		return v == nil
	case *gEVD:
		return v == nil
	case *gCNO:
		return v == nil
	case *gEP:
		return v == nil
	case *gPSP:
		return v == nil
	case *gRSP:
		return v == nil
	case *gCR:
		return v == nil
	case *gLMR:
		return v == nil
	case *gRMR:
		return v == nil
	case *gSRQ:
		return v == nil
	}
	return false
}

// gIA guards an IA.
type gIA struct {
	hdr
	p      api.IA
	entry  IAEntry
	attr   api.IAAttr
	pattr  api.ProviderAttr
	serial *sync.Mutex // non-nil when the IA is configured non-thread-safe
	hooks  *hooks      // non-nil when the configuration asks for hooks
	nextID atomic.Uint32
	// life admits the calls that create provider objects (beginCreate)
	// while the IA is not closing.
	life    sync.RWMutex
	closing bool     // under life: a Close is under way or done
	objs    sync.Map // provider object → guard object
	async   *gEVD
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
	g := &gIA{p: p, entry: e, attr: attr, pattr: pattr, hooks: hk}
	g.ia, g.typ = g, api.HandleIA
	if !e.ThreadSafe {
		g.serial = new(sync.Mutex)
	}
	g.objs.Store(any(p), g)
	g.async = g.adoptEVD(pevd)
	g.async.users.Add(1) // the IA uses it; consumers cannot free it
	return g, nil
}

// beginCreate admits a call that creates provider objects, unless the IA
// is closing (ErrInvalidHandle); the call ends with endCreate once its
// guard is registered. Close waits for the calls admitted and refuses
// later ones, so that no object a provider creates, nor its descriptors
// and goroutines, outlives the IA: a provider's Close cleans up only what
// exists when it runs.
func (ia *gIA) beginCreate() error {
	ia.life.RLock()
	if ia.closing {
		ia.life.RUnlock()
		return freedErr(api.HandleIA)
	}
	return nil
}

func (ia *gIA) endCreate() { ia.life.RUnlock() }

// enter and leave serialize calls for a non-thread-safe IA.
func (ia *gIA) enter() {
	if ia.serial != nil {
		ia.serial.Lock()
	}
}

func (ia *gIA) leave() {
	if ia.serial != nil {
		ia.serial.Unlock()
	}
}

// register records g as the guard of provider object p.
func (ia *gIA) register(p any, g guarded, t api.HandleType) {
	h := g.header()
	h.ia, h.typ, h.id = ia, t, ia.nextID.Add(1)
	ia.objs.Store(p, g)
}

// retire marks g freed and forgets provider object p.
func (ia *gIA) retire(p any, g guarded) {
	g.header().freed.Store(true)
	ia.objs.Delete(p)
}

// guardOf returns the guard of provider object p, or nil.
func (ia *gIA) guardOf(p any) guarded {
	if p == nil {
		return nil
	}
	if g, ok := ia.objs.Load(p); ok {
		return g.(guarded)
	}
	return nil
}

// The as* helpers translate provider objects into guards, adopting objects
// the provider created on its own (an EP for a provider-flagged PSP, a CR).

func (ia *gIA) asPZ(p api.PZ) api.PZ {
	if g, ok := ia.guardOf(p).(*gPZ); ok {
		return g
	}
	return nil
}

func (ia *gIA) asEVD(p api.EVD) api.EVD {
	if g, ok := ia.guardOf(p).(*gEVD); ok {
		return g
	}
	return nil
}

func (ia *gIA) asCNO(p api.CNO) api.CNO {
	if g, ok := ia.guardOf(p).(*gCNO); ok {
		return g
	}
	return nil
}

func (ia *gIA) asSRQ(p api.SRQ) api.SRQ {
	if g, ok := ia.guardOf(p).(*gSRQ); ok {
		return g
	}
	return nil
}

func (ia *gIA) asIA(p api.IA) api.IA {
	if p == nil {
		return nil
	}
	return ia
}

func (ia *gIA) asEP(p api.EP) api.EP {
	if g := ia.epOf(p); g != nil {
		return g
	}
	return nil
}

func (ia *gIA) epOf(p api.EP) *gEP {
	if p == nil {
		return nil
	}
	if g, ok := ia.guardOf(p).(*gEP); ok {
		return g
	}
	return ia.adoptEP(p)
}

func (ia *gIA) asRMR(p api.RMR) api.RMR {
	if g, ok := ia.guardOf(p).(*gRMR); ok {
		return g
	}
	return nil
}

func (ia *gIA) asObject(p api.Object) api.Object {
	if g, ok := ia.guardOf(p).(api.Object); ok {
		return g
	}
	return nil
}

// adoptEVD wraps a provider EVD and caches its queue length.
func (ia *gIA) adoptEVD(p api.EVD) *gEVD {
	g := &gEVD{p: p}
	if prm, err := p.Query(); err == nil {
		g.qlen.Store(int64(prm.QLen))
		g.flags = prm.Flags
	}
	ia.register(p, g, api.HandleEVD)
	return g
}

// translate rewrites the provider objects in a dequeued event into guards.
func (ia *gIA) translate(ev *api.Event, evd *gEVD) {
	ev.EVD = evd
	switch ev.Number.Stream() {
	case api.EVDDTO:
		ev.DTO.EP = evd.dtoEP(ev.DTO.EP)
	case api.EVDRMRBind:
		ev.RMRBind.RMR = ia.asRMR(ev.RMRBind.RMR)
	case api.EVDConnection:
		ev.Conn.EP = ia.asEP(ev.Conn.EP)
	case api.EVDAsync:
		ev.Async.Object = ia.asObject(ev.Async.Object)
	case api.EVDCR:
		providerEP := false
		if g, ok := ia.guardOf(ev.CR.PSP).(*gPSP); ok {
			ev.CR.PSP, providerEP = g, g.flags == api.PSPProvider
		} else {
			ev.CR.PSP = nil
		}
		if g, ok := ia.guardOf(ev.CR.RSP).(*gRSP); ok {
			ev.CR.RSP = g
		} else {
			ev.CR.RSP = nil
		}
		ev.CR.CR = ia.adoptCR(ev.CR.CR, providerEP)
	}
}

// adoptCR wraps a CR the provider created for a connection request;
// providerEP says that it arrived on a PSPProvider service point, whose
// EP returns to the provider if the request is rejected or handed off.
func (ia *gIA) adoptCR(p api.CR, providerEP bool) api.CR {
	if p == nil {
		return nil
	}
	if g, ok := ia.guardOf(p).(*gCR); ok {
		return g
	}
	g := &gCR{p: p, providerEP: providerEP}
	g.ia, g.typ, g.id = ia, api.HandleCR, ia.nextID.Add(1)
	if actual, loaded := ia.objs.LoadOrStore(any(p), g); loaded {
		return actual.(*gCR)
	}
	return g
}

// adoptEP wraps an EP the provider created itself (PSPProvider), with the
// same bookkeeping as an EP the consumer created.
func (ia *gIA) adoptEP(p api.EP) *gEP {
	prm, err := p.Query()
	if err != nil {
		return nil
	}
	g := &gEP{p: p}
	g.ia, g.typ, g.id = ia, api.HandleEP, ia.nextID.Add(1)
	g.pz, _ = ia.guardOf(prm.PZ).(*gPZ)
	g.recv, _ = ia.guardOf(prm.RecvEVD).(*gEVD)
	g.req, _ = ia.guardOf(prm.RequestEVD).(*gEVD)
	g.conn, _ = ia.guardOf(prm.ConnectEVD).(*gEVD)
	g.srq, _ = ia.guardOf(prm.SRQ).(*gSRQ)
	g.setLimits(prm.Attr)
	if actual, loaded := ia.objs.LoadOrStore(any(p), g); loaded {
		return actual.(*gEP)
	}
	g.use(1)
	return g
}

// checkPrivateData enforces the provider's private data limit.
func (ia *gIA) checkPrivateData(pd []byte, sub api.Subtype) error {
	if len(pd) > ia.pattr.MaxPrivateDataSize {
		return api.Errorf(api.InvalidParameter, sub,
			fmt.Sprintf("private data of %d bytes exceeds the provider limit of %d", len(pd), ia.pattr.MaxPrivateDataSize))
	}
	return nil
}

// checkTimeout rejects negative timeouts other than TimeoutInfinite.
func checkTimeout(t api.Timeout, sub api.Subtype) error {
	if t < 0 && t != api.TimeoutInfinite {
		return api.Errorf(api.InvalidParameter, sub, fmt.Sprintf("timeout %v is negative and not TimeoutInfinite", t))
	}
	return nil
}

// --- api.IA ---

// Query returns the provider's attributes with the adapter name set to the
// IA name the consumer opened, as dat_ia_query(3DAT) defines it.
func (ia *gIA) Query() (_ api.IAAttr, _ api.ProviderAttr, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIAQuery, &ia.hdr, h.start(opIAQuery), &err)
	}
	if err := ia.live(); err != nil {
		return api.IAAttr{}, api.ProviderAttr{}, err
	}
	ia.enter()
	attr, pattr, err := ia.p.Query()
	ia.leave()
	if err == nil {
		attr.AdapterName = ia.entry.Name
	}
	return attr, pattr, err
}

func (ia *gIA) AsyncEVD() (_ api.EVD, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIAAsyncEVD, &ia.hdr, h.start(opIAAsyncEVD), &err)
	}
	if err := ia.live(); err != nil {
		return nil, err
	}
	return ia.async, nil
}

func (ia *gIA) Close(flags api.CloseFlags) (err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIAClose, &ia.hdr, h.start(opIAClose), &err)
	}
	if err := ia.live(); err != nil {
		return err
	}
	if flags != api.CloseAbrupt && flags != api.CloseGraceful {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("close flags %#x are neither abrupt nor graceful", uint32(flags)))
	}
	// No create reaches the provider from here on, and those under way
	// end first: a provider's Close cleans up what exists when it runs.
	ia.life.Lock()
	if ia.closing {
		ia.life.Unlock()
		return freedErr(api.HandleIA)
	}
	ia.closing = true
	ia.life.Unlock()
	ia.enter()
	err = ia.p.Close(flags)
	ia.leave()
	if err != nil {
		ia.life.Lock()
		ia.closing = false // (a graceful Close refused: the IA lives on)
		ia.life.Unlock()
		return err
	}
	if !ia.freed.CompareAndSwap(false, true) {
		return freedErr(api.HandleIA)
	}
	ia.objs.Range(func(k, v any) bool {
		v.(guarded).header().freed.Store(true)
		ia.objs.Delete(k)
		return true
	})
	return nil
}

func (ia *gIA) CreatePZ() (_ api.PZ, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreatePZ, &ia.hdr, h.start(opIACreatePZ), &err)
	}
	if err := ia.live(); err != nil {
		return nil, err
	}
	if err := ia.beginCreate(); err != nil {
		return nil, err
	}
	defer ia.endCreate()
	ia.enter()
	p, err := ia.p.CreatePZ()
	ia.leave()
	if err != nil {
		return nil, err
	}
	g := &gPZ{p: p}
	ia.register(p, g, api.HandlePZ)
	return g, nil
}

func (ia *gIA) CreateEVD(qlen int, cno api.CNO, flags api.EVDFlags) (_ api.EVD, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreateEVD, &ia.hdr, h.start(opIACreateEVD), &err)
	}
	if err := ia.live(); err != nil {
		return nil, err
	}
	if err := ia.beginCreate(); err != nil {
		return nil, err
	}
	defer ia.endCreate()
	if qlen <= 0 || (ia.attr.MaxEVDQLen > 0 && qlen > ia.attr.MaxEVDQLen) {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg2,
			fmt.Sprintf("EVD queue length %d outside 1..%d", qlen, ia.attr.MaxEVDQLen))
	}
	const known = api.EVDSoftware | api.EVDCR | api.EVDDTO | api.EVDConnection | api.EVDRMRBind | api.EVDAsync
	if flags == 0 || flags&^known != 0 {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg4, fmt.Sprintf("EVD flags %#x are empty or unknown", uint32(flags)))
	}
	gc, err := own[*gCNO](ia, cno, true, api.SubHandleCNO, "CNO")
	if err != nil {
		return nil, err
	}
	var pc api.CNO
	if gc != nil {
		pc = gc.p
	}
	ia.enter()
	p, err := ia.p.CreateEVD(qlen, pc, flags)
	ia.leave()
	if err != nil {
		return nil, err
	}
	g := ia.adoptEVD(p)
	g.cno.Store(gc)
	if gc != nil {
		gc.users.Add(1)
	}
	return g, nil
}

func (ia *gIA) CreateCNO(agent api.WaitAgent) (_ api.CNO, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreateCNO, &ia.hdr, h.start(opIACreateCNO), &err)
	}
	if err := ia.live(); err != nil {
		return nil, err
	}
	if err := ia.beginCreate(); err != nil {
		return nil, err
	}
	defer ia.endCreate()
	ia.enter()
	p, err := ia.p.CreateCNO(ia.wrapAgent(agent))
	ia.leave()
	if err != nil {
		return nil, err
	}
	g := &gCNO{p: p}
	g.agent.Store(&agent)
	ia.register(p, g, api.HandleCNO)
	return g, nil
}

func (ia *gIA) CreateCNOFD() (_ api.CNO, _ int, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreateCNOFD, &ia.hdr, h.start(opIACreateCNOFD), &err)
	}
	if err := ia.live(); err != nil {
		return nil, -1, err
	}
	if err := ia.beginCreate(); err != nil {
		return nil, -1, err
	}
	defer ia.endCreate()
	ia.enter()
	p, fd, err := ia.p.CreateCNOFD()
	ia.leave()
	if err != nil {
		return nil, -1, err
	}
	g := &gCNO{p: p}
	var none api.WaitAgent
	g.agent.Store(&none)
	ia.register(p, g, api.HandleCNO)
	return g, fd, nil
}

// wrapAgent makes a provider-facing agent that hands the consumer's agent
// the guard of the EVD that triggered.
func (ia *gIA) wrapAgent(agent api.WaitAgent) api.WaitAgent {
	if agent == nil {
		return nil
	}
	return func(evd api.EVD) { agent(ia.asEVD(evd)) }
}

func (ia *gIA) CreateEP(pz api.PZ, recvEVD, requestEVD, connectEVD api.EVD, attr *api.EPAttr) (_ api.EP, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreateEP, &ia.hdr, h.start(opIACreateEP), &err)
	}
	return ia.createEP(pz, recvEVD, requestEVD, connectEVD, nil, false, attr)
}

func (ia *gIA) CreateEPWithSRQ(pz api.PZ, recvEVD, requestEVD, connectEVD api.EVD, srq api.SRQ, attr *api.EPAttr) (_ api.EP, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreateEPSRQ, &ia.hdr, h.start(opIACreateEPSRQ), &err)
	}
	return ia.createEP(pz, recvEVD, requestEVD, connectEVD, srq, true, attr)
}

// evdFor checks an EVD argument and that it accepts the stream need.
func (ia *gIA) evdFor(h api.EVD, need api.EVDFlags, sub api.Subtype, what string) (*gEVD, error) {
	g, err := own[*gEVD](ia, h, true, sub, what)
	if err != nil || g == nil {
		return g, err
	}
	if g.flags&need == 0 {
		return nil, api.Errorf(api.InvalidHandle, sub, fmt.Sprintf("%s was not created with the %s stream flag", what, streamName(need)))
	}
	return g, nil
}

func streamName(f api.EVDFlags) string {
	switch f {
	case api.EVDDTO:
		return "DTO"
	case api.EVDConnection:
		return "connection"
	case api.EVDCR:
		return "connection-request"
	}
	return fmt.Sprintf("%#x", uint32(f))
}

func (ia *gIA) createEP(pz api.PZ, recvEVD, requestEVD, connectEVD api.EVD, srq api.SRQ, withSRQ bool, attr *api.EPAttr) (api.EP, error) {
	if err := ia.live(); err != nil {
		return nil, err
	}
	if err := ia.beginCreate(); err != nil {
		return nil, err
	}
	defer ia.endCreate()
	gpz, err := own[*gPZ](ia, pz, false, api.SubHandlePZ, "PZ")
	if err != nil {
		return nil, err
	}
	grecv, err := ia.evdFor(recvEVD, api.EVDDTO, api.SubHandleEVDRecv, "receive EVD")
	if err != nil {
		return nil, err
	}
	greq, err := ia.evdFor(requestEVD, api.EVDDTO, api.SubHandleEVDRequest, "request EVD")
	if err != nil {
		return nil, err
	}
	gconn, err := ia.evdFor(connectEVD, api.EVDConnection, api.SubHandleEVDConn, "connect EVD")
	if err != nil {
		return nil, err
	}
	var gsrq *gSRQ
	if withSRQ {
		if gsrq, err = own[*gSRQ](ia, srq, false, api.SubHandleSRQ, "SRQ"); err != nil {
			return nil, err
		}
		if attr == nil {
			// dat_ep_create_with_srq(3DAT): the attributes are not optional.
			return nil, api.Errorf(api.InvalidParameter, api.SubArg7, "an EP on an SRQ needs attributes")
		}
		if gsrq.pz != gpz && !ia.pattr.SRQEPPZDifferenceSupported {
			return nil, api.Errorf(api.InvalidParameter, api.SubArg6, "the SRQ is in another protection zone and the provider does not support that")
		}
	}
	if attr != nil {
		if err := ia.checkEPAttr(attr); err != nil {
			return nil, err
		}
	}
	ia.enter()
	var p api.EP
	if withSRQ {
		p, err = ia.p.CreateEPWithSRQ(gpz.p, evdP(grecv), evdP(greq), evdP(gconn), gsrq.p, attr)
	} else {
		p, err = ia.p.CreateEP(gpz.p, evdP(grecv), evdP(greq), evdP(gconn), attr)
	}
	ia.leave()
	if err != nil {
		return nil, err
	}
	g := &gEP{p: p, pz: gpz, recv: grecv, req: greq, conn: gconn, srq: gsrq}
	prm, err := p.Query()
	if err != nil {
		p.Free()
		return nil, err
	}
	g.setLimits(prm.Attr)
	ia.register(p, g, api.HandleEP)
	g.use(1)
	return g, nil
}

// checkEPAttr checks EP attributes against the IA's limits
// (dat_ep_create(3DAT), dat_ep_modify(3DAT)).
func (ia *gIA) checkEPAttr(a *api.EPAttr) error {
	bad := func(field string, v, max int) error {
		return api.Errorf(api.InvalidParameter, api.SubArg6, fmt.Sprintf("EP attribute %s = %d outside 0..%d", field, v, max))
	}
	lim := func(field string, v, max int) error {
		if v < 0 || (max > 0 && v > max) {
			return bad(field, v, max)
		}
		return nil
	}
	if a.ServiceType != api.ServiceRC {
		return api.Errorf(api.InvalidParameter, api.SubArg6, "EP service type must be reliable connection")
	}
	for _, c := range []struct {
		f      string
		v, max int
	}{
		{"MaxRecvDTOs", a.MaxRecvDTOs, ia.attr.MaxDTOPerEP},
		{"MaxRequestDTOs", a.MaxRequestDTOs, ia.attr.MaxDTOPerEP},
		{"MaxRecvIOV", a.MaxRecvIOV, ia.attr.MaxIOVSegmentsPerDTO},
		{"MaxRequestIOV", a.MaxRequestIOV, ia.attr.MaxIOVSegmentsPerDTO},
		{"MaxRDMAReadIn", a.MaxRDMAReadIn, ia.attr.MaxRDMAReadPerEPIn},
		{"MaxRDMAReadOut", a.MaxRDMAReadOut, ia.attr.MaxRDMAReadPerEPOut},
		{"MaxRDMAReadIOV", a.MaxRDMAReadIOV, ia.attr.MaxIOVSegmentsPerRDMARead},
		{"MaxRDMAWriteIOV", a.MaxRDMAWriteIOV, ia.attr.MaxIOVSegmentsPerRDMAWrite},
	} {
		if err := lim(c.f, c.v, c.max); err != nil {
			return err
		}
	}
	if ia.attr.MaxMessageSize > 0 && a.MaxMessageSize > ia.attr.MaxMessageSize {
		return api.Errorf(api.InvalidParameter, api.SubArg6, fmt.Sprintf("EP MaxMessageSize %d exceeds the IA limit %d", a.MaxMessageSize, ia.attr.MaxMessageSize))
	}
	if ia.attr.MaxRDMASize > 0 && a.MaxRDMASize > ia.attr.MaxRDMASize {
		return api.Errorf(api.InvalidParameter, api.SubArg6, fmt.Sprintf("EP MaxRDMASize %d exceeds the IA limit %d", a.MaxRDMASize, ia.attr.MaxRDMASize))
	}
	const known = api.CompletionSuppress | api.CompletionSolicitedWait | api.CompletionUnsignalled | api.CompletionBarrierFence | api.CompletionEVDThreshold
	if a.RecvCompletionFlags&^known != 0 || a.RequestCompletionFlags&^known != 0 {
		return api.Errorf(api.InvalidParameter, api.SubArg6, "EP completion flags name unknown bits")
	}
	if a.RecvCompletionFlags&api.CompletionEVDThreshold != 0 && a.RecvCompletionFlags&api.CompletionUnsignalled != 0 {
		return api.Errorf(api.InvalidParameter, api.SubArg6, "receive completion flags may not combine EVD threshold with unsignalled")
	}
	return nil
}

func evdP(g *gEVD) api.EVD {
	if g == nil {
		return nil
	}
	return g.p
}

func (ia *gIA) CreatePSP(q api.ConnQual, evd api.EVD, flags api.PSPFlags) (_ api.PSP, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreatePSP, &ia.hdr, h.start(opIACreatePSP), &err)
	}
	g, err := ia.pspArgs(evd, flags)
	if err != nil {
		return nil, err
	}
	if err := ia.beginCreate(); err != nil {
		return nil, err
	}
	defer ia.endCreate()
	ia.enter()
	p, err := ia.p.CreatePSP(q, g.p, flags)
	ia.leave()
	if err != nil {
		return nil, err
	}
	return ia.newPSP(p, g, flags), nil
}

func (ia *gIA) CreatePSPAny(evd api.EVD, flags api.PSPFlags) (_ api.PSP, _ api.ConnQual, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreatePSPAny, &ia.hdr, h.start(opIACreatePSPAny), &err)
	}
	g, err := ia.pspArgs(evd, flags)
	if err != nil {
		return nil, 0, err
	}
	if err := ia.beginCreate(); err != nil {
		return nil, 0, err
	}
	defer ia.endCreate()
	ia.enter()
	p, q, err := ia.p.CreatePSPAny(g.p, flags)
	ia.leave()
	if err != nil {
		return nil, 0, err
	}
	return ia.newPSP(p, g, flags), q, nil
}

func (ia *gIA) pspArgs(evd api.EVD, flags api.PSPFlags) (*gEVD, error) {
	if err := ia.live(); err != nil {
		return nil, err
	}
	g, err := ia.evdFor(evd, api.EVDCR, api.SubHandleEVDCR, "connection-request EVD")
	if err != nil {
		return nil, err
	}
	if g == nil {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandleEVDCR, "connection-request EVD handle is nil")
	}
	switch flags {
	case api.PSPConsumer:
	case api.PSPProvider:
		if ia.pattr.EPCreator == api.PSPCreatesEPNever {
			return nil, api.Errorf(api.ModelNotSupported, api.NoSubtype, "the provider never creates EPs for PSPs")
		}
	default:
		return nil, api.Errorf(api.InvalidParameter, api.SubArg4, fmt.Sprintf("PSP flags %#x are unknown", uint32(flags)))
	}
	return g, nil
}

func (ia *gIA) newPSP(p api.PSP, evd *gEVD, flags api.PSPFlags) *gPSP {
	g := &gPSP{p: p, evd: evd, flags: flags}
	ia.register(p, g, api.HandlePSP)
	evd.users.Add(1)
	return g
}

func (ia *gIA) CreateRSP(q api.ConnQual, ep api.EP, evd api.EVD) (_ api.RSP, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreateRSP, &ia.hdr, h.start(opIACreateRSP), &err)
	}
	if err := ia.live(); err != nil {
		return nil, err
	}
	if err := ia.beginCreate(); err != nil {
		return nil, err
	}
	defer ia.endCreate()
	gep, err := own[*gEP](ia, ep, false, api.SubHandleEP, "EP")
	if err != nil {
		return nil, err
	}
	gevd, err := ia.evdFor(evd, api.EVDCR, api.SubHandleEVDCR, "connection-request EVD")
	if err != nil {
		return nil, err
	}
	if gevd == nil {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandleEVDCR, "connection-request EVD handle is nil")
	}
	ia.enter()
	p, err := ia.p.CreateRSP(q, gep.p, gevd.p)
	ia.leave()
	if err != nil {
		return nil, err
	}
	g := &gRSP{p: p, evd: gevd}
	ia.register(p, g, api.HandleRSP)
	gevd.users.Add(1)
	return g, nil
}

func (ia *gIA) CreateLMR(pz api.PZ, region api.Region, priv api.MemPriv, va api.VAType) (_ api.LMR, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreateLMR, &ia.hdr, h.start(opIACreateLMR), &err)
	}
	if err := ia.live(); err != nil {
		return nil, err
	}
	if err := ia.beginCreate(); err != nil {
		return nil, err
	}
	defer ia.endCreate()
	gpz, err := own[*gPZ](ia, pz, false, api.SubHandlePZ, "PZ")
	if err != nil {
		return nil, err
	}
	preg := region
	var src *gLMR
	switch region.Type {
	case api.MemTypeVirtual, api.MemTypeSharedVirtual:
		if len(region.Bytes) == 0 {
			return nil, api.Errorf(api.InvalidParameter, api.SubArg3, "the region to register is empty")
		}
		if region.Type == api.MemTypeSharedVirtual {
			if _, _, ok := api.MemoryOf(region.Bytes); !ok {
				return nil, api.Errorf(api.InvalidParameter, api.SubArg3, "shared virtual memory must come from api.AllocMemory")
			}
		}
	case api.MemTypeLMR:
		if src, err = own[*gLMR](ia, region.LMR, false, api.SubHandleLMR, "region LMR"); err != nil {
			return nil, err
		}
		preg.LMR = src.p
	default:
		return nil, api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("memory type %#x is unknown", uint32(region.Type)))
	}
	if priv&^api.MemPrivAll != 0 {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg6, fmt.Sprintf("memory privileges %#x name unknown bits", uint32(priv)))
	}
	switch va {
	case api.VATypeVA:
	case api.VATypeZB:
		if !ia.attr.ZBSupported {
			return nil, api.Errorf(api.ModelNotSupported, api.NoSubtype, "the provider does not support zero-based LMRs")
		}
	default:
		return nil, api.Errorf(api.InvalidParameter, api.SubArg7, fmt.Sprintf("VA type %d is unknown", va))
	}
	ia.enter()
	p, err := ia.p.CreateLMR(gpz.p, preg, priv, va)
	ia.leave()
	if err != nil {
		return nil, err
	}
	g := &gLMR{p: p, pz: gpz, src: src}
	if prm, err := p.Query(); err == nil {
		g.ctx, g.hasCtx = prm.LMRContext, true
	}
	ia.register(p, g, api.HandleLMR)
	gpz.users.Add(1)
	if src != nil {
		src.users.Add(1)
	}
	return g, nil
}

func (ia *gIA) CreateSRQ(pz api.PZ, attr api.SRQAttr) (_ api.SRQ, err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIACreateSRQ, &ia.hdr, h.start(opIACreateSRQ), &err)
	}
	if err := ia.live(); err != nil {
		return nil, err
	}
	if err := ia.beginCreate(); err != nil {
		return nil, err
	}
	defer ia.endCreate()
	gpz, err := own[*gPZ](ia, pz, false, api.SubHandlePZ, "PZ")
	if err != nil {
		return nil, err
	}
	if !ia.pattr.SRQSupported {
		return nil, api.Errorf(api.ModelNotSupported, api.NoSubtype, "the provider does not support shared receive queues")
	}
	if attr.MaxRecvDTOs <= 0 || (ia.attr.MaxRecvPerSRQ > 0 && attr.MaxRecvDTOs > ia.attr.MaxRecvPerSRQ) {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg3, fmt.Sprintf("SRQ MaxRecvDTOs %d outside 1..%d", attr.MaxRecvDTOs, ia.attr.MaxRecvPerSRQ))
	}
	if attr.MaxRecvIOV <= 0 || (ia.attr.MaxIOVSegmentsPerDTO > 0 && attr.MaxRecvIOV > ia.attr.MaxIOVSegmentsPerDTO) {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg3, fmt.Sprintf("SRQ MaxRecvIOV %d outside 1..%d", attr.MaxRecvIOV, ia.attr.MaxIOVSegmentsPerDTO))
	}
	if attr.LowWatermark < 0 || attr.LowWatermark > attr.MaxRecvDTOs {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg3, fmt.Sprintf("SRQ low watermark %d outside 0..%d", attr.LowWatermark, attr.MaxRecvDTOs))
	}
	ia.enter()
	p, err := ia.p.CreateSRQ(gpz.p, attr)
	ia.leave()
	if err != nil {
		return nil, err
	}
	g := &gSRQ{p: p, pz: gpz}
	// The limit is the provider's, which may exceed the one asked for.
	iov := attr.MaxRecvIOV
	if prm, err := p.Query(); err == nil && prm.MaxRecvIOV > iov {
		iov = prm.MaxRecvIOV
	}
	g.maxIOV.Store(int64(iov))
	ia.register(p, g, api.HandleSRQ)
	gpz.users.Add(1)
	return g, nil
}

func (ia *gIA) SyncRDMARead(segs []api.LMRTriplet) (err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIASyncRead, &ia.hdr, h.start(opIASyncRead), &err)
	}
	if err := ia.live(); err != nil {
		return err
	}
	ia.enter()
	defer ia.leave()
	return ia.p.SyncRDMARead(segs)
}

func (ia *gIA) SyncRDMAWrite(segs []api.LMRTriplet) (err error) {
	if h := ia.hooks; h != nil {
		defer h.done(opIASyncWrite, &ia.hdr, h.start(opIASyncWrite), &err)
	}
	if err := ia.live(); err != nil {
		return err
	}
	ia.enter()
	defer ia.leave()
	return ia.p.SyncRDMAWrite(segs)
}
