package plugin

// The plugin side: a gRPC server over the vendor's api.Provider. Every
// object the provider returns gets an id in one table; the host names
// objects by these ids. Events are taken out of the provider's EVDs by the
// server itself and streamed to the host (see the package doc, "Events").

import (
	"context"
	"fmt"
	"net"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/godat/godat/api"
	pb "github.com/godat/godat/plugin/proto"
)

// servedObj is one provider object known to the server.
type servedObj struct {
	id  uint64
	typ api.HandleType
	obj any
	ia  *servedIA
	// made says the provider created the object on its own (a CR, the EP
	// of a provider-flagged PSP) rather than on a create call.
	made bool
	mem  uint64 // LMR: the host memory it registers (0 for MemTypeLMR)
}

// servedIA is an open IA with what the server keeps for it.
type servedIA struct {
	id    uint64
	p     api.IA
	cno   api.CNO // the server's own CNO: every provider EVD of the IA feeds it
	cnoID uint64
	async uint64 // the id of the async EVD
}

// servedEVD is a provider EVD the server drains.
type servedEVD struct {
	id uint64
	p  api.EVD
	ia *servedIA
}

type server struct {
	pb.UnimplementedProviderServer
	prov    api.Provider
	name    string
	version string
	addrs   *addrCache
	mem     *pluginMem

	mu     sync.Mutex // the object table
	nextID uint64
	objs   map[uint64]*servedObj
	ids    map[any]uint64

	evMu  sync.Mutex // event order: draining, the completion ring, seq
	evds  map[uint64]*servedEVD
	byEVD map[api.EVD]*servedEVD
	seq   uint64
	rec   event // scratch record, under evMu

	// The shared rings, set up by the host over the control socket
	// before its first call.
	ringsP         atomic.Pointer[rings] // published last
	ringMem        *api.Memory
	sqBell, cqBell *bell
	execMu         sync.Mutex
	execCond       *sync.Cond
	executed       uint64 // submissions executed
}

func newServer(p api.Provider, o *serveOptions, mem *pluginMem) *server {
	return &server{
		prov: p, name: o.name, version: o.version, addrs: newAddrCache(o.parse), mem: mem,
		objs: map[uint64]*servedObj{}, ids: map[any]uint64{},
		evds: map[uint64]*servedEVD{}, byEVD: map[api.EVD]*servedEVD{},
	}
}

// add registers a provider object created by a call and returns its id.
func (s *server) add(obj any, t api.HandleType, ia *servedIA) *servedObj {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(obj, t, ia, false)
}

func (s *server) addLocked(obj any, t api.HandleType, ia *servedIA, made bool) *servedObj {
	s.nextID++
	o := &servedObj{id: s.nextID, typ: t, obj: obj, ia: ia, made: made}
	s.objs[o.id] = o
	s.ids[obj] = o.id
	return o
}

