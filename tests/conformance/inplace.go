package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/godat/godat/api"
)

// An in-place check makes at least inPlaceRounds transfers, and goes on
// for inPlaceFor (up to inPlaceMaxRounds): a provider that makes a
// completion visible before its data is placed shows it only in a round
// where the polling goroutine runs while the data is being placed, which
// on a busy machine may take many rounds. So it also goes on, for up to
// inPlaceMaxFor, until inPlaceRounds rounds were watched closely: rounds
// in which a poller was running when the completion it took became
// visible, which is when a completion that races its data shows. A
// poller watched closely if the call of Dequeue that found the completion
// began within inPlaceGap of the start of a call that found nothing, and
// took at most inPlaceCall: long enough for a provider that moves data
// inside the poll (tcp), shorter than placing the data of a transfer
// (so a completion that came before its data would have been seen in
// time), and far shorter than the time slice of a poller the scheduler
// set aside, wherever in its loop that happened.
const (
	inPlaceRounds    = 16
	inPlaceFor       = 200 * time.Millisecond
	inPlaceMaxFor    = 2 * time.Second
	inPlaceMaxRounds = 1024
	inPlaceGap       = 50 * time.Microsecond
	inPlaceCall      = 100 * time.Microsecond
)

// inPlaceDo runs round for each transfer of an in-place check; round
// reports whether its pollers watched closely.
func inPlaceDo(round func(int) bool) {
	start := time.Now()
	watched := 0
	for k := 0; k < inPlaceMaxRounds; k++ {
		since := time.Since(start)
		if k >= inPlaceRounds && since >= inPlaceFor && (watched >= inPlaceRounds || since >= inPlaceMaxFor) {
			return
		}
		if round(k) {
			watched++
		}
	}
}

// inPlaceSize is the size of those transfers, at most: large enough that
// placing the data takes a while, so that a completion that becomes
// visible before the data is placed is seen early.
const inPlaceSize = 4 << 20

// poller dequeues from an EVD, on a goroutine of its own, as fast as it
// can from before a transfer is posted, and at the first event it gets
// compares at once the destination of the transfer with what must be
// there. A provider that places data synchronously (loopback) shows a
// completion that races its data only to such a consumer.
type poller struct {
	t       *checkT
	evd     api.EVD
	what    string
	posting atomic.Bool // set by start: the transfer is being posted
	res     chan string // "" or what went wrong
	closely bool        // written before res: the poller watched closely (inPlaceGap), after start
}

// poll starts a poller on evd that, at its first event, expects the DTO
// completion of cookie and then dst to equal want.
func (t *checkT) poll(evd api.EVD, cookie api.Cookie, dst, want []byte, what string) *poller {
	p := &poller{t: t, evd: evd, what: what, res: make(chan string, 1)}
	started := make(chan struct{})
	t.spawn(func() {
		var ev api.Event
		deadline := time.Now().Add(eventTimeout)
		var empty time.Time // the start of the last call that found none, once posting
		for first := true; ; first = false {
			called := time.Now()
			err := evd.Dequeue(&ev)
			if first {
				close(started)
			}
			if err == nil {
				p.closely = !empty.IsZero() && called.Sub(empty) <= inPlaceGap && time.Since(called) <= inPlaceCall
				break
			}
			if p.posting.Load() {
				empty = called
			}
			if !errors.Is(err, api.ErrQueueEmpty) {
				p.res <- fmt.Sprintf("EVD.Dequeue: %v", err)
				return
			}
			if time.Now().After(deadline) {
				p.res <- fmt.Sprintf("no completion within %v", eventTimeout)
				return
			}
		}
		// Compare before anything else: the point is what the consumer
		// sees the moment the completion is visible.
		diff := lastDiff(dst, want)
		switch {
		case ev.Number != api.DTOCompletionEvent || ev.DTO.Cookie != cookie || ev.DTO.Status != api.DTOSuccess:
			p.res <- fmt.Sprintf("got %s, want the successful completion of cookie %d", describe(&ev), cookie)
		case diff >= 0:
			p.res <- fmt.Sprintf("the completion was visible before the data was in place (byte %d of %d differs)", diff, len(want))
		default:
			p.res <- ""
		}
	})
	<-started
	return p
}

// start tells the poller that the transfer is about to be posted.
func (p *poller) start() { p.posting.Store(true) }

// check waits for the poller's verdict, and reports whether the poller
// watched the completion closely (see inPlaceRounds).
func (p *poller) check() bool {
	p.t.T.Helper()
	select {
	case r := <-p.res:
		if r != "" {
			p.t.Fatalf("%s: %s", p.what, r)
		}
		return p.closely
	case <-time.After(eventTimeout + shortWait):
		p.t.Fatalf("%s: the polling consumer did not finish", p.what)
	}
	return false
}

// inPlaceLen is the transfer size of the in-place checks on p: inPlaceSize,
// or less where the EPs' message or RDMA limits are lower.
func (t *checkT) inPlaceLen(p *pair, rdma bool) int {
	t.T.Helper()
	n := inPlaceSize
	for _, ep := range []api.EP{p.cli.ep, p.srv.ep} {
		a := t.queryEP(ep).Attr
		lim := a.MaxMessageSize
		if rdma {
			lim = a.MaxRDMASize
		}
		if lim > 0 && int(lim) < n {
			n = int(lim)
		}
	}
	return n
}

// lastDiff returns the offset of a byte where dst differs from want, or
// -1. It compares from the end: data is placed front to back, so the end
// is what a completion that races its data finds missing, and a forward
// comparison could trail the copy and find nothing.
func lastDiff(dst, want []byte) int {
	const chunk = 4096
	for end := len(dst); end > 0; end -= chunk {
		start := max(0, end-chunk)
		if !bytes.Equal(dst[start:end], want[start:end]) {
			for i := end - 1; ; i-- {
				if dst[i] != want[i] {
					return i
				}
			}
		}
	}
	return -1
}

// inPlaceRDMA is the in-place check of an RDMA write (write) or read on a
// fresh pair: each round fills the side the operation reads from with the
// pattern seed+round*step, clears the side it writes, and a poller on the
// request EVD expects the written side to hold the pattern the moment the
// completion is visible.
func (t *checkT) inPlaceRDMA(write bool, seed, step int) {
	t.T.Helper()
	p := t.pair()
	n := t.inPlaceLen(p, true)
	var src, dst *region // src is read from, dst written to
	if write {
		src, dst = p.cli.region(n, rw), p.srv.region(n, remote)
	} else {
		src, dst = p.srv.region(n, remote), p.cli.region(n, rw)
	}
	inPlaceDo(func(round int) bool {
		want := src.fill(0, n, byte(seed+round*step))
		clear(dst.b)
		cookie := api.Cookie(round)
		if write {
			wp := t.poll(p.cli.req, cookie, dst.b[:n], want, fmt.Sprintf("round %d, an RDMA write of %d bytes", round, n))
			wp.start()
			t.noErr(p.cli.ep.PostRDMAWrite(src.iov(0, n), cookie, dst.rtr(0, n), api.CompletionDefault), "PostRDMAWrite")
			return wp.check()
		}
		rp := t.poll(p.cli.req, cookie, dst.b[:n], want, fmt.Sprintf("round %d, an RDMA read of %d bytes", round, n))
		rp.start()
		t.noErr(p.cli.ep.PostRDMARead(dst.iov(0, n), cookie, src.rtr(0, n), api.CompletionDefault), "PostRDMARead")
		return rp.check()
	})
}
