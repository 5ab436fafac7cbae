package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/godat/godat/api"
)

// The RDMA-write ping-pong ("wlat"), the latency test of perftest's
// ib_write_lat done through DAT: each side has a landing area the other
// RDMA-writes into, and learns of a message by watching the last byte of
// its landing area change, not from an event. The client writes ping i
// (its last byte a tag that differs from the previous one) into the
// server's window; the server, spinning on that byte, writes the pong of
// the same tag into the client's landing area; the client, spinning on
// its own last byte, then sends the next ping. Both sides post every
// write signalled and reap the completions while they spin; in the
// wlat-suppress variant they post them with CompletionSuppress, and only
// a failed write completes.
//
// Watching memory has no blocking form, so wlat runs in poll mode only.
// The spinning side calls EVD.Dequeue between two looks at the byte: it
// reaps its write completions and gives a provider that moves bytes only
// when its consumer calls in (tcp in poll mode) the chance to place the
// peer's write. The byte is read with an atomic load, so that the loop
// sees a store made by the device or by another goroutine of a software
// provider.

// isWLat reports whether benchmark op is one of the RDMA-write
// ping-pongs.
func isWLat(op string) bool { return op == "wlat" || op == "wlat-suppress" || op == "wlat-watch" }

// wlatMode is how a ping-pong's sides post their writes and watch for the
// peer's (the ops wlat, wlat-suppress and wlat-watch).
type wlatMode uint64

const (
	wlatSignalled  wlatMode = iota // every write signalled, completions reaped while watching
	wlatSuppressed                 // every write suppressed
	wlatWatch                      // dtest -W: each write's completion awaited, then nothing called while watching
)

// wlatModeOf returns the mode of ping-pong op.
func wlatModeOf(op string) wlatMode {
	switch op {
	case "wlat-suppress":
		return wlatSuppressed
	case "wlat-watch":
		return wlatWatch
	}
	return wlatSignalled
}

// wlatTag is the last byte of the i-th message (i from 0): never 0 (the
// value of fresh memory) and never the previous message's.
func wlatTag(i int) byte { return byte(1 + i%255) }

// lastByte reads b's last byte with an atomic load of the aligned 32-bit
// word that holds it. b must lie in memory from api.AllocMemory (page
// aligned), so that the word is inside it.
func lastByte(b []byte) byte {
	off := len(b) - 1
	base := unsafe.Pointer(unsafe.SliceData(b))
	w := atomic.LoadUint32((*uint32)(unsafe.Add(base, off&^3)))
	return byte(w >> (8 * (off & 3))) // little endian
}

// wlatSpinner watches a landing area for a tag while it reaps the write
// completions of its own side.
type wlatSpinner struct {
	l       *link
	land    []byte     // the landing area: the message is its bytes
	pending int        // writes posted and not completed
	from    api.Cookie // the cookie of the first write: older completions are another run's
	mode    wlatMode
	iov     [1]api.LMRTriplet
	ev      api.Event // reap's event (a local one would escape to the heap on every call)
}

// await spins until the landing area's last byte is tag, reaping write
// completions in between (in wlatWatch, calling nothing). ctx ends it,
// and so does a failed completion (the peer is gone).
func (s *wlatSpinner) await(ctx context.Context, tag byte) error {
	if s.mode == wlatWatch {
		for spins := 1; lastByte(s.land) != tag; spins++ {
			if spins&63 == 0 {
				runtime.Gosched()
				if err := ctx.Err(); err != nil {
					return api.ContextError(ctx)
				}
			}
		}
		return nil
	}
	return s.until(ctx, func() bool { return lastByte(s.land) == tag })
}

// until reaps events until done holds. It never parks: every 64 turns it
// lets another goroutine of this process run (an in-process peer sharing
// one P) and checks ctx.
func (s *wlatSpinner) until(ctx context.Context, done func() bool) error {
	for spins := 1; !done(); spins++ {
		if err := s.reap(); err != nil {
			return err
		}
		if spins&63 == 0 {
			runtime.Gosched()
			if err := ctx.Err(); err != nil {
				return api.ContextError(ctx)
			}
		}
	}
	return nil
}

// reap takes at most one event off the EVD into s.ev without blocking: a
// write's completion, a late completion of the control path or of an
// earlier run's writes (ignored), or a failure.
func (s *wlatSpinner) reap() error {
	ev := &s.ev
	err := s.l.dto.Dequeue(ev)
	if errors.Is(err, api.ErrQueueEmpty) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.l.dtoOK(ev); err != nil {
		return err
	}
	if ev.DTO.Op == api.OpRDMAWrite && ev.DTO.Cookie >= s.from {
		s.pending--
	}
	return nil
}

// drain reaps until at most left writes are outstanding.
func (s *wlatSpinner) drain(ctx context.Context, left int) error {
	return s.until(ctx, func() bool { return s.pending <= left })
}

