package plugin

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
	pb "github.com/godat/godat/plugin/proto"
)

// attachRings starts the data path on the region and doorbells the host
// sent.
func (s *server) attachRings(m *api.Memory, sq, cq *wire.Bell) {
	s.ringMem, s.sqBell, s.cqBell = m, sq, cq
	s.execCond = sync.NewCond(&s.execMu)
	s.ringsP.Store(wire.NewRings(m.Bytes()))
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
	var sub wire.Submission
	sub.IOV = make([]api.LMRTriplet, 0, wire.SQMaxIOV)
	var last time.Time
	for {
		n := 0
		for n < 256 && r.Take(&sub) {
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
		if err := wire.SleepOn(r.U32(wire.OffSQSleeping), func() bool { return r.Taken() != r.Submitted() }, s.sqBell); err != nil {
			return
		}
	}
}

// execute runs one submission. A post the provider refuses (which the
// host avoids by sending only posts on connected EPs within their limits
// through the ring) completes with DTOErrLocalEP, so that it is not lost.
func (s *server) execute(sub *wire.Submission) {
	o, err := s.lookup(sub.EP, api.HandleEP)
	if err != nil {
		return
	}
	ep := o.obj.(api.EP)
	cookie, flags := api.Cookie(sub.Cookie), api.CompletionFlags(sub.Flags)
	op := api.OpSend
	switch sub.Kind {
	case wire.SubSend:
		err = ep.PostSend(sub.IOV, cookie, flags)
	case wire.SubSendInv:
		err = ep.PostSendWithInvalidate(sub.IOV, cookie, flags, sub.Invalidate, sub.InvRMR)
	case wire.SubRecv:
		op = api.OpReceive
		err = ep.PostRecv(sub.IOV, cookie, flags)
	case wire.SubWrite:
		op = api.OpRDMAWrite
		err = ep.PostRDMAWrite(sub.IOV, cookie, sub.Remote, flags)
	case wire.SubRead:
		op = api.OpRDMARead
		err = ep.PostRDMARead(sub.IOV, cookie, sub.Remote, flags)
	case wire.SubReadToRMR:
		op = api.OpRDMARead
		err = ep.PostRDMAReadToRMR(sub.Local, cookie, sub.Remote, flags)
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
		s.rec = wire.Event{Seq: s.seq, EVD: se.id, Number: api.DTOCompletionEvent, EP: o.id, Cookie: sub.Cookie,
			Status: api.DTOErrLocalEP, Op: op}
		s.putLocked(&s.rec)
		s.seq++
		s.rec = wire.Event{Seq: s.seq, EVD: se.id, Notify: true}
		s.putLocked(&s.rec)
	}
	s.evMu.Unlock()
}

// fenceInterceptor runs a control call only after the submissions the
// host had made before it (its "godat-sq" metadata) are executed.
func (s *server) fenceInterceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if md, ok := metadata.FromIncomingContext(ctx); ok && s.ringsP.Load() != nil {
		if v := md.Get(wire.FenceKey); len(v) > 0 {
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

func (s *server) Post(_ context.Context, r *pb.PostReq) (*pb.Result, error) {
	iov := wire.LMRTripletsFromPB(r.Iov)
	cookie, flags := api.Cookie(r.Cookie), api.CompletionFlags(r.Flags)
	if r.Srq {
		return callOn(s, r.Id, api.HandleSRQ, func(srq api.SRQ) error { return srq.PostRecv(iov, cookie) })
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
		return s.result(ep.PostRDMAWrite(iov, cookie, wire.RMRTripletFromPB(r.Remote), flags))
	case api.OpRDMARead:
		if r.ToRmr {
			return s.result(ep.PostRDMAReadToRMR(wire.RMRTripletFromPB(r.LocalRmr), cookie, wire.RMRTripletFromPB(r.Remote), flags))
		}
		return s.result(ep.PostRDMARead(iov, cookie, wire.RMRTripletFromPB(r.Remote), flags))
	}
	return s.result(api.Errorf(api.InvalidParameter, api.NoSubtype, fmt.Sprintf("unknown post operation %d", r.Op)))
}
