package host

import (
	"sync"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
	pb "github.com/godat/godat/plugin/proto"
)

type proxyPZ struct{ proxyBase }

func (z *proxyPZ) Query() (api.PZParam, error) {
	if err := z.live(); err != nil {
		return api.PZParam{}, err
	}
	return api.PZParam{IA: z.ia}, nil
}

func (z *proxyPZ) CreateRMR() (api.RMR, error) {
	return create[api.RMR](&z.proxyBase, &proxyRMR{}, api.HandleRMR, func() (*pb.CreateResp, error) {
		return z.c.rpc.CreateRMR(bg, &pb.Obj{Id: z.id})
	})
}

func (z *proxyPZ) Free() error { return z.c.free(z) }

type proxyLMR struct {
	proxyBase
	mem *api.Memory // the shared region; nil for MemTypeLMR
}

func (l *proxyLMR) Query() (api.LMRParam, error) {
	return queryTo(l, (*pb.QueryResp).GetLmr, "LMR", func(q *pb.LMRParam) api.LMRParam {
		return api.LMRParam{IA: l.ia, MemType: api.MemType(q.MemType), Length: q.Length, PZ: proxyOf[api.PZ](l.c, q.Pz), Priv: api.MemPriv(q.Priv),
			VAType: api.VAType(q.VaType), LMRContext: api.LMRContext(q.LmrContext), RMRContext: api.RMRContext(q.RmrContext),
			RegisteredSize: q.RegisteredSize, RegisteredAddress: api.VAddr(q.RegisteredAddress)}
	})
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
	return queryTo(m, (*pb.QueryResp).GetRmr, "RMR", func(q *pb.RMRParam) api.RMRParam {
		return api.RMRParam{IA: m.ia, PZ: proxyOf[api.PZ](m.c, q.Pz), LMRTriplet: wire.LMRTripletFromPB(q.LmrTriplet), Priv: api.MemPriv(q.Priv),
			RMRContext: api.RMRContext(q.RmrContext), Scope: api.RMRScope(q.Scope), VAType: api.VAType(q.VaType)}
	})
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
	r, err := m.c.rpc.Bind(bg, &pb.BindReq{Rmr: m.id, Lmr: idOf(lmr), Triplet: wire.LMRTripletToPB(t), Priv: uint32(priv),
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