// idOf returns the id of a provider object, registering objects the
// provider made on its own; 0 for nil and for objects of no IA the server
// knows.
func (s *server) idOf(obj any, ia *servedIA) uint64 {
	if obj == nil || isNilObject(obj) {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.ids[obj]; ok {
		return id
	}
	o, ok := obj.(api.Object)
	if !ok || ia == nil {
		return 0
	}
	return s.addLocked(obj, o.HandleType(), ia, true).id
}

// isNilObject reports an interface holding a nil pointer, which providers
// should not return but might.
func isNilObject(obj any) bool {
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// lookup returns the object id names, which must be of type t.
func (s *server) lookup(id uint64, t api.HandleType) (*servedObj, error) {
	s.mu.Lock()
	o := s.objs[id]
	s.mu.Unlock()
	if o == nil || o.typ != t {
		if id == 0 {
			return nil, api.Errorf(api.InvalidHandle, handleSubtype(t), t.String()+" handle is nil")
		}
		return nil, api.Errorf(api.InvalidHandle, handleSubtype(t), fmt.Sprintf("no %s with id %d in the plugin", t, id))
	}
	return o, nil
}

// opt is lookup for arguments that may be nil (id 0).
func (s *server) opt(id uint64, t api.HandleType) (*servedObj, error) {
	if id == 0 {
		return nil, nil
	}
	return s.lookup(id, t)
}

// remove forgets objects.
func (s *server) remove(os ...*servedObj) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range os {
		if o == nil {
			continue
		}
		delete(s.objs, o.id)
		delete(s.ids, o.obj)
	}
}

func handleSubtype(t api.HandleType) api.Subtype {
	switch t {
	case api.HandleIA:
		return api.SubHandleIA
	case api.HandleEP:
		return api.SubHandleEP
	case api.HandleLMR:
		return api.SubHandleLMR
	case api.HandleRMR:
		return api.SubHandleRMR
	case api.HandlePZ:
		return api.SubHandlePZ
	case api.HandlePSP:
		return api.SubHandlePSP
	case api.HandleRSP:
		return api.SubHandleRSP
	case api.HandleCR:
		return api.SubHandleCR
	case api.HandleCNO:
		return api.SubHandleCNO
	case api.HandleEVD:
		return api.SubHandleEVDRequest
	case api.HandleSRQ:
		return api.SubHandleSRQ
	}
	return api.NoSubtype
}

// --- events ---

// attachEVD makes the server drain a provider EVD and hears of its
// notifications through the IA's CNO.
func (s *server) attachEVD(o *servedObj, ia *servedIA) error {
	e := o.obj.(api.EVD)
	if err := e.ModifyCNO(ia.cno); err != nil {
		return err
	}
	s.evMu.Lock()
	se := &servedEVD{id: o.id, p: e, ia: ia}
	s.evds[o.id] = se
	s.byEVD[e] = se
	s.evMu.Unlock()
	return nil
}

// detachEVD stops draining an EVD that is freed or whose IA closed.
func (s *server) detachEVD(id uint64) {
	s.evMu.Lock()
	if se := s.evds[id]; se != nil {
		delete(s.evds, id)
		delete(s.byEVD, se.p)
	}
	s.evMu.Unlock()
}

// drainAll moves every queued event of every EVD to the completion ring
// and returns the sequence number of the last event sent so far.
func (s *server) drainAll() uint64 {
	s.evMu.Lock()
	before := s.seq
	for _, se := range s.evds {
		s.drainLocked(se)
	}
	seq := s.seq
	s.evMu.Unlock()
	if seq != before {
		s.wakeHost()
	}
	return seq
}

// notified is the agent of every IA's CNO: the provider raised a
// notification for evd. The events before it are sent first, then the
// notification, so that the host wakes its waiter with them queued.
func (s *server) notified(evd api.EVD) {
	s.evMu.Lock()
	se := s.byEVD[evd]
	if se == nil {
		s.evMu.Unlock()
		return
	}
	s.drainLocked(se)
	s.seq++
	s.rec = event{seq: s.seq, evd: se.id, notify: true}
	s.putLocked(&s.rec)
	s.evMu.Unlock()
	s.wakeHost()
}

func (s *server) wakeHost() {
	if r := s.ringsP.Load(); r != nil {
		wakeIf(r.u32(offCQSleeping), s.cqBell)
	}
}

// putLocked writes a record to the completion ring. s.evMu is held.
func (s *server) putLocked(e *event) {
	r := s.ringsP.Load()
	if r == nil {
		return // the host set up no rings: it is not listening
	}
	r.put(e, s.wakeHost, func() bool { return true })
}

// drainLocked dequeues every event of se. s.evMu is held.
func (s *server) drainLocked(se *servedEVD) {
	for {
		var ev api.Event
		if err := se.p.Dequeue(&ev); err != nil {
			return
		}
		s.seq++
		s.eventToRec(&ev, se.ia, &s.rec)
		s.rec.seq, s.rec.evd = s.seq, se.id
		s.putLocked(&s.rec)
	}
}

// eventToRec converts a provider event, naming its objects by id.
func (s *server) eventToRec(ev *api.Event, ia *servedIA, r *event) {
	*r = event{number: ev.Number}
	switch ev.Number.Stream() {
	case api.EVDDTO:
		d := &ev.DTO
		r.ep, r.cookie, r.status, r.length, r.op, r.rmrContext =
			s.idOf(d.EP, ia), uint64(d.Cookie), d.Status, d.Length, d.Op, d.RMRContext
	case api.EVDRMRBind:
		b := &ev.RMRBind
		r.rmr, r.cookie, r.status = s.idOf(b.RMR, ia), uint64(b.Cookie), b.Status
	case api.EVDCR:
		c := &ev.CR
		r.psp, r.rsp, r.cr = s.idOf(c.PSP, ia), s.idOf(c.RSP, ia), s.idOf(c.CR, ia)
		r.connQual, r.truncated = uint64(c.ConnQual), c.Truncated
		if a := s.addrs.out(c.LocalAddr); a != nil {
			r.hasAddr, r.network, r.addr = true, a.Network, a.Address
		}
	case api.EVDConnection:
		r.ep, r.privateData, r.hasPrivData = s.idOf(ev.Conn.EP, ia), ev.Conn.PrivateData, ev.Conn.PrivateData != nil
	case api.EVDAsync:
		r.object, r.reason = s.idOf(ev.Async.Object, ia), int32(ev.Async.Reason)
		if ev.Async.Object != nil {
			r.objectType = ev.Async.Object.HandleType()
		}
	}
}

// Watch is the host's way of knowing that the plugin lives: it lasts
// until the host ends it or the process dies. The events themselves go
// through the completion ring.
func (s *server) Watch(_ *pb.WatchReq, stream pb.Provider_WatchServer) error {
	<-stream.Context().Done()
	return nil
}

// attachRings starts the data path on the region and doorbells the host
// sent.
func (s *server) attachRings(m *api.Memory, sq, cq *bell) {
	s.ringMem, s.sqBell, s.cqBell = m, sq, cq
	s.execCond = sync.NewCond(&s.execMu)
	s.ringsP.Store(newRings(m.Bytes()))
	go s.consume()
}

// consumerSpin is how long the consumer keeps looking for submissions
// after its last one before it sleeps on its doorbell: a host that posts
// again within it (a request/response loop) wakes nothing.
const consumerSpin = 50 * time.Microsecond

// consume executes the host's submissions in order, then hands their
// events to the host; it sleeps on its doorbell when there have been none
// for consumerSpin.
func (s *server) consume() {
	r := s.ringsP.Load()
	var sub submission
	sub.iov = make([]api.LMRTriplet, 0, sqMaxIOV)
	var last time.Time
	for {
		n := 0
		for n < 256 && r.take(&sub) {
			s.execute(&sub)
			n++
		}
		if n > 0 {
			s.drainAll()
			s.execMu.Lock()
			s.executed += uint64(n)
			s.execCond.Broadcast()
			s.execMu.Unlock()
			last = time.Now()
			continue
		}
		if time.Since(last) < consumerSpin {
			runtime.Gosched()
			continue
		}
		if err := sleepOn(r.u32(offSQSleeping), func() bool { return r.taken() != r.submitted() }, s.sqBell); err != nil {
			return
		}
	}
}

// execute runs one submission. A post the provider refuses (which the
// host avoids by sending only posts on connected EPs within their limits
// through the ring) completes with DTOErrLocalEP, so that it is not lost.
func (s *server) execute(sub *submission) {
	o, err := s.lookup(sub.ep, api.HandleEP)
	if err != nil {
		return
	}
	ep := o.obj.(api.EP)
	cookie, flags := api.Cookie(sub.cookie), api.CompletionFlags(sub.flags)
	op := api.OpSend
	switch sub.kind {
	case subSend:
		err = ep.PostSend(sub.iov, cookie, flags)
	case subSendInv:
		err = ep.PostSendWithInvalidate(sub.iov, cookie, flags, sub.invalidate, sub.invRMR)
	case subRecv:
		op = api.OpReceive
		err = ep.PostRecv(sub.iov, cookie, flags)
	case subWrite:
		op = api.OpRDMAWrite
		err = ep.PostRDMAWrite(sub.iov, cookie, sub.remote, flags)
	case subRead:
		op = api.OpRDMARead
		err = ep.PostRDMARead(sub.iov, cookie, sub.remote, flags)
	case subReadToRMR:
		op = api.OpRDMARead
		err = ep.PostRDMAReadToRMR(sub.local, cookie, sub.remote, flags)
	}
	if err == nil {
		return
	}
	prm, qerr := ep.Query()
	if qerr != nil {
		return
	}
	evd := prm.RequestEVD
	if op == api.OpReceive {
		evd = prm.RecvEVD
	}
	s.evMu.Lock()
	if se := s.byEVD[evd]; se != nil {
		s.seq++
		s.rec = event{seq: s.seq, evd: se.id, number: api.DTOCompletionEvent, ep: o.id, cookie: sub.cookie,
			status: api.DTOErrLocalEP, op: op}
		s.putLocked(&s.rec)
		s.seq++
		s.rec = event{seq: s.seq, evd: se.id, notify: true}
		s.putLocked(&s.rec)
	}
	s.evMu.Unlock()
}

// fenceInterceptor runs a control call only after the submissions the
// host had made before it (its "godat-sq" metadata) are executed.
func (s *server) fenceInterceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if md, ok := metadata.FromIncomingContext(ctx); ok && s.ringsP.Load() != nil {
		if v := md.Get(fenceKey); len(v) > 0 {
			if n, err := strconv.ParseUint(v[0], 10, 64); err == nil {
				s.execMu.Lock()
				for s.executed < n {
					s.execCond.Wait()
				}
				s.execMu.Unlock()
			}
		}
	}
	return handler(ctx, req)
}