// write posts one RDMA write of src, whose last byte it sets to tag
// first, to dst, signalled or suppressed as s.mode says. A suppressed
// write is not counted as pending: it completes only if it fails. In
// wlatWatch the caller then awaits the write's completion (drain to 0).
func (s *wlatSpinner) write(ctx context.Context, src []byte, srcTri api.LMRTriplet, dst api.RMRTriplet, tag byte, cookie api.Cookie) error {
	if err := s.drain(ctx, maxWindow-1); err != nil {
		return err
	}
	src[len(src)-1] = tag
	s.iov[0] = srcTri
	flags := api.CompletionDefault
	if s.mode == wlatSuppressed {
		flags = api.CompletionSuppress
	}
	if err := s.l.ep.PostRDMAWrite(s.iov[:], cookie, dst, flags); err != nil {
		return fmt.Errorf("PostRDMAWrite: %w", err)
	}
	if flags&api.CompletionSuppress == 0 {
		s.pending++
	}
	return nil
}

// wlat runs warm+iters RDMA-write round trips of size bytes between the
// client's landing area and the start of the server's window, and returns
// the one-way latency (half the mean round trip) of the timed ones.
// mode says how both sides post their writes and watch for the peer's.
func (c *client) wlat(ctx context.Context, w remoteWindow, size, warm, iters int, mode wlatMode, prog *progress) (_ time.Duration, err error) {
	if size > w.len {
		return 0, fmt.Errorf("size %d exceeds the server's %d-byte window", size, w.len)
	}
	land, err := newBuf(c.n, size, api.MemPrivAll)
	if err != nil {
		return 0, err
	}
	defer func() {
		if ferr := land.free(); err == nil && ferr != nil {
			err = ferr
		}
	}()
	req := newMsg(kindWLat).u64(tagLength, uint64(size)).u64(tagCount, uint64(warm+iters)).
		u64(tagAddr, uint64(land.prm.RegisteredAddress)).u64(tagRMR, uint64(land.prm.RMRContext))
	if mode != wlatSignalled {
		req.u64(tagWLatMode, uint64(mode))
	}
	if _, err := c.call(ctx, req, 1, nil); err != nil {
		return 0, err
	}
	src := c.local.b[c.slot : c.slot+size]
	srcTri := c.local.tri(c.slot, size)
	dst := w.at(0, size)
	sp := wlatSpinner{l: c.link, land: land.b[:size], mode: mode}
	var t0 time.Time
	for i := 0; i < warm+iters; i++ {
		if i == warm {
			t0 = time.Now()
			prog.start()
		}
		if err := sp.write(ctx, src, srcTri, dst, wlatTag(i), api.Cookie(i)); err != nil {
			return 0, err
		}
		if mode == wlatWatch {
			if err := sp.drain(ctx, 0); err != nil {
				return 0, err
			}
		}
		if err := sp.await(ctx, wlatTag(i)); err != nil {
			return 0, fmt.Errorf("waiting for pong %d: %w", i, err)
		}
		prog.add(1)
	}
	d := time.Since(t0) / time.Duration(2*iters)
	if err := sp.drain(ctx, 0); err != nil {
		return 0, err
	}
	return d, nil
}

// wlatServe is the server side of an RDMA-write ping-pong (BENCH_WLAT): it
// answers count pings landing at the start of the window with pongs
// written to dst, the client's area, then returns to the request loop
// without waiting for its last writes: their completions go to the loop,
// which skips successful ones and fails on an error, and which must see
// the receive of the client's next request, a completion that reap would
// drop. A failure (the client gone) ends the session.
func (s *session) wlatServe(ctx context.Context, count int, dst api.RMRTriplet, mode wlatMode) error {
	size := int(dst.Length)
	src := s.local.b[s.slot : s.slot+size]
	srcTri := s.local.tri(s.slot, size)
	sp := wlatSpinner{l: s.link, land: s.win.b[:size], from: s.cookie + 1, mode: mode}
	for i := 0; i < count; i++ {
		tag := wlatTag(i)
		if err := sp.await(ctx, tag); err != nil {
			return fmt.Errorf("RDMA-write ping %d: %w", i, err)
		}
		s.idle.tick()
		if err := sp.write(ctx, src, srcTri, dst, tag, s.nextCookie()); err != nil {
			return err
		}
		// In wlatWatch each pong's completion is awaited, but not the
		// last one's: the client, which has its pong, may send its next
		// request meanwhile, and reap would drop that receive's
		// completion, which comes ahead of the write's when the ACK of
		// the pong rides on the request.
		if mode == wlatWatch && i < count-1 {
			if err := sp.drain(ctx, 0); err != nil {
				return err
			}
		}
	}
	return nil
}
