package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/godat/godat/api"
)

// session is the server side of one connection.
type session struct {
	*link
	local   *buf // recv slot, then send slot
	slot    int
	win     *buf // the RDMA window (remote read and write)
	rmr     api.RMR
	rmrCtx  api.RMRContext // the current binding's context, 0 when unbound
	poll    bool
	idle    *idleWatch // ticked at every completion
	kind    uint64
	nreq    int
	lat     int // pings still expected in a latency run
	latSize int
	// A latency run's receive and send IOVs, built once so that
	// answering a ping allocates nothing (the raw baseline does not).
	latRecv, latSend []api.LMRTriplet
	// An RDMA-write ping-pong the last request asked for, run once its
	// reply is posted: wlatCount pings, each answered by a pong written
	// to wlatDst (whose length is the pings').
	wlatCount int
	wlatDst   api.RMRTriplet
	wlatMode  wlatMode // how the pongs are posted and the pings watched for

	// The receive posted for the next request: its segments. A receive
	// is always posted before the reply that lets the client send again
	// (during a latency run a second one is posted ahead).
	recvSegs [][]byte
	// nextSegs, when set, is the shape (segment lengths) of the next
	// receive; nextGather is how many segments the next reply uses.
	nextLens   []int
	nextGather int
}

func sessionName(k uint64) string {
	switch k {
	case sessionCheck:
		return "check"
	case sessionBench:
		return "bench"
	case sessionStale:
		return "stale-context check"
	}
	return "session " + strconv.FormatUint(k, 10)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func newSession(n *node, maxSize int) (_ *session, err error) {
	l, err := newLink(n)
	if err != nil {
		return nil, err
	}
	s := &session{link: l, slot: max(ctrlSize, maxSize)}
	defer func() {
		if err != nil {
			s.free()
		}
	}()
	if s.local, err = newBuf(n, 2*s.slot, api.MemPrivLocalRead|api.MemPrivLocalWrite); err != nil {
		return nil, err
	}
	if s.win, err = newBuf(n, max(minWindow, maxSize), api.MemPrivAll); err != nil {
		return nil, err
	}
	return s, nil
}

// free breaks the connection and frees everything of the session.
func (s *session) free() error {
	var errs []error
	if s.ep != nil {
		s.ep.Disconnect(api.CloseAbrupt)
	}
	if s.rmr != nil {
		errs = append(errs, s.rmr.Free())
	}
	errs = append(errs, s.link.free(), s.local.free(), s.win.free())
	return errors.Join(errs...)
}

// postRecv posts the session's one receive: one segment over the whole
// slot, or the segments lens names, with gaps between them.
func (s *session) postRecv(lens []int) error {
	var iov []api.LMRTriplet
	if lens == nil {
		iov, s.recvSegs = s.local.scatter(0, []int{s.slot}, 0)
	} else {
		iov, s.recvSegs = s.local.scatter(0, lens, 61)
	}
	if err := s.ep.PostRecv(iov, s.nextCookie(), api.CompletionDefault); err != nil {
		return fmt.Errorf("PostRecv: %w", err)
	}
	return nil
}

// send sends m from the send slot, in k segments.
func (s *session) send(m *msg, k int) error {
	b := m.marshal()
	iov, segs := s.local.scatter(s.slot, splitLens(len(b), k), 37)
	spread(segs, b)
	return s.ep.PostSend(iov, s.nextCookie(), api.CompletionDefault)
}

// loop answers requests until the receive is flushed (the peer
// disconnected) or ctx ends.
func (s *session) loop(ctx context.Context) error {
	var ev api.Event
	for {
		if err := s.next(ctx, s.poll, &ev); err != nil {
			return err
		}
		s.idle.tick()
		if ev.Number != api.DTOCompletionEvent {
			continue
		}
		d := ev.DTO
		if d.Status == api.DTOErrFlushed {
			return nil
		}
		if d.Status != api.DTOSuccess {
			return &dtoError{d: d, conn: s.connState()}
		}
		if d.Op != api.OpReceive {
			continue
		}
		if s.lat > 0 {
			if err := s.pong(d.Length); err != nil {
				return err
			}
			continue
		}
		s.nreq++
		var rep *msg
		if d.Length > ctrlSize {
			// Not a control message: no copy of it is made.
			rep = failure(0, "request of %d bytes exceeds %d", d.Length, ctrlSize)
		} else {
			data := gather(s.recvSegs, int(d.Length))
			if m, err := decode(data); err != nil {
				rep = failure(0, "undecodable request of %d bytes: %v", len(data), err)
			} else {
				rep = s.handle(ctx, m)
			}
		}
		lens, k := s.nextLens, max(s.nextGather, 1)
		s.nextLens, s.nextGather = nil, 0
		if err := s.postRecv(lens); err != nil {
			return err
		}
		if s.lat > 0 {
			// A latency run starts: a second receive, so that each pong
			// goes out before the receive that replaces its ping's.
			if err := s.ep.PostRecv(s.latRecv, s.nextCookie(), api.CompletionDefault); err != nil {
				return fmt.Errorf("PostRecv: %w", err)
			}
		}
		if err := s.send(rep, k); err != nil {
			return fmt.Errorf("PostSend: %w", err)
		}
		if s.wlatCount > 0 {
			n := s.wlatCount
			s.wlatCount = 0
			if err := s.wlatServe(ctx, n, s.wlatDst, s.wlatMode); err != nil {
				return err
			}
		}
	}
}

// pong answers one ping of a latency run.
func (s *session) pong(n uint32) error {
	if int(n) != s.latSize {
		return fmt.Errorf("latency run: got a %d-byte message, want %d", n, s.latSize)
	}
	s.lat--
	if s.lat == 0 {
		s.poll = false
	}
	if err := s.ep.PostSend(s.latSend, s.nextCookie(), api.CompletionDefault); err != nil {
		return err
	}
	// One receive stays posted ahead (see loop): this one takes the ping
	// after next, or the request that follows the run. After the last
	// ping, the request's receive is posted already.
	if s.lat > 0 {
		if err := s.ep.PostRecv(s.latRecv, s.nextCookie(), api.CompletionDefault); err != nil {
			return fmt.Errorf("PostRecv: %w", err)
		}
	}
	return nil
}

// window returns the window bytes [off, off+n) a request names, or an
// error for a range outside it.
func (s *session) window(m *msg) (off, n int, err error) {
	o, err1 := m.get(tagOffset)
	l, err2 := m.get(tagLength)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, err
	}
	if o > uint64(len(s.win.b)) || l > uint64(len(s.win.b))-o {
		return 0, 0, fmt.Errorf("range %d+%d is outside the %d-byte window", o, l, len(s.win.b))
	}
	return int(o), int(l), nil
}

