package host

import (
	"context"
	"sync"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
	pb "github.com/godat/godat/plugin/proto"
	"github.com/godat/godat/provider/kit/eventq"
)

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
	if err := wire.ErrFromPB(r.Err); err != nil {
		return nil, err
	}
	ia := &proxyIA{attr: wire.IAAttrFromPB(r.Attr), pattr: wire.ProviderAttrFromPB(r.ProviderAttr)}
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
	return wire.IAAttrFromPB(r.Attr), wire.ProviderAttrFromPB(r.ProviderAttr), nil
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
	return create[api.PZ](&ia.proxyBase, &proxyPZ{}, api.HandlePZ, func() (*pb.CreateResp, error) {
		return ia.c.rpc.CreatePZ(bg, &pb.Obj{Id: ia.id})
	})
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
	e := &proxyEP{}
	e.t.recvEVD, _ = recv.(*proxyEVD)
	e.t.reqEVD, _ = req.(*proxyEVD)
	e.t.cnEVD, _ = connect.(*proxyEVD)
	e.t.srq, _ = srq.(*proxySRQ)
	return create[api.EP](&ia.proxyBase, e, api.HandleEP, func() (*pb.CreateResp, error) {
		return ia.c.rpc.CreateEP(bg, &pb.CreateEPReq{Ia: ia.id, Pz: idOf(pz), RecvEvd: idOf(recv), RequestEvd: idOf(req),
			ConnectEvd: idOf(connect), WithSrq: withSRQ, Srq: idOf(srq), Attr: wire.EPAttrToPB(attr)})
	})
}

func (ia *proxyIA) CreatePSP(q api.ConnQual, evd api.EVD, flags api.PSPFlags) (api.PSP, error) {
	p, _, err := ia.createPSP(false, q, evd, flags)
	return p, err
}

func (ia *proxyIA) CreatePSPAny(evd api.EVD, flags api.PSPFlags) (api.PSP, api.ConnQual, error) {
	return ia.createPSP(true, 0, evd, flags)
}

func (ia *proxyIA) createPSP(anyQ bool, q api.ConnQual, evd api.EVD, flags api.PSPFlags) (api.PSP, api.ConnQual, error) {
	var r *pb.CreateResp
	p, err := create[api.PSP](&ia.proxyBase, &proxyPSP{}, api.HandlePSP, func() (_ *pb.CreateResp, err error) {
		r, err = ia.c.rpc.CreatePSP(bg, &pb.CreatePSPReq{Ia: ia.id, Any: anyQ, ConnQual: uint64(q), Evd: idOf(evd), Flags: uint32(flags)})
		return r, err
	})
	if err != nil {
		return nil, 0, err
	}
	return p, api.ConnQual(r.ConnQual), nil
}

func (ia *proxyIA) CreateRSP(q api.ConnQual, ep api.EP, evd api.EVD) (api.RSP, error) {
	return create[api.RSP](&ia.proxyBase, &proxyRSP{}, api.HandleRSP, func() (*pb.CreateResp, error) {
		return ia.c.rpc.CreateRSP(bg, &pb.CreateRSPReq{Ia: ia.id, ConnQual: uint64(q), Ep: idOf(ep), Evd: idOf(evd)})
	})
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
	return create[api.SRQ](&ia.proxyBase, &proxySRQ{}, api.HandleSRQ, func() (*pb.CreateResp, error) {
		return ia.c.rpc.CreateSRQ(bg, &pb.CreateSRQReq{Ia: ia.id, Pz: idOf(pz), MaxRecvDtos: int64(attr.MaxRecvDTOs),
			MaxRecvIov: int64(attr.MaxRecvIOV), LowWatermark: int64(attr.LowWatermark)})
	})
}

func (ia *proxyIA) SyncRDMARead(segs []api.LMRTriplet) error  { return ia.sync(segs, false) }
func (ia *proxyIA) SyncRDMAWrite(segs []api.LMRTriplet) error { return ia.sync(segs, true) }

func (ia *proxyIA) sync(segs []api.LMRTriplet, write bool) error {
	if err := ia.live(); err != nil {
		return err
	}
	r, err := ia.c.rpc.SyncRDMA(bg, &pb.SyncReq{Ia: ia.id, Write: write, Segs: wire.LMRTripletsToPB(segs)})
	return ia.c.done(r, err)
}

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
