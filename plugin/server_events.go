package plugin

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
	pb "github.com/godat/godat/plugin/proto"
)

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
	s.rec = wire.Event{Seq: s.seq, EVD: se.id, Notify: true}
	s.putLocked(&s.rec)
	s.evMu.Unlock()
	s.wakeHost()
}

func (s *server) wakeHost() {
	if r := s.ringsP.Load(); r != nil {
		wire.WakeIf(r.U32(wire.OffCQSleeping), s.cqBell)
	}
}

// putLocked writes a record to the completion ring. s.evMu is held.
func (s *server) putLocked(e *wire.Event) {
	r := s.ringsP.Load()
	if r == nil {
		return // the host set up no rings: it is not listening
	}
	r.Put(e, s.wakeHost, func() bool { return true })
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
		s.rec.Seq, s.rec.EVD = s.seq, se.id
		s.putLocked(&s.rec)
	}
}

// eventToRec converts a provider event, naming its objects by id.
func (s *server) eventToRec(ev *api.Event, ia *servedIA, r *wire.Event) {
	*r = wire.Event{Number: ev.Number}
	switch ev.Number.Stream() {
	case api.EVDDTO:
		d := &ev.DTO
		r.EP, r.Cookie, r.Status, r.Length, r.Op, r.RMRContext =
			s.idOf(d.EP, ia), uint64(d.Cookie), d.Status, d.Length, d.Op, d.RMRContext
	case api.EVDRMRBind:
		b := &ev.RMRBind
		r.RMR, r.Cookie, r.Status = s.idOf(b.RMR, ia), uint64(b.Cookie), b.Status
	case api.EVDCR:
		c := &ev.CR
		r.PSP, r.RSP, r.CR = s.idOf(c.PSP, ia), s.idOf(c.RSP, ia), s.idOf(c.CR, ia)
		r.ConnQual, r.Truncated = uint64(c.ConnQual), c.Truncated
		if a := s.addrs.out(c.LocalAddr); a != nil {
			r.HasAddr, r.Network, r.Addr = true, a.Network, a.Address
		}
	case api.EVDConnection:
		r.EP, r.PrivateData, r.HasPrivData = s.idOf(ev.Conn.EP, ia), ev.Conn.PrivateData, ev.Conn.PrivateData != nil
	case api.EVDAsync:
		r.Object, r.Reason = s.idOf(ev.Async.Object, ia), int32(ev.Async.Reason)
		if ev.Async.Object != nil {
			r.ObjectType = ev.Async.Object.HandleType()
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
