package host

// The host's proxies: one per object in the plugin, implementing the api
// interfaces by calls to the plugin. EVDs and CNOs are host-side queues
// (package eventq) that the completion ring fills; software events,
// waiting, enabling and CNOs never leave the host.
//
// This file holds what every proxy shares: the base, the table of proxies
// by the plugin's id, and the lookups from id to proxy. Each object family
// has its own file: ia.go (the IA and the objects it creates), evd.go
// (EVD and CNO), ep.go (EP and its DTOs), cm.go (PSP, RSP, CR), mem.go
// (PZ, LMR, RMR), srq.go, and events.go (the pump that moves the
// completion ring onto the host's queues).

import (
	"context"
	"sync/atomic"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
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
		return api.Errorf(api.InvalidHandle, wire.HandleSubtype(b.typ), b.typ.String()+" was freed")
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
	return adopt(c, id, ia, api.HandleEP, func() *proxyEP { return &proxyEP{made: true} })
}

func (c *runningPlugin) crOf(id uint64, ia *proxyIA) api.CR {
	if r := adopt(c, id, ia, api.HandleCR, func() *proxyCR { return &proxyCR{} }); r != nil {
		return r
	}
	return nil
}

// adopt returns the proxy of type P under id or, if no proxy has id and ia
// is given, registers the new one mk makes for an object of type t that
// the provider made on its own; nil if id is 0 or names another type.
func adopt[P proxy](c *runningPlugin, id uint64, ia *proxyIA, t api.HandleType, mk func() P) P {
	var none P
	if id == 0 {
		return none
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.objs[id].(P); ok {
		return p
	}
	if _, taken := c.objs[id]; taken || ia == nil {
		return none
	}
	p := mk()
	b := p.base()
	b.c, b.ia, b.id, b.typ = c, ia, id, t
	c.objs[id] = p
	return p
}

// proxyOf returns the proxy of id as the api interface T of its kind, or
// nil if id names no such proxy. Each api object interface has a Query of
// its own result type, so only the proxy type of T's objects implements T.
func proxyOf[T any](c *runningPlugin, id uint64) T {
	p, _ := c.lookup(id).(T)
	return p
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
	if h, ok := o.(proxy); ok && !wire.IsNilObject(o) {
		return h.base().id
	}
	return 0
}

// badHandle is the error for an argument that is not a proxy of this
// plugin (the guard prevents it; a direct caller may not).
func badHandle(what string) error {
	return api.Errorf(api.InvalidHandle, api.NoSubtype, what+" is not an object of this plugin")
}

// create makes an object of type t in the plugin by call, on behalf of the
// live object b, and registers p as its proxy in b's IA. It returns p as
// T, the api interface of t's objects, or a nil T and the error.
func create[T api.Object](b *proxyBase, p proxy, t api.HandleType, call func() (*pb.CreateResp, error)) (T, error) {
	var none T
	if err := b.live(); err != nil {
		return none, err
	}
	r, err := call()
	if err := b.c.done(r, err); err != nil {
		return none, err
	}
	b.c.register(p, b.ia, r.Id, t)
	return p.(T), nil
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

// queryTo is queryAs for a Query method: it converts the part of the
// answer pick returns with conv.
func queryTo[M, P any](o proxy, pick func(*pb.QueryResp) *M, kind string, conv func(*M) P) (P, error) {
	q, err := queryAs(o, pick, kind)
	if err != nil {
		var zero P
		return zero, err
	}
	return conv(q), nil
}

// queryAs fetches o's parameters and returns the part of the answer pick
// selects (one of the QueryResp getters), which the plugin must fill; kind
// names it in the error when the plugin did not.
func queryAs[M any](o proxy, pick func(*pb.QueryResp) *M, kind string) (*M, error) {
	r, err := o.base().c.query(o)
	if err != nil {
		return nil, err
	}
	if q := pick(r); q != nil {
		return q, nil
	}
	return nil, api.Errorf(api.InternalError, api.NoSubtype, "the plugin returned no "+kind+" parameters")
}