// fenceKey is the metadata key of the submission count a call waits for.
const fenceKey = "godat-sq"

// --- the calls ---

func (s *server) Hello(context.Context, *pb.HelloReq) (*pb.HelloResp, error) {
	return &pb.HelloResp{Name: s.name, Version: s.version, Pid: int64(os.Getpid())}, nil
}

// result builds a Result: the error and the event sequence after the
// call's events are out.
func (s *server) result(err error) (*pb.Result, error) {
	return &pb.Result{Err: errToPB(err), Seq: s.drainAll()}, nil
}

func (s *server) OpenIA(ctx context.Context, r *pb.OpenReq) (*pb.OpenResp, error) {
	ia, err := s.prov.Open(ctx, api.OpenParams{Name: r.Name, Params: r.Params, PlatformParams: r.PlatformParams,
		AsyncEVDQLen: int(r.AsyncEvdQlen), ThreadSafe: r.ThreadSafe})
	if err != nil {
		return &pb.OpenResp{Err: errToPB(err)}, nil
	}
	fail := func(err error) (*pb.OpenResp, error) {
		ia.Close(api.CloseAbrupt)
		return &pb.OpenResp{Err: errToPB(err)}, nil
	}
	attr, pattr, err := ia.Query()
	if err != nil {
		return fail(err)
	}
	async, err := ia.AsyncEVD()
	if err != nil {
		return fail(err)
	}
	aprm, err := async.Query()
	if err != nil {
		return fail(err)
	}
	si := &servedIA{p: ia}
	cno, err := ia.CreateCNO(func(evd api.EVD) { s.notified(evd) })
	if err != nil {
		return fail(fmt.Errorf("the plugin host needs CNOs with a wait agent from the provider (IA.CreateCNO): %w", err))
	}
	si.cno = cno
	o := s.add(ia, api.HandleIA, si)
	si.id = o.id
	si.cnoID = s.add(cno, api.HandleCNO, si).id
	ao := s.add(async, api.HandleEVD, si)
	si.async = ao.id
	if err := s.attachEVD(ao, si); err != nil {
		s.forgetIA(si)
		return fail(err)
	}
	s.addrs.out(attr.Address)
	return &pb.OpenResp{Ia: o.id, AsyncEvd: ao.id, AsyncEvdQlen: int64(aprm.QLen),
		Attr: iaAttrToPB(attr), ProviderAttr: providerAttrToPB(pattr), Seq: s.drainAll()}, nil
}