// handle answers one request. A request carrying tagPoll = 1 (SYNC, or
// LAT for its pings) makes the session busy-poll its EVD until the next
// request, as the raw baseline's server spins in a poll run: a bw or read
// run in poll mode has no events for the server to see, but its polling
// drives the connection.
func (s *session) handle(ctx context.Context, m *msg) *msg {
	k := m.kind
	s.poll = false
	switch k {
	case kindPing:
		p, _ := m.find(tagPayload)
		seed, err := m.get(tagSeed)
		if err != nil {
			return failure(k, "%v", err)
		}
		if i := checkPattern(p, seed); i >= 0 {
			return failure(k, "payload byte %d of %d is wrong", i, len(p))
		}
		out := make([]byte, len(p))
		fillPattern(out, seed+1)
		return reply(k).u64(tagSeed, seed+1).bytes(tagPayload, out)
	case kindWindow:
		return reply(k).u64(tagAddr, uint64(s.win.prm.RegisteredAddress)).
			u64(tagLength, uint64(len(s.win.b))).u64(tagRMR, uint64(s.win.prm.RMRContext)).
			u64(tagReadsIn, uint64(max(s.epAttr.MaxRDMAReadIn, 0)))
	case kindVerify:
		off, n, err := s.window(m)
		seed, err2 := m.get(tagSeed)
		if err = errors.Join(err, err2); err != nil {
			return failure(k, "%v", err)
		}
		// The client's RDMA write placed these bytes: make them visible
		// before reading them (dat_lmr_sync_rdma_write(3DAT)).
		s.n.ia.SyncRDMAWrite([]api.LMRTriplet{s.win.tri(off, n)})
		if i := checkPattern(s.win.b[off:off+n], seed); i >= 0 {
			return failure(k, "window byte %d of %d+%d is wrong", i, off, n)
		}
		return reply(k)
	case kindFill:
		off, n, err := s.window(m)
		seed, err2 := m.get(tagSeed)
		if err = errors.Join(err, err2); err != nil {
			return failure(k, "%v", err)
		}
		// The client RDMA-reads what is written here next, and the window
		// is the target of its RDMA writes too: the pages ask for
		// dat_lmr_sync_rdma_write(3DAT) around the consumer's own writes
		// to such a range, and dat_lmr_sync_rdma_read(3DAT) after them.
		seg := []api.LMRTriplet{s.win.tri(off, n)}
		s.n.ia.SyncRDMAWrite(seg)
		fillPattern(s.win.b[off:off+n], seed)
		s.n.ia.SyncRDMAWrite(seg)
		s.n.ia.SyncRDMARead(seg)
		return reply(k)
	case kindBind:
		off, n, err := s.window(m)
		if err != nil {
			return failure(k, "%v", err)
		}
		if s.rmr == nil {
			if s.rmr, err = s.n.pz.CreateRMR(); err != nil {
				return failure(k, "CreateRMR: %v", err)
			}
		}
		c, err := s.bind(ctx, s.win.lmr, s.win.tri(off, n), api.MemPrivRemoteRead|api.MemPrivRemoteWrite)
		if err != nil {
			return failure(k, "%v", err)
		}
		s.rmrCtx = c
		return reply(k).u64(tagAddr, uint64(s.win.prm.RegisteredAddress)+uint64(off)).
			u64(tagLength, uint64(n)).u64(tagRMR, uint64(c))
	case kindUnbind:
		if s.rmr == nil || s.rmrCtx == 0 {
			return failure(k, "no RMR is bound")
		}
		if _, err := s.bind(ctx, nil, api.LMRTriplet{}, api.MemPrivNone); err != nil {
			return failure(k, "%v", err)
		}
		old := s.rmrCtx
		s.rmrCtx = 0
		if prm, err := s.rmr.Query(); err != nil || prm.LMRTriplet.Length != 0 {
			return failure(k, "RMR still bound after unbind (%v)", err)
		}
		return reply(k).u64(tagRMR, uint64(old))
	case kindIOVPrep:
		n, err1 := m.get(tagLength)
		c, err2 := m.get(tagCount)
		if err := errors.Join(err1, err2); err != nil {
			return failure(k, "%v", err)
		}
		if n == 0 || n > ctrlSize/2 {
			return failure(k, "IOV message length %d out of range", n)
		}
		// The count is the peer's: clamped before it sizes anything, as
		// the EP's limits clamp it (the reply says how many).
		segs := iovLimit(int(min(c, maxIOVPrepSegs, n)), s.epAttr.MaxRecvIOV, s.epAttr.MaxRequestIOV, s.n.attr.MaxIOVSegmentsPerDTO)
		s.nextLens = splitLens(int(n), segs)
		return reply(k).u64(tagCount, uint64(segs))
	case kindIOVData:
		rep := s.handle(ctx, &msg{kind: kindPing, fields: m.fields})
		rep.kind = kindIOVData | replyBit
		s.nextGather = len(s.recvSegs)
		return rep
	case kindLat:
		size, err1 := m.get(tagLength)
		count, err2 := m.get(tagCount)
		if err := errors.Join(err1, err2); err != nil {
			return failure(k, "%v", err)
		}
		if size == 0 || size > uint64(s.slot) {
			return failure(k, "size %d out of range (the session was opened for %d)", size, s.slot)
		}
		if count > rawMaxCount {
			return failure(k, "count %d exceeds %d", count, uint64(rawMaxCount))
		}
		s.lat, s.latSize, s.poll = int(count), int(size), m.getOr(tagPoll, 0) == 1 && count > 0
		// Every ping lands in the whole-slot receive that postRecv(nil)
		// posts (recvSegs stays right for it).
		s.latRecv, _ = s.local.scatter(0, []int{s.slot}, 0)
		s.latSend = []api.LMRTriplet{s.local.tri(s.slot, s.latSize)}
		return reply(k)
	case kindWLat:
		w, err1 := windowOf(m) // the client's landing area, length bytes
		count, err2 := m.get(tagCount)
		if err := errors.Join(err1, err2); err != nil {
			return failure(k, "%v", err)
		}
		size := w.len
		if size <= 0 || size > s.slot || size > len(s.win.b) || size > 1<<32-1 {
			return failure(k, "size %d out of range (the session was opened for %d)", size, s.slot)
		}
		// The pings land at the start of the window: clear it, so that
		// no byte left there by an earlier run looks like a ping.
		clear(s.win.b[:size])
		// The client's RDMA writes land here next
		// (dat_lmr_sync_rdma_write(3DAT)).
		s.n.ia.SyncRDMAWrite([]api.LMRTriplet{s.win.tri(0, size)})
		s.wlatCount = int(min(count, rawMaxCount))
		s.wlatDst = w.at(0, size)
		mode := wlatMode(m.getOr(tagWLatMode, uint64(wlatSignalled)))
		if mode > wlatWatch {
			return failure(k, "unknown RDMA-write ping-pong mode %d", mode)
		}
		s.wlatMode = mode
		return reply(k)
	case kindSync:
		s.poll = m.getOr(tagPoll, 0) == 1
		return reply(k)
	}
	return failure(k, "unknown request %s", kindName(k))
}

// bind binds (or, with a nil lmr, unbinds) the session's RMR and waits for
// the bind to complete.
func (s *session) bind(ctx context.Context, lmr api.LMR, t api.LMRTriplet, priv api.MemPriv) (api.RMRContext, error) {
	ck := s.nextCookie()
	c, err := s.rmr.Bind(lmr, t, priv, api.VATypeVA, s.ep, ck, api.CompletionDefault)
	if err != nil {
		return 0, fmt.Errorf("RMR.Bind: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	var ev api.Event
	for {
		if err := s.next(ctx, false, &ev); err != nil {
			return 0, fmt.Errorf("waiting for the bind: %w", err)
		}
		switch {
		case ev.Number == api.RMRBindCompletionEvent && ev.RMRBind.Cookie == ck:
			if ev.RMRBind.Status != api.DTOSuccess {
				return 0, fmt.Errorf("bind completed with %v", ev.RMRBind.Status)
			}
			return c, nil
		case ev.Number == api.DTOCompletionEvent && ev.DTO.Op == api.OpSend && ev.DTO.Status == api.DTOSuccess:
			// an earlier reply
		default:
			return 0, fmt.Errorf("unexpected %v while waiting for the bind", ev.Number)
		}
	}
}
