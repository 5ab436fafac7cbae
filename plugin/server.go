package plugin

// The plugin side: a gRPC server over the vendor's api.Provider. Every
// object the provider returns gets an id in one table; the host names
// objects by these ids. Events are taken out of the provider's EVDs by the
// server itself and streamed to the host (see the package doc, "Events").
//
// This file holds the server and its object table. The calls are split by
// what they act on, as the host's proxies are: server_ia.go (the IA and
// the objects it creates), server_ep.go (EP state and connections),
// server_cm.go (CRs), server_objects.go (free, query and the calls on
// EVDs, PZs, RMRs and SRQs), server_dto.go (posts, by a call or through the
// submission ring) and server_events.go (draining the provider's EVDs
// onto the completion ring).

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
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
	rec   wire.Event // scratch record, under evMu

	// The shared rings, set up by the host over the control socket
	// before its first call.
	ringsP         atomic.Pointer[wire.Rings] // published last
	ringMem        *api.Memory
	sqBell, cqBell *wire.Bell
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
	if obj == nil || wire.IsNilObject(obj) {
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

// lookup returns the object id names, which must be of type t.
func (s *server) lookup(id uint64, t api.HandleType) (*servedObj, error) {
	s.mu.Lock()
	o := s.objs[id]
	s.mu.Unlock()
	if o == nil || o.typ != t {
		if id == 0 {
			return nil, api.Errorf(api.InvalidHandle, wire.HandleSubtype(t), t.String()+" handle is nil")
		}
		return nil, api.Errorf(api.InvalidHandle, wire.HandleSubtype(t), fmt.Sprintf("no %s with id %d in the plugin", t, id))
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

func (s *server) Hello(context.Context, *pb.HelloReq) (*pb.HelloResp, error) {
	return &pb.HelloResp{Name: s.name, Version: s.version, Pid: int64(os.Getpid())}, nil
}

// result builds a Result: the error and the event sequence after the
// call's events are out.
func (s *server) result(err error) (*pb.Result, error) {
	return &pb.Result{Err: wire.ErrToPB(err), Seq: s.drainAll()}, nil
}

func (s *server) create(obj any, t api.HandleType, ia *servedIA, err error) (*pb.CreateResp, error) {
	if err != nil {
		return &pb.CreateResp{Err: wire.ErrToPB(err), Seq: s.drainAll()}, nil
	}
	o := s.add(obj, t, ia)
	return &pb.CreateResp{Id: o.id, Seq: s.drainAll()}, nil
}

// args resolves the handle arguments of a call into provider objects. It
// keeps the first error and resolves nothing after it, so that a handler
// names all its arguments and then checks err once: the error is the one
// of the first bad argument, as it would be had each been checked in turn.
type args struct {
	s   *server
	err error
}

// obj resolves a handle that must name an object of type t.
func (a *args) obj(id uint64, t api.HandleType) *servedObj {
	if a.err != nil {
		return nil
	}
	o, err := a.s.lookup(id, t)
	a.err = err
	return o
}

// optArg resolves a handle that may be nil (id 0) and must otherwise name
// an object of type t, as the api interface T of t's objects.
func optArg[T any](a *args, id uint64, t api.HandleType) T {
	var none T
	if a.err != nil {
		return none
	}
	o, err := a.s.opt(id, t)
	if err != nil || o == nil {
		a.err = err
		return none
	}
	return o.obj.(T)
}

// ia resolves the IA a call acts on (never nil).
func (a *args) ia(id uint64) *servedIA {
	if o := a.obj(id, api.HandleIA); o != nil {
		return o.ia
	}
	return nil
}

// The optional handle arguments of the calls, by kind.
func (a *args) evd(id uint64) api.EVD { return optArg[api.EVD](a, id, api.HandleEVD) }
func (a *args) ep(id uint64) api.EP   { return optArg[api.EP](a, id, api.HandleEP) }
func (a *args) pz(id uint64) api.PZ   { return optArg[api.PZ](a, id, api.HandlePZ) }
func (a *args) lmr(id uint64) api.LMR { return optArg[api.LMR](a, id, api.HandleLMR) }
func (a *args) srq(id uint64) api.SRQ { return optArg[api.SRQ](a, id, api.HandleSRQ) }

// callOn answers a call that acts on the one object id names, of type t
// (the api interface T of t's objects), with what do returns.
func callOn[T any](s *server, id uint64, t api.HandleType, do func(T) error) (*pb.Result, error) {
	o, err := s.lookup(id, t)
	if err != nil {
		return s.result(err)
	}
	return s.result(do(o.obj.(T)))
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
