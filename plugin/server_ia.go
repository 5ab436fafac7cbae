package plugin

import (
	"context"
	"fmt"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
	pb "github.com/godat/godat/plugin/proto"
)

func (s *server) OpenIA(ctx context.Context, r *pb.OpenReq) (*pb.OpenResp, error) {
	ia, err := s.prov.Open(ctx, api.OpenParams{Name: r.Name, Params: r.Params, PlatformParams: r.PlatformParams,
		AsyncEVDQLen: int(r.AsyncEvdQlen), ThreadSafe: r.ThreadSafe})
	if err != nil {
		return &pb.OpenResp{Err: wire.ErrToPB(err)}, nil
	}
	fail := func(err error) (*pb.OpenResp, error) {
		ia.Close(api.CloseAbrupt)
		return &pb.OpenResp{Err: wire.ErrToPB(err)}, nil
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
		Attr: wire.IAAttrToPB(attr), ProviderAttr: wire.ProviderAttrToPB(pattr), Seq: s.drainAll()}, nil
}

// iaOf resolves the IA a call acts on.
func (s *server) iaOf(id uint64) (*servedIA, error) {
	a := args{s: s}
	ia := a.ia(id)
	return ia, a.err
}

func (s *server) QueryIA(_ context.Context, r *pb.Obj) (*pb.IAQueryResp, error) {
	ia, err := s.iaOf(r.Id)
	if err != nil {
		return &pb.IAQueryResp{Err: wire.ErrToPB(err)}, nil
	}
	attr, pattr, err := ia.p.Query()
	if err != nil {
		return &pb.IAQueryResp{Err: wire.ErrToPB(err)}, nil
	}
	s.addrs.out(attr.Address)
	return &pb.IAQueryResp{Attr: wire.IAAttrToPB(attr), ProviderAttr: wire.ProviderAttrToPB(pattr), Seq: s.drainAll()}, nil
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

func (s *server) CreateEP(_ context.Context, r *pb.CreateEPReq) (*pb.CreateResp, error) {
	a := args{s: s}
	ia, pz := a.ia(r.Ia), a.pz(r.Pz)
	recv, req, conn := a.evd(r.RecvEvd), a.evd(r.RequestEvd), a.evd(r.ConnectEvd)
	var srq api.SRQ
	if r.WithSrq {
		srq = a.srq(r.Srq)
	}
	if a.err != nil {
		return s.create(nil, 0, nil, a.err)
	}
	var ep api.EP
	var err error
	if r.WithSrq {
		ep, err = ia.p.CreateEPWithSRQ(pz, recv, req, conn, srq, wire.EPAttrFromPB(r.Attr))
	} else {
		ep, err = ia.p.CreateEP(pz, recv, req, conn, wire.EPAttrFromPB(r.Attr))
	}
	return s.create(ep, api.HandleEP, ia, err)
}

func (s *server) CreatePSP(_ context.Context, r *pb.CreatePSPReq) (*pb.CreateResp, error) {
	a := args{s: s}
	ia, evd := a.ia(r.Ia), a.evd(r.Evd)
	if a.err != nil {
		return s.create(nil, 0, nil, a.err)
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
	a := args{s: s}
	ia, ep, evd := a.ia(r.Ia), a.ep(r.Ep), a.evd(r.Evd)
	if a.err != nil {
		return s.create(nil, 0, nil, a.err)
	}
	rsp, err := ia.p.CreateRSP(api.ConnQual(r.ConnQual), ep, evd)
	return s.create(rsp, api.HandleRSP, ia, err)
}

func (s *server) CreateLMR(_ context.Context, r *pb.CreateLMRReq) (*pb.CreateResp, error) {
	a := args{s: s}
	ia, pz := a.ia(r.Ia), a.pz(r.Pz)
	region := api.Region{Type: api.MemType(r.MemType)}
	if region.Type == api.MemTypeLMR {
		region.LMR = a.lmr(r.Lmr)
	} else {
		region.Bytes = a.mem(r.Mem, r.Offset, r.Length)
	}
	if a.err != nil {
		return s.create(nil, 0, nil, a.err)
	}
	lmr, err := ia.p.CreateLMR(pz, region, api.MemPriv(r.Priv), api.VAType(r.VaType))
	if err != nil {
		return s.create(nil, 0, nil, err)
	}
	o := s.add(lmr, api.HandleLMR, ia)
	o.mem = r.Mem
	return &pb.CreateResp{Id: o.id, Seq: s.drainAll()}, nil
}

// mem resolves the length bytes at offset in the shared memory id that
// the host registers an LMR on.
func (a *args) mem(id, offset, length uint64) []byte {
	if a.err != nil {
		return nil
	}
	b, ok := a.s.mem.get(id)
	if !ok || offset > uint64(len(b)) || length > uint64(len(b))-offset {
		a.err = api.Errorf(api.InvalidParameter, api.SubArg3,
			fmt.Sprintf("the plugin has no shared memory %d covering %d bytes at offset %d", id, length, offset))
		return nil
	}
	return b[offset : offset+length : offset+length]
}

func (s *server) CreateSRQ(_ context.Context, r *pb.CreateSRQReq) (*pb.CreateResp, error) {
	a := args{s: s}
	ia, pz := a.ia(r.Ia), a.pz(r.Pz)
	if a.err != nil {
		return s.create(nil, 0, nil, a.err)
	}
	srq, err := ia.p.CreateSRQ(pz, api.SRQAttr{MaxRecvDTOs: int(r.MaxRecvDtos), MaxRecvIOV: int(r.MaxRecvIov), LowWatermark: int(r.LowWatermark)})
	return s.create(srq, api.HandleSRQ, ia, err)
}

func (s *server) SyncRDMA(_ context.Context, r *pb.SyncReq) (*pb.Result, error) {
	ia, err := s.iaOf(r.Ia)
	if err != nil {
		return s.result(err)
	}
	segs := wire.LMRTripletsFromPB(r.Segs)
	if r.Write {
		return s.result(ia.p.SyncRDMAWrite(segs))
	}
	return s.result(ia.p.SyncRDMARead(segs))
}