func (s *server) iaOf(id uint64) (*servedIA, error) {
	o, err := s.lookup(id, api.HandleIA)
	if err != nil {
		return nil, err
	}
	return o.ia, nil
}

func (s *server) QueryIA(_ context.Context, r *pb.Obj) (*pb.IAQueryResp, error) {
	ia, err := s.iaOf(r.Id)
	if err != nil {
		return &pb.IAQueryResp{Err: errToPB(err)}, nil
	}
	attr, pattr, err := ia.p.Query()
	if err != nil {
		return &pb.IAQueryResp{Err: errToPB(err)}, nil
	}
	s.addrs.out(attr.Address)
	return &pb.IAQueryResp{Attr: iaAttrToPB(attr), ProviderAttr: providerAttrToPB(pattr), Seq: s.drainAll()}, nil
}

func (s *server) CloseIA(_ context.Context, r *pb.CloseReq) (*pb.Result, error) {
	ia, err := s.iaOf(r.Id)
	if err != nil {
		return s.result(err)
	}
	if api.CloseFlags(r.Flags) == api.CloseGraceful {
		if err := s.closeGraceful(ia); err != nil {
			return s.result(err)
		}
	} else if err := ia.p.Close(api.CloseFlags(r.Flags)); err != nil {
		return s.result(err)
	}
	seq := s.drainAll()
	s.forgetIA(ia)
	return &pb.Result{Seq: seq}, nil
}

// closeGraceful closes an IA that has no objects but its async EVD. The
// server's own CNO is one more object in the provider's eyes, so it goes
// first; if the provider still refuses (objects the server has not seen
// yet), the CNO comes back.
func (s *server) closeGraceful(ia *servedIA) error {
	s.drainAll()
	if n := s.objectsOf(ia); n > 0 {
		return api.Errorf(api.InvalidState, api.SubStateIAInUse, fmt.Sprintf("the IA still has %d object(s)", n))
	}
	s.mu.Lock()
	async := s.objs[ia.async]
	s.mu.Unlock()
	if async != nil {
		async.obj.(api.EVD).ModifyCNO(nil)
	}
	if err := ia.cno.Free(); err != nil {
		if async != nil {
			async.obj.(api.EVD).ModifyCNO(ia.cno)
		}
		return err
	}
	err := ia.p.Close(api.CloseGraceful)
	if err == nil {
		return nil
	}
	cno, cerr := ia.p.CreateCNO(func(evd api.EVD) { s.notified(evd) })
	if cerr != nil {
		return fmt.Errorf("%w (and the plugin could not restore its CNO: %v)", err, cerr)
	}
	ia.cno = cno
	s.mu.Lock()
	if o := s.objs[ia.cnoID]; o != nil {
		delete(s.ids, o.obj)
		o.obj = cno
		s.ids[cno] = o.id
	}
	var evds []api.EVD
	for _, o := range s.objs {
		if o.ia == ia && o.typ == api.HandleEVD {
			evds = append(evds, o.obj.(api.EVD))
		}
	}
	s.mu.Unlock()
	for _, e := range evds {
		e.ModifyCNO(cno)
	}
	return err
}

// objectsOf counts the objects of ia a consumer made or was given: all but
// the IA, its async EVD and the server's CNO.
func (s *server) objectsOf(ia *servedIA) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, o := range s.objs {
		if o.ia == ia && id != ia.id && id != ia.async && id != ia.cnoID {
			n++
		}
	}
	return n
}

// forgetIA drops every object of a closed IA.
func (s *server) forgetIA(ia *servedIA) {
	s.mu.Lock()
	var evds []uint64
	for id, o := range s.objs {
		if o.ia == ia {
			if o.typ == api.HandleEVD {
				evds = append(evds, id)
			}
			delete(s.objs, id)
			delete(s.ids, o.obj)
		}
	}
	s.mu.Unlock()
	for _, id := range evds {
		s.detachEVD(id)
	}
}

func (s *server) create(obj any, t api.HandleType, ia *servedIA, err error) (*pb.CreateResp, error) {
	if err != nil {
		return &pb.CreateResp{Err: errToPB(err), Seq: s.drainAll()}, nil
	}
	o := s.add(obj, t, ia)
	return &pb.CreateResp{Id: o.id, Seq: s.drainAll()}, nil
}

func (s *server) CreatePZ(_ context.Context, r *pb.Obj) (*pb.CreateResp, error) {
	ia, err := s.iaOf(r.Id)
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	pz, err := ia.p.CreatePZ()
	return s.create(pz, api.HandlePZ, ia, err)
}

func (s *server) CreateEVD(_ context.Context, r *pb.CreateEVDReq) (*pb.CreateResp, error) {
	ia, err := s.iaOf(r.Ia)
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	evd, err := ia.p.CreateEVD(int(r.Qlen), nil, api.EVDFlags(r.Flags))
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	o := s.add(evd, api.HandleEVD, ia)
	if err := s.attachEVD(o, ia); err != nil {
		s.remove(o)
		evd.Free()
		return s.create(nil, 0, nil, err)
	}
	return &pb.CreateResp{Id: o.id, Seq: s.drainAll()}, nil
}

