package host

import (
	"sync"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
	pb "github.com/godat/godat/plugin/proto"
)

type proxySRQ struct {
	proxyBase
	mu    sync.Mutex
	recvs workQueue
}

func (s *proxySRQ) Query() (api.SRQParam, error) {
	return queryTo(s, (*pb.QueryResp).GetSrq, "SRQ", func(q *pb.SRQParam) api.SRQParam {
		return api.SRQParam{IA: s.ia, State: api.SRQState(q.State), PZ: proxyOf[api.PZ](s.c, q.Pz), MaxRecvDTOs: int(q.MaxRecvDtos),
			MaxRecvIOV: int(q.MaxRecvIov), LowWatermark: int(q.LowWatermark), AvailableDTOCount: int(q.AvailableDtoCount),
			OutstandingDTOCount: int(q.OutstandingDtoCount)}
	})
}

func (s *proxySRQ) PostRecv(iov []api.LMRTriplet, cookie api.Cookie) error {
	if err := s.live(); err != nil {
		return err
	}
	s.mu.Lock()
	tok, _ := s.recvs.add(cookie, api.OpReceive, nil, false, 0)
	s.mu.Unlock()
	r, err := s.c.rpc.Post(bg, &pb.PostReq{Id: s.id, Srq: true, Op: uint32(api.OpReceive), Iov: wire.LMRTripletsToPB(iov), Cookie: uint64(cookie)})
	if err := s.c.done(r, err); err != nil {
		s.mu.Lock()
		s.recvs.failed(tok)
		s.mu.Unlock()
		return err
	}
	return nil
}

func (s *proxySRQ) Resize(n int) error {
	if err := s.live(); err != nil {
		return err
	}
	r, err := s.c.rpc.ResizeSRQ(bg, &pb.ResizeReq{Id: s.id, N: int64(n)})
	return s.c.done(r, err)
}

func (s *proxySRQ) SetLW(n int) error {
	if err := s.live(); err != nil {
		return err
	}
	r, err := s.c.rpc.SetLW(bg, &pb.ResizeReq{Id: s.id, N: int64(n)})
	return s.c.done(r, err)
}

func (s *proxySRQ) Free() error { return s.c.free(s) }
