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
	pb "github.com/godat/godat/plugin/proto"
)

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