// evdArg and friends look up optional handle arguments.
func (s *server) evdArg(id uint64) (api.EVD, error) {
	o, err := s.opt(id, api.HandleEVD)
	if err != nil || o == nil {
		return nil, err
	}
	return o.obj.(api.EVD), nil
}

func (s *server) epArg(id uint64) (api.EP, error) {
	o, err := s.opt(id, api.HandleEP)
	if err != nil || o == nil {
		return nil, err
	}
	return o.obj.(api.EP), nil
}

func (s *server) pzArg(id uint64) (api.PZ, error) {
	o, err := s.opt(id, api.HandlePZ)
	if err != nil || o == nil {
		return nil, err
	}
	return o.obj.(api.PZ), nil
}

func (s *server) lmrArg(id uint64) (api.LMR, error) {
	o, err := s.opt(id, api.HandleLMR)
	if err != nil || o == nil {
		return nil, err
	}
	return o.obj.(api.LMR), nil
}

func (s *server) srqArg(id uint64) (api.SRQ, error) {
	o, err := s.opt(id, api.HandleSRQ)
	if err != nil || o == nil {
		return nil, err
	}
	return o.obj.(api.SRQ), nil
}

func (s *server) CreateEP(_ context.Context, r *pb.CreateEPReq) (*pb.CreateResp, error) {
	ia, err := s.iaOf(r.Ia)
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	pz, err := s.pzArg(r.Pz)
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	var evds [3]api.EVD
	for i, id := range []uint64{r.RecvEvd, r.RequestEvd, r.ConnectEvd} {
		if evds[i], err = s.evdArg(id); err != nil {
			return s.create(nil, 0, nil, err)
		}
	}
	var ep api.EP
	if r.WithSrq {
		srq, err := s.srqArg(r.Srq)
		if err != nil {
			return s.create(nil, 0, nil, err)
		}
		ep, err = ia.p.CreateEPWithSRQ(pz, evds[0], evds[1], evds[2], srq, epAttrFromPB(r.Attr))
		return s.create(ep, api.HandleEP, ia, err)
	}
	ep, err = ia.p.CreateEP(pz, evds[0], evds[1], evds[2], epAttrFromPB(r.Attr))
	return s.create(ep, api.HandleEP, ia, err)
}

func (s *server) CreatePSP(_ context.Context, r *pb.CreatePSPReq) (*pb.CreateResp, error) {
	ia, err := s.iaOf(r.Ia)
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	evd, err := s.evdArg(r.Evd)
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	if r.Any {
		psp, q, err := ia.p.CreatePSPAny(evd, api.PSPFlags(r.Flags))
		resp, _ := s.create(psp, api.HandlePSP, ia, err)
		resp.ConnQual = uint64(q)
		return resp, nil
	}
	psp, err := ia.p.CreatePSP(api.ConnQual(r.ConnQual), evd, api.PSPFlags(r.Flags))
	return s.create(psp, api.HandlePSP, ia, err)
}

func (s *server) CreateRSP(_ context.Context, r *pb.CreateRSPReq) (*pb.CreateResp, error) {
	ia, err := s.iaOf(r.Ia)
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	ep, err := s.epArg(r.Ep)
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	evd, err := s.evdArg(r.Evd)
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	rsp, err := ia.p.CreateRSP(api.ConnQual(r.ConnQual), ep, evd)
	return s.create(rsp, api.HandleRSP, ia, err)
}

func (s *server) CreateLMR(_ context.Context, r *pb.CreateLMRReq) (*pb.CreateResp, error) {
	ia, err := s.iaOf(r.Ia)
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	pz, err := s.pzArg(r.Pz)
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	region := api.Region{Type: api.MemType(r.MemType)}
	if region.Type == api.MemTypeLMR {
		if region.LMR, err = s.lmrArg(r.Lmr); err != nil {
			return s.create(nil, 0, nil, err)
		}
	} else {
		b, ok := s.mem.get(r.Mem)
		if !ok || r.Offset > uint64(len(b)) || r.Length > uint64(len(b))-r.Offset {
			return s.create(nil, 0, nil, api.Errorf(api.InvalidParameter, api.SubArg3,
				fmt.Sprintf("the plugin has no shared memory %d covering %d bytes at offset %d", r.Mem, r.Length, r.Offset)))
		}
		region.Bytes = b[r.Offset : r.Offset+r.Length : r.Offset+r.Length]
	}
	lmr, err := ia.p.CreateLMR(pz, region, api.MemPriv(r.Priv), api.VAType(r.VaType))
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	o := s.add(lmr, api.HandleLMR, ia)
	o.mem = r.Mem
	return &pb.CreateResp{Id: o.id, Seq: s.drainAll()}, nil
}

func (s *server) CreateSRQ(_ context.Context, r *pb.CreateSRQReq) (*pb.CreateResp, error) {
	ia, err := s.iaOf(r.Ia)
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	pz, err := s.pzArg(r.Pz)
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	srq, err := ia.p.CreateSRQ(pz, api.SRQAttr{MaxRecvDTOs: int(r.MaxRecvDtos), MaxRecvIOV: int(r.MaxRecvIov), LowWatermark: int(r.LowWatermark)})
	return s.create(srq, api.HandleSRQ, ia, err)
}

