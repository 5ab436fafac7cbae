package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/godat/godat/api"
)

// evdEventGroups checks how events leave and enter an EVD: waiting,
// dequeuing, posting software events, resizing the queue and querying it.
var evdEventGroups = []group{
	{page: "dat_evd_wait", checks: []check{
		{"DESCRIPTION", "a consumer that spun on Dequeue may wait instead at any time: a large send posted after a spinning ping-pong completes while both consumers wait, and arrives whole", func(t *checkT) {
			p := t.pair()
			t.spinPingPong(p, spinFor)
			n := int(min(16<<20, t.queryEP(p.cli.ep).Attr.MaxMessageSize, t.queryEP(p.srv.ep).Attr.MaxMessageSize))
			dst := p.srv.region(n, rw)
			src := p.cli.region(n, rw)
			want := src.fill(0, n, 0x5A)
			p.srv.postRecv(dst, 0, n, 7)
			p.cli.postSend(src, 0, n, 7)
			p.cli.expectReq(7, api.DTOSuccess, fmt.Sprintf("a send of %d bytes its poster waits for", n))
			if ev := p.srv.expectRecv(7, api.DTOSuccess, "its receive"); ev.DTO.Length != uint32(n) || !bytes.Equal(dst.b, want) {
				t.Fatalf("the receive of %d bytes completed with length %d, or its buffer does not hold the message", n, ev.DTO.Length)
			}
		}},
		{"DESCRIPTION", "a threshold larger than the queue length is DAT_INVALID_PARAMETER", func(t *checkT) {
			e, q := t.node().seEVD(8, nil)
			_, _, err := waitN(e, q+1, shortWait)
			t.wantErr(err, api.ErrInvalidParameter, "Wait with threshold qlen+1")
		}},
		{"DESCRIPTION", "a threshold of zero or less is DAT_INVALID_PARAMETER", func(t *checkT) {
			e := t.oneSE()
			for _, th := range []int{0, -1} {
				_, _, err := waitN(e, th, shortWait)
				t.wantErr(err, api.ErrInvalidParameter, "Wait with a non-positive threshold")
			}
			t.expectSE(t.dequeue(e, "EVD.Dequeue"), e, 1, "the event the refused waits left queued")
		}},
		{"RETURN VALUES", "the context deadline ends the wait with DAT_TIMEOUT_EXPIRED and dequeues nothing", func(t *checkT) {
			e := t.oneSE()
			_, _, err := waitN(e, 2, 100*time.Millisecond)
			t.wantErr(err, api.ErrTimeoutExpired, "Wait for 2 events with 1 queued and a 100ms deadline")
			t.expectSE(t.dequeue(e, "EVD.Dequeue after the timeout"), e, 1, "the event still queued")
		}},
		{"DESCRIPTION", "after DAT_TIMEOUT_EXPIRED nmore is the number of queued events", func(t *checkT) {
			e := t.oneSE()
			_, n, err := waitN(e, 2, 100*time.Millisecond)
			t.wantErr(err, api.ErrTimeoutExpired, "Wait for 2 events with 1 queued")
			if n != 1 {
				t.Fatalf("nmore %d after the timeout, want 1 (the queued event)", n)
			}
		}},
		{"RETURN VALUES", "cancelling the context ends the wait with DAT_INTERRUPTED_CALL", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			ctx, cancel := context.WithCancel(t.ctx)
			t.spawn(func() {
				time.Sleep(20 * time.Millisecond)
				cancel()
			})
			var ev api.Event
			_, err := e.Wait(ctx, 1, &ev)
			cancel()
			t.wantErr(err, api.ErrInterruptedCall, "Wait whose context is cancelled")
		}},
		{"DESCRIPTION", "a blocked waiter wakes once the threshold is reached and gets the first event", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			c := t.goWait(e, 2, eventTimeout)
			t.postSE(e, "first")
			t.postSE(e, "second")
			r := t.waiterGot(c, e, "first", "the waiter")
			if r.n < 1 {
				t.Fatalf("nmore %d, want at least threshold-1 = 1", r.n)
			}
		}},
		{"DESCRIPTION", "a waiter for 4 events wakes once 4 receive completions are queued and gets the first", func(t *checkT) {
			p := t.pair()
			rr := p.cli.region(64, rw)
			sr := p.srv.region(64, rw)
			for i := range 4 {
				p.cli.postRecv(rr, 16*i, 16, api.Cookie(10+i))
			}
			c := t.goWait(p.cli.recv, 4, eventTimeout)
			for i := range 4 {
				p.srv.postSend(sr, 16*i, 8, api.Cookie(20+i))
			}
			r := t.recvResult(c, "Wait(threshold 4)")
			t.noErr(r.err, "Wait(threshold 4)")
			if r.ev.Number != api.DTOCompletionEvent || r.ev.DTO.Cookie != 10 || r.n < 3 {
				t.Fatalf("Wait(threshold 4) returned %s with nmore %d, want the receive of cookie 10 and nmore >= 3", describe(&r.ev), r.n)
			}
			for i := 1; i < 4; i++ {
				p.cli.expectRecv(api.Cookie(10+i), api.DTOSuccess, "a later receive")
			}
			for i := range 4 {
				p.srv.expectReq(api.Cookie(20+i), api.DTOSuccess, "a send")
			}
		}},
		{"DESCRIPTION", "a Wait for 2 events on an EVD holding 1 blocks until the second arrives (checked for 20 ms)", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			t.postSE(e, "first")
			c := t.goWait(e, 2, eventTimeout)
			select {
			case r := <-c:
				t.Fatalf("Wait(threshold 2) returned with one event queued: %v", r.err)
			case <-time.After(20 * time.Millisecond):
			}
			t.postSE(e, "second")
			if r := t.waiterGot(c, e, "first", "the waiter"); r.n < 1 {
				t.Fatalf("nmore %d, want at least threshold-1 = 1", r.n)
			}
		}},
		{"DESCRIPTION", "a waiter blocked after the consumer polled the EVD empty wakes for the next completion", func(t *checkT) {
			// A provider may stop asking its device for completion
			// notifications while a consumer polls; a Wait must
			// still hear of the next completion.
			p := t.pair()
			rr := p.cli.region(64, api.MemPrivLocalWrite|api.MemPrivLocalRead)
			sr := p.srv.region(64, api.MemPrivLocalRead|api.MemPrivLocalWrite)
			p.cli.postRecv(rr, 0, 64, 7)
			t.pollEmpty(p.cli.recv)
			c := t.goWait(p.cli.recv, 1, eventTimeout)
			// Let the wait begin before the message exists.
			time.Sleep(20 * time.Millisecond)
			p.srv.postSend(sr, 0, 12, 8)
			r := t.recvResult(c, "Wait after polling")
			t.noErr(r.err, "Wait after polling")
			if r.ev.Number != api.DTOCompletionEvent || r.ev.DTO.EP != p.cli.ep || r.ev.DTO.Cookie != 7 || r.ev.DTO.Status != api.DTOSuccess {
				t.Fatalf("Wait after polling returned %s, want the receive of cookie 7", describe(&r.ev))
			}
			p.srv.expectReq(8, api.DTOSuccess, "the send completion")
		}},
		{"DESCRIPTION", "on success nmore is the number of events left", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			for i := range 3 {
				t.postSE(e, i)
			}
			ev, n, err := waitN(e, 3, eventTimeout)
			t.noErr(err, "Wait for 3 events")
			t.expectSE(ev, e, 0, "the first event")
			if n != 2 {
				t.Fatalf("nmore %d, want 2", n)
			}
		}},
		{"DESCRIPTION", "events of one stream come out in the order they were queued", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			for i := range 5 {
				t.postSE(e, i)
			}
			for i := range 5 {
				ev, _, err := waitN(e, 1, eventTimeout)
				t.noErr(err, "EVD.Wait")
				t.expectSE(ev, e, i, "the next event in order")
			}
		}},
		{"RETURN VALUES", "a second concurrent waiter is DAT_INVALID_STATE", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			a, b := t.goWait(e, 1, eventTimeout), t.goWait(e, 1, eventTimeout)
			var first result
			var other <-chan result
			select {
			case first = <-a:
				other = b
			case first = <-b:
				other = a
			case <-time.After(eventTimeout + shortWait):
				t.Fatalf("two goroutines wait on one EVD and neither was refused")
			}
			if first.err == nil || !errors.Is(first.err, api.ErrInvalidState) {
				t.Fatalf("the first of two concurrent waits to return (with no event posted) got %v, want DAT_INVALID_STATE", first.err)
			}
			t.postSE(e, "x")
			r := t.recvResult(other, "the remaining waiter")
			t.noErr(r.err, "the remaining waiter")
			t.expectSE(r.ev, e, "x", "the remaining waiter's event")
		}},
		{"DESCRIPTION", "a threshold above 1 on an EVD fed by an unsignalled or a solicited-wait receive stream is DAT_INVALID_STATE", func(t *checkT) {
			for _, f := range []api.CompletionFlags{api.CompletionUnsignalled, api.CompletionSolicitedWait} {
				n := t.node()
				a := n.epAttr()
				a.RecvCompletionFlags = f
				n.newEP(a)
				_, _, err := waitN(n.recv, 2, shortWait)
				t.wantErr(err, api.ErrInvalidState, fmt.Sprintf("Wait(threshold 2) on the receive EVD of an EP with receive completion flags %#x", uint32(f)))
			}
		}},
		{"DESCRIPTION", "a threshold above 1 on an EVD fed by an unsignalled completion stream is DAT_INVALID_STATE", func(t *checkT) {
			n := t.node()
			a := n.epAttr()
			a.RequestCompletionFlags = api.CompletionUnsignalled
			n.newEP(a)
			_, _, err := waitN(n.req, 2, shortWait)
			t.wantErr(err, api.ErrInvalidState, "Wait(threshold 2) on the request EVD of an unsignalled EP")
		}},
	}},

	{page: "dat_evd_dequeue", checks: []check{
		{"RETURN VALUES", "an empty queue is DAT_QUEUE_EMPTY", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			t.expectEmpty(e, "Dequeue of a new EVD")
		}},
		{"DESCRIPTION", "Dequeue removes the first event each time", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			t.postSE(e, "a")
			t.postSE(e, "b")
			t.expectSE(t.dequeue(e, "EVD.Dequeue"), e, "a", "the first Dequeue")
			t.expectSE(t.dequeue(e, "EVD.Dequeue"), e, "b", "the second Dequeue")
			t.expectEmpty(e, "the third Dequeue")
		}},
		{"RETURN VALUES", "Dequeue while a waiter is blocked on the EVD is DAT_INVALID_STATE", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			c := t.goWait(e, 1, eventTimeout)
			t.untilWaiter(e, "Dequeue during a Wait")
			t.postSE(e, "x")
			t.waiterGot(c, e, "x", "the waiter")
		}},
	}},

	{page: "dat_evd_post_se", checks: []check{
		{"DESCRIPTION", "a software event is delivered with the consumer's value on the EVD it was posted to", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			type token struct{ s string }
			v := &token{"mine"}
			t.postSE(e, v)
			t.expectSE(t.wait(e, "the software event"), e, v, "the software event")
		}},
		{"DESCRIPTION", "on a full queue PostSE is DAT_QUEUE_FULL, the event is not queued and the async EVD gets nothing", func(t *checkT) {
			n := t.node()
			e, q := n.seEVD(4, nil)
			if q > 4096 {
				t.Skipf("the provider made a queue of %d events for 4", q)
			}
			for i := range q {
				t.postSE(e, i)
			}
			t.wantErr(e.PostSE(&api.Event{Number: api.SoftwareEvent, Software: q}), api.ErrQueueFull, "PostSE on a full EVD")
			for i := range q {
				t.expectSE(t.dequeue(e, "EVD.Dequeue"), e, i, "a queued event")
			}
			t.expectEmpty(e, "the EVD after dequeuing all it held")
			t.expectEmpty(n.async, "the async EVD after a refused PostSE")
		}},
		{"RETURN VALUES", "a nil event is DAT_INVALID_PARAMETER", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			t.wantErr(e.PostSE(nil), api.ErrInvalidParameter, "PostSE(nil)")
		}},
	}},

	{page: "dat_evd_resize", checks: []check{
		{"DESCRIPTION", "resizing below the number of queued events is DAT_INVALID_STATE and loses nothing", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			for i := range 4 {
				t.postSE(e, i)
			}
			t.wantErr(e.Resize(2), api.ErrInvalidState, "Resize(2) with 4 events queued")
			for i := range 4 {
				t.expectSE(t.dequeue(e, "EVD.Dequeue"), e, i, "an event queued before the refused Resize")
			}
		}},
		{"DESCRIPTION", "resizing to one below the queued events is DAT_INVALID_STATE; to exactly their number keeps them all", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			for i := range 4 {
				t.postSE(e, i)
			}
			t.wantErr(e.Resize(3), api.ErrInvalidState, "Resize(3) with 4 events queued")
			t.noErr(e.Resize(4), "Resize(4) with 4 events queued")
			for i := range 4 {
				t.expectSE(t.dequeue(e, "EVD.Dequeue"), e, i, "an event queued before the Resize")
			}
			t.expectEmpty(e, "the EVD after its 4 events")
		}},
		{"DESCRIPTION", "growing keeps the queued events and Query reports at least the new length", func(t *checkT) {
			n := t.node()
			e, _ := n.seEVD(4, nil)
			t.postSE(e, "kept")
			want := min(32, n.attr.MaxEVDQLen)
			if n.attr.MaxEVDQLen <= 0 {
				want = 32
			}
			t.noErr(e.Resize(want), "EVD.Resize")
			if q := t.queryEVD(e).QLen; q < want {
				t.Errorf("QLen %d after Resize(%d)", q, want)
			}
			t.expectSE(t.dequeue(e, "EVD.Dequeue"), e, "kept", "the event queued before Resize")
		}},
		{"RETURN VALUES", "a queue length of zero or less is DAT_INVALID_PARAMETER", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			t.wantErr(e.Resize(0), api.ErrInvalidParameter, "Resize(0)")
			t.wantErr(e.Resize(-3), api.ErrInvalidParameter, "Resize(-3)")
		}},
	}},

	{page: "dat_evd_query", checks: []check{
		{"DESCRIPTION", "Query reports at least the requested queue length, the flags, the CNO and the IA", func(t *checkT) {
			n := t.node()
			c := n.cno(nil)
			e, err := n.ia.CreateEVD(8, c, api.EVDSoftware|api.EVDDTO)
			t.noErr(err, "IA.CreateEVD")
			p := t.queryEVD(e)
			if p.QLen < 8 || p.Flags != api.EVDSoftware|api.EVDDTO || p.CNO != c || p.IA != n.ia {
				t.Fatalf("EVD.Query = {qlen %d, flags %#x, same CNO %v, same IA %v}, want {>=8, %#x, true, true}",
					p.QLen, p.Flags, p.CNO == c, p.IA == n.ia, api.EVDSoftware|api.EVDDTO)
			}
		}},
		{"DESCRIPTION", "a new EVD is enabled and waitable", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			st := t.queryEVD(e).State
			if st&api.EVDStateEnabled == 0 || st&api.EVDStateWaitable == 0 {
				t.Fatalf("EVD state %#x, want ENABLED and WAITABLE", st)
			}
		}},
	}},
}