func (s *server) CreateRMR(_ context.Context, r *pb.Obj) (*pb.CreateResp, error) {
	o, err := s.lookup(r.Id, api.HandlePZ)
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	rmr, err := o.obj.(api.PZ).CreateRMR()
	return s.create(rmr, api.HandleRMR, o.ia, err)
}

func (s *server) SyncRDMA(_ context.Context, r *pb.SyncReq) (*pb.Result, error) {
	ia, err := s.iaOf(r.Ia)
	if err != nil {
		return s.result(err)
	}
	segs := lmrTripletsFromPB(r.Segs)
	if r.Write {
		return s.result(ia.p.SyncRDMAWrite(segs))
	}
	return s.result(ia.p.SyncRDMARead(segs))
}

func (s *server) getObj(id uint64) (*servedObj, error) {
	s.mu.Lock()
	o := s.objs[id]
	s.mu.Unlock()
	if o == nil {
		return nil, api.Errorf(api.InvalidHandle, api.NoSubtype, fmt.Sprintf("no object with id %d in the plugin", id))
	}
	return o, nil
}

func (s *server) Free(_ context.Context, r *pb.Obj) (*pb.Result, error) {
	o, err := s.getObj(r.Id)
	if err != nil {
		return s.result(err)
	}
	var free func() error
	switch x := o.obj.(type) {
	case api.PZ:
		free = x.Free
	case api.EVD:
		free = x.Free
	case api.EP:
		free = x.Free
	case api.PSP:
		free = x.Free
	case api.RSP:
		free = x.Free
	case api.LMR:
		free = x.Free
	case api.RMR:
		free = x.Free
	case api.SRQ:
		free = x.Free
	default:
		return s.result(api.Errorf(api.InvalidHandle, api.NoSubtype, fmt.Sprintf("a %s cannot be freed this way", o.typ)))
	}
	if o.typ == api.HandleEVD {
		// Events queued before the free are the consumer's no longer.
		if err := free(); err != nil {
			return s.result(err)
		}
		s.detachEVD(o.id)
		s.remove(o)
		return s.result(nil)
	}
	if err := free(); err != nil {
		return s.result(err)
	}
	seq := s.drainAll()
	s.remove(o)
	return &pb.Result{Seq: seq}, nil
}

func (s *server) Query(_ context.Context, r *pb.Obj) (*pb.QueryResp, error) {
	o, err := s.getObj(r.Id)
	if err != nil {
		return &pb.QueryResp{Err: errToPB(err)}, nil
	}
	resp := &pb.QueryResp{}
	switch x := o.obj.(type) {
	case api.EP:
		var p api.EPParam
		if p, err = x.Query(); err == nil {
			resp.Ep = &pb.EPParam{State: uint32(p.State), LocalAddr: s.addrs.out(p.LocalAddr), LocalPortQual: uint64(p.LocalPortQual),
				RemoteAddr: s.addrs.out(p.RemoteAddr), RemotePortQual: uint64(p.RemotePortQual), Pz: s.idOf(p.PZ, o.ia),
				RecvEvd: s.idOf(p.RecvEVD, o.ia), RequestEvd: s.idOf(p.RequestEVD, o.ia), ConnectEvd: s.idOf(p.ConnectEVD, o.ia),
				Srq: s.idOf(p.SRQ, o.ia), Attr: epAttrToPB(&p.Attr)}
		}
	case api.LMR:
		var p api.LMRParam
		if p, err = x.Query(); err == nil {
			resp.Lmr = &pb.LMRParam{MemType: uint32(p.MemType), Length: p.Length, Pz: s.idOf(p.PZ, o.ia), Priv: uint32(p.Priv),
				VaType: uint32(p.VAType), LmrContext: uint32(p.LMRContext), RmrContext: uint32(p.RMRContext),
				RegisteredSize: p.RegisteredSize, RegisteredAddress: uint64(p.RegisteredAddress)}
		}
	case api.RMR:
		var p api.RMRParam
		if p, err = x.Query(); err == nil {
			resp.Rmr = &pb.RMRParam{Pz: s.idOf(p.PZ, o.ia), LmrTriplet: lmrTripletToPB(p.LMRTriplet), Priv: uint32(p.Priv),
				RmrContext: uint32(p.RMRContext), Scope: uint32(p.Scope), VaType: uint32(p.VAType)}
		}
	case api.SRQ:
		var p api.SRQParam
		if p, err = x.Query(); err == nil {
			resp.Srq = &pb.SRQParam{State: uint32(p.State), Pz: s.idOf(p.PZ, o.ia), MaxRecvDtos: int64(p.MaxRecvDTOs),
				MaxRecvIov: int64(p.MaxRecvIOV), LowWatermark: int64(p.LowWatermark), AvailableDtoCount: int64(p.AvailableDTOCount),
				OutstandingDtoCount: int64(p.OutstandingDTOCount)}
		}
	case api.PSP:
		var p api.PSPParam
		if p, err = x.Query(); err == nil {
			resp.Psp = &pb.PSPParam{ConnQual: uint64(p.ConnQual), Evd: s.idOf(p.EVD, o.ia), Flags: uint32(p.Flags)}
		}
	case api.RSP:
		var p api.RSPParam
		if p, err = x.Query(); err == nil {
			resp.Rsp = &pb.RSPParam{ConnQual: uint64(p.ConnQual), Evd: s.idOf(p.EVD, o.ia), Ep: s.idOf(p.EP, o.ia)}
		}
	case api.CR:
		var p api.CRParam
		if p, err = x.Query(); err == nil {
			resp.Cr = &pb.CRParam{RemoteAddr: s.addrs.out(p.RemoteAddr), RemotePortQual: uint64(p.RemotePortQual),
				PrivateData: p.PrivateData, LocalEp: s.idOf(p.LocalEP, o.ia)}
		}
	default:
		err = api.Errorf(api.InvalidHandle, api.NoSubtype, fmt.Sprintf("a %s is not queried this way", o.typ))
	}
	resp.Err = errToPB(err)
	return resp, nil
}

func (s *server) ResizeEVD(_ context.Context, r *pb.ResizeReq) (*pb.Result, error) {
	o, err := s.lookup(r.Id, api.HandleEVD)
	if err != nil {
		return s.result(err)
	}
	return s.result(o.obj.(api.EVD).Resize(int(r.N)))
}

func (s *server) ModifyEP(_ context.Context, r *pb.ModifyEPReq) (*pb.Result, error) {
	o, err := s.lookup(r.Ep, api.HandleEP)
	if err != nil {
		return s.result(err)
	}
	var p api.EPParam
	if q := r.Param; q != nil {
		if p.PZ, err = s.pzArg(q.Pz); err != nil {
			return s.result(err)
		}
		for dst, id := range map[*api.EVD]uint64{&p.RecvEVD: q.RecvEvd, &p.RequestEVD: q.RequestEvd, &p.ConnectEVD: q.ConnectEvd} {
			if *dst, err = s.evdArg(id); err != nil {
				return s.result(err)
			}
		}
		p.State, p.LocalPortQual, p.RemotePortQual = api.EPState(q.State), api.ConnQual(q.LocalPortQual), api.ConnQual(q.RemotePortQual)
		if q.LocalAddr != nil {
			p.LocalAddr = s.addrs.in(q.LocalAddr)
		}
		if q.RemoteAddr != nil {
			p.RemoteAddr = s.addrs.in(q.RemoteAddr)
		}
		if a := epAttrFromPB(q.Attr); a != nil {
			p.Attr = *a
		}
	}
	return s.result(o.obj.(api.EP).Modify(api.EPParamMask(r.Mask), &p))
}

func (s *server) EPStatus(_ context.Context, r *pb.Obj) (*pb.EPStatusResp, error) {
	o, err := s.lookup(r.Id, api.HandleEP)
	if err != nil {
		return &pb.EPStatusResp{Err: errToPB(err)}, nil
	}
	st, ri, qi, err := o.obj.(api.EP).GetStatus()
	return &pb.EPStatusResp{Err: errToPB(err), State: uint32(st), RecvIdle: ri, RequestIdle: qi, Seq: s.drainAll()}, nil
}

func (s *server) Connect(_ context.Context, r *pb.ConnectReq) (*pb.Result, error) {
	o, err := s.lookup(r.Ep, api.HandleEP)
	if err != nil {
		return s.result(err)
	}
	ep := o.obj.(api.EP)
	if r.Dup != 0 {
		dup, err := s.lookup(r.Dup, api.HandleEP)
		if err != nil {
			return s.result(err)
		}
		return s.result(ep.DupConnect(dup.obj.(api.EP), api.Timeout(r.TimeoutNs), r.PrivateData, api.QOS(r.Qos)))
	}
	var remote net.Addr
	if r.Remote != nil {
		remote = s.addrs.in(r.Remote)
	}
	return s.result(ep.Connect(remote, api.ConnQual(r.ConnQual), api.Timeout(r.TimeoutNs), r.PrivateData, api.QOS(r.Qos), api.ConnectFlags(r.Flags)))
}

func (s *server) Disconnect(_ context.Context, r *pb.CloseReq) (*pb.Result, error) {
	o, err := s.lookup(r.Id, api.HandleEP)
	if err != nil {
		return s.result(err)
	}
	return s.result(o.obj.(api.EP).Disconnect(api.CloseFlags(r.Flags)))
}

func (s *server) ResetEP(_ context.Context, r *pb.Obj) (*pb.Result, error) {
	o, err := s.lookup(r.Id, api.HandleEP)
	if err != nil {
		return s.result(err)
	}
	return s.result(o.obj.(api.EP).Reset())
}

func (s *server) Post(_ context.Context, r *pb.PostReq) (*pb.Result, error) {
	iov := lmrTripletsFromPB(r.Iov)
	cookie, flags := api.Cookie(r.Cookie), api.CompletionFlags(r.Flags)
	if r.Srq {
		o, err := s.lookup(r.Id, api.HandleSRQ)
		if err != nil {
			return s.result(err)
		}
		return s.result(o.obj.(api.SRQ).PostRecv(iov, cookie))
	}
	o, err := s.lookup(r.Id, api.HandleEP)
	if err != nil {
		return s.result(err)
	}
	ep := o.obj.(api.EP)
	switch api.DTOOp(r.Op) {
	case api.OpSend:
		if r.WithInvalidate {
			return s.result(ep.PostSendWithInvalidate(iov, cookie, flags, r.Invalidate, api.RMRContext(r.InvalidateRmr)))
		}
		return s.result(ep.PostSend(iov, cookie, flags))
	case api.OpReceive:
		return s.result(ep.PostRecv(iov, cookie, flags))
	case api.OpRDMAWrite:
		return s.result(ep.PostRDMAWrite(iov, cookie, rmrTripletFromPB(r.Remote), flags))
	case api.OpRDMARead:
		if r.ToRmr {
			return s.result(ep.PostRDMAReadToRMR(rmrTripletFromPB(r.LocalRmr), cookie, rmrTripletFromPB(r.Remote), flags))
		}
		return s.result(ep.PostRDMARead(iov, cookie, rmrTripletFromPB(r.Remote), flags))
	}
	return s.result(api.Errorf(api.InvalidParameter, api.NoSubtype, fmt.Sprintf("unknown post operation %d", r.Op)))
}

func (s *server) RecvQuery(_ context.Context, r *pb.Obj) (*pb.RecvQueryResp, error) {
	o, err := s.lookup(r.Id, api.HandleEP)
	if err != nil {
		return &pb.RecvQueryResp{Err: errToPB(err)}, nil
	}
	n, span, err := o.obj.(api.EP).RecvQuery()
	return &pb.RecvQueryResp{Err: errToPB(err), NbufsAllocated: int64(n), BufsAllocSpan: int64(span), Seq: s.drainAll()}, nil
}

func (s *server) SetWatermark(_ context.Context, r *pb.WatermarkReq) (*pb.Result, error) {
	o, err := s.lookup(r.Ep, api.HandleEP)
	if err != nil {
		return s.result(err)
	}
	return s.result(o.obj.(api.EP).SetWatermark(int(r.Soft), int(r.Hard)))
}

// crDone forgets a CR that was accepted, rejected or handed off, and the
// provider-made EP that a reject or handoff returned to the provider.
func (s *server) crDone(o *servedObj, localEP api.EP) {
	s.remove(o)
	if localEP == nil {
		return
	}
	s.mu.Lock()
	id, ok := s.ids[localEP]
	e := s.objs[id]
	s.mu.Unlock()
	if ok && e != nil && e.made {
		s.remove(e)
	}
}

func (s *server) crLocalEP(cr api.CR) api.EP {
	p, err := cr.Query()
	if err != nil {
		return nil
	}
	return p.LocalEP
}

func (s *server) Accept(_ context.Context, r *pb.CRReq) (*pb.Result, error) {
	o, err := s.lookup(r.Cr, api.HandleCR)
	if err != nil {
		return s.result(err)
	}
	ep, err := s.epArg(r.Ep)
	if err != nil {
		return s.result(err)
	}
	if err := o.obj.(api.CR).Accept(ep, r.PrivateData); err != nil {
		return s.result(err)
	}
	s.remove(o)
	return s.result(nil)
}

func (s *server) Reject(_ context.Context, r *pb.CRReq) (*pb.Result, error) {
	o, err := s.lookup(r.Cr, api.HandleCR)
	if err != nil {
		return s.result(err)
	}
	cr := o.obj.(api.CR)
	local := s.crLocalEP(cr)
	if err := cr.Reject(r.PrivateData); err != nil {
		return s.result(err)
	}
	s.crDone(o, local)
	return s.result(nil)
}

func (s *server) Handoff(_ context.Context, r *pb.CRReq) (*pb.Result, error) {
	o, err := s.lookup(r.Cr, api.HandleCR)
	if err != nil {
		return s.result(err)
	}
	cr := o.obj.(api.CR)
	local := s.crLocalEP(cr)
	if err := cr.Handoff(api.ConnQual(r.ConnQual)); err != nil {
		return s.result(err)
	}
	s.crDone(o, local)
	return s.result(nil)
}

func (s *server) Bind(_ context.Context, r *pb.BindReq) (*pb.BindResp, error) {
	o, err := s.lookup(r.Rmr, api.HandleRMR)
	if err != nil {
		return &pb.BindResp{Err: errToPB(err)}, nil
	}
	lmr, err := s.lmrArg(r.Lmr)
	if err != nil {
		return &pb.BindResp{Err: errToPB(err)}, nil
	}
	ep, err := s.epArg(r.Ep)
	if err != nil {
		return &pb.BindResp{Err: errToPB(err)}, nil
	}
	ctx, err := o.obj.(api.RMR).Bind(lmr, lmrTripletFromPB(r.Triplet), api.MemPriv(r.Priv), api.VAType(r.VaType), ep,
		api.Cookie(r.Cookie), api.CompletionFlags(r.Flags))
	return &pb.BindResp{Err: errToPB(err), RmrContext: uint32(ctx), Seq: s.drainAll()}, nil
}

func (s *server) ResizeSRQ(_ context.Context, r *pb.ResizeReq) (*pb.Result, error) {
	o, err := s.lookup(r.Id, api.HandleSRQ)
	if err != nil {
		return s.result(err)
	}
	return s.result(o.obj.(api.SRQ).Resize(int(r.N)))
}

func (s *server) SetLW(_ context.Context, r *pb.ResizeReq) (*pb.Result, error) {
	o, err := s.lookup(r.Id, api.HandleSRQ)
	if err != nil {
		return s.result(err)
	}
	return s.result(o.obj.(api.SRQ).SetLW(int(r.N)))
}
