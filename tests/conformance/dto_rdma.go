package conformance

import (
	"bytes"
	"fmt"
	"runtime"
	"time"

	"github.com/godat/godat/api"
)

// rdmaGroups checks the calls that reach remote memory through an RMR:
// dat_ep_post_rdma_write(3DAT), dat_ep_post_rdma_read(3DAT), the DAT 2.0
// read to an RMR, and a send that invalidates the peer's RMR.
var rdmaGroups = []group{
	{page: "dat_ep_post_rdma_write", checks: []check{
		// Placing an RDMA write needs nothing of the target's consumer; a
		// consumer that spun on its EVDs and then watches memory instead
		// (OFA's dtest -W) is the case that shows a provider leaning on it.
		// Writes go both ways, since a provider may hand only one end of
		// the connection to its spinning consumer.
		{"DESCRIPTION", "right after both consumers stopped spinning on Dequeue, RDMA writes each way are placed while neither consumer makes a call", func(t *checkT) {
			p := t.pair()
			t.spinPingPong(p, spinFor)
			const n = 64 << 10
			toSrv, fromCli := p.srv.region(n, remote), p.cli.region(n, rw)
			toCli, fromSrv := p.cli.region(n, remote), p.srv.region(n, rw)
			wantSrv, wantCli := fromCli.fill(0, n, 0x3C), fromSrv.fill(0, n, 0xC3)
			t.noErr(p.cli.ep.PostRDMAWrite(fromCli.iov(0, n), 9, toSrv.rtr(0, n), api.CompletionDefault), "the client's PostRDMAWrite")
			t.noErr(p.srv.ep.PostRDMAWrite(fromSrv.iov(0, n), 9, toCli.rtr(0, n), api.CompletionDefault), "the server's PostRDMAWrite")
			for end := time.Now().Add(eventTimeout); !bytes.Equal(toSrv.b, wantSrv) || !bytes.Equal(toCli.b, wantCli); {
				if time.Now().After(end) {
					t.Fatalf("within %v of their posts, with no consumer calling, the server holds the client's write: %v; the client holds the server's: %v",
						eventTimeout, bytes.Equal(toSrv.b, wantSrv), bytes.Equal(toCli.b, wantCli))
				}
				runtime.Gosched()
			}
			p.cli.expectReq(9, api.DTOSuccess, "the client's RDMA write")
			p.srv.expectReq(9, api.DTOSuccess, "the server's RDMA write")
		}},
		{"DESCRIPTION", "an RDMA write places its bytes in the remote window by the time it completes", func(t *checkT) {
			p := t.pair()
			dst := p.srv.region(256, remote)
			src := p.cli.region(100, rw)
			want := src.fill(0, 100, 0x77)
			snap := dst.snapshot()
			t.noErr(p.cli.ep.PostRDMAWrite(src.iov(0, 100), 5, dst.rtr(16, 100), api.CompletionDefault), "PostRDMAWrite")
			ev := p.cli.expectReq(5, api.DTOSuccess, "the RDMA write completion")
			if ev.DTO.Op != api.OpRDMAWrite || ev.DTO.Length != 100 {
				t.Errorf("completion op %v length %d, want %v length 100", ev.DTO.Op, ev.DTO.Length, api.OpRDMAWrite)
			}
			if !bytes.Equal(dst.b[16:116], want) {
				t.Fatalf("the remote window does not hold the written bytes once the write completed")
			}
			copy(snap[dst.page+16:], want)
			dst.unchanged(snap, "bytes outside the written range")
		}},
		{"DESCRIPTION (DESIGN §4)", "a consumer polling the request EVD while an RDMA write runs finds the bytes placed the moment the write's completion is visible", func(t *checkT) {
			t.inPlaceRDMA(true, 3, 41)
		}},
		{"DESCRIPTION", "an RDMA write consumes no receive at the target", func(t *checkT) {
			p := t.pair()
			dst := p.srv.region(64, remote)
			rr := p.srv.region(64, rw)
			p.srv.postRecv(rr, 0, 64, 1)
			src := p.cli.region(64, rw)
			t.noErr(p.cli.ep.PostRDMAWrite(src.iov(0, 32), 2, dst.rtr(0, 32), api.CompletionDefault), "PostRDMAWrite")
			p.cli.expectReq(2, api.DTOSuccess, "the RDMA write")
			p.cli.postSend(src, 0, 5, 3)
			p.cli.expectReq(3, api.DTOSuccess, "the send after it")
			ev := p.srv.expectRecv(1, api.DTOSuccess, "the receive, consumed by the send and not by the write")
			if ev.DTO.Length != 5 || ev.DTO.Op != api.OpReceive {
				t.Fatalf("got %s, want the 5-byte send", describe(&ev))
			}
		}},
		{"DESCRIPTION", "a multi-segment local IOV is written contiguously", func(t *checkT) {
			p := t.pair()
			if m := t.queryEP(p.cli.ep).Attr.MaxRequestIOV; m < 3 {
				t.Skipf("MaxRequestIOV is %d", m)
			}
			a, b := p.cli.region(64, rw), p.cli.region(64, rw)
			x, y, z := a.fill(0, 5, 1), b.fill(10, 9, 2), a.fill(40, 3, 3)
			dst := p.srv.region(64, remote)
			t.noErr(p.cli.ep.PostRDMAWrite([]api.LMRTriplet{a.tr(0, 5), b.tr(10, 9), a.tr(40, 3)}, 1, dst.rtr(8, 17), api.CompletionDefault), "PostRDMAWrite with 3 segments")
			p.cli.expectReq(1, api.DTOSuccess, "the RDMA write")
			want := append(append(append([]byte{}, x...), y...), z...)
			if !bytes.Equal(dst.b[8:25], want) {
				t.Fatalf("remote bytes %x, want %x", dst.b[8:25], want)
			}
		}},
		{"DESCRIPTION", "a zero-length RDMA write completes successfully and changes nothing", func(t *checkT) {
			p := t.pair()
			dst := p.srv.region(64, remote)
			snap := dst.snapshot()
			src := p.cli.region(8, rw)
			src.fill(0, 8, 9)
			t.noErr(p.cli.ep.PostRDMAWrite(src.iov(0, 0), 1, dst.rtr(0, 0), api.CompletionDefault), "zero-length PostRDMAWrite")
			p.cli.expectReq(1, api.DTOSuccess, "the zero-length RDMA write")
			dst.unchanged(snap, "a zero-length RDMA write")
		}},
		{"RETURN VALUES", "a wrong RMR context: REMOTE_ACCESS, BROKEN, and no target byte changes", func(t *checkT) {
			t.rdmaFault(remote, 0x31, 0, rdmaWriteTo(64, wrongContext, api.CompletionDefault))
		}},
		{"RETURN VALUES", "a write running past the end of the remote region: REMOTE_ACCESS, BROKEN, and no byte changes", func(t *checkT) {
			t.rdmaFault(remote, 0x32, 0, rdmaWriteTo(16, pastEnd(8), api.CompletionDefault))
		}},
		{"RETURN VALUES", "a write reaching one byte past the end of the remote region: REMOTE_ACCESS, BROKEN, and no byte changes", func(t *checkT) {
			t.rdmaFault(remote, 0x38, 0, rdmaWriteTo(17, pastEnd(1), api.CompletionDefault))
		}},
		{"RETURN VALUES", "a local IOV one byte longer than the remote segment is DAT_LENGTH_ERROR, or fails, and nothing outside the segment is written", func(t *checkT) {
			p := t.pair()
			dst := p.srv.region(64, remote)
			src := p.cli.region(64, rw)
			src.fill(0, 64, 0x39)
			t.lengthFault(p, dst, 8, 24, "an RDMA write of 17 bytes into a 16-byte remote segment at 8", func(c api.Cookie) error {
				return p.cli.ep.PostRDMAWrite(src.iov(0, 17), c, dst.rtr(8, 16), api.CompletionDefault)
			})
		}},
		{"PARAMETERS", "DAT_COMPLETION_SUPPRESS_FLAG: a suppressed write the target refuses still completes: REMOTE_ACCESS, BROKEN, and no byte changes", func(t *checkT) {
			t.rdmaFault(remote, 0x3A, 0, rdmaWriteTo(16, wrongContext, api.CompletionSuppress))
		}},
		{"RETURN VALUES", "a write starting before the remote region: REMOTE_ACCESS, BROKEN, and no byte changes", func(t *checkT) {
			t.rdmaFault(remote, 0x33, 0, rdmaWriteTo(16, beforeStart, api.CompletionDefault))
		}},
		{"RETURN VALUES", "a region without remote write privilege: REMOTE_ACCESS, BROKEN, and no byte changes", func(t *checkT) {
			t.rdmaFault(rw|api.MemPrivRemoteRead, 0x34, 0, rdmaWriteTo(16, atStart, api.CompletionDefault))
		}},
		{"RETURN VALUES", "a region in another PZ than the target EP's: REMOTE_ACCESS, BROKEN, and no byte changes", func(t *checkT) {
			p := t.pair()
			dst := p.srv.regionIn(p.srv.newPZ(), 64, remote)
			src := p.cli.region(64, rw)
			src.fill(0, 64, 0x35)
			t.remoteFault(p, dst, func(c api.Cookie) error {
				return p.cli.ep.PostRDMAWrite(src.iov(0, 16), c, dst.rtr(0, 16), api.CompletionDefault)
			})
		}},
		{"RETURN VALUES", "a local source outside its LMR is refused or fails locally; the target is untouched", func(t *checkT) {
			p := t.pair()
			dst := p.srv.region(64, remote)
			src := p.cli.region(64, rw)
			src.fill(0, 64, 0x36)
			t.localFault(p, dst, func(c api.Cookie) error {
				return p.cli.ep.PostRDMAWrite([]api.LMRTriplet{src.tr(len(src.b)-8, 16)}, c, dst.rtr(0, 16), api.CompletionDefault)
			}, func() { t.works(p.cli, p.srv, "after the refused RDMA write") }, api.DTOErrLocalProtection, api.DTOErrLocalLength)
		}},
	}},

	{page: "dat_ep_post_rdma_read", checks: []check{
		{"DESCRIPTION", "an RDMA read fetches the remote bytes into the local buffer", func(t *checkT) {
			p := t.pair()
			src := p.srv.region(128, remote)
			want := src.fill(32, 64, 0x5E)
			dst := p.cli.region(64, rw)
			t.noErr(p.cli.ep.PostRDMARead(dst.iov(0, 64), 4, src.rtr(32, 64), api.CompletionDefault), "PostRDMARead")
			ev := p.cli.expectReq(4, api.DTOSuccess, "the RDMA read completion")
			if ev.DTO.Op != api.OpRDMARead || ev.DTO.Length != 64 {
				t.Errorf("completion op %v length %d, want %v length 64", ev.DTO.Op, ev.DTO.Length, api.OpRDMARead)
			}
			if !bytes.Equal(dst.b[:64], want) {
				t.Fatalf("the local buffer does not hold the remote bytes")
			}
		}},
		{"DESCRIPTION (DESIGN §4)", "a consumer polling the request EVD while an RDMA read runs finds the bytes in the local buffer the moment the read's completion is visible", func(t *checkT) {
			t.inPlaceRDMA(false, 5, 43)
		}},
		// The page: a peer that gets more reads than its incoming limit
		// breaks the connection. With the limits matched, that is the
		// provider's to prevent: it keeps reads past its outgoing limit
		// back until earlier ones complete.
		{"DESCRIPTION", "with MaxRDMAReadOut 1 against the peer's MaxRDMAReadIn 1, large reads posted together all complete in post order and the connection stays up", func(t *checkT) {
			srv, cli := t.serverNode(), t.node()
			ca, sa := cli.epAttr(), srv.epAttr()
			ca.MaxRDMAReadOut, sa.MaxRDMAReadIn = 1, 1
			p := t.pairWith(pairCfg{cli: cli, srv: srv, cliAttr: ca, srvAttr: sa})
			const reads, size = 8, 256 << 10
			a := t.queryEP(p.cli.ep).Attr
			if a.MaxRequestDTOs < reads || a.MaxRDMASize < size {
				t.Skipf("MaxRequestDTOs %d, MaxRDMASize %d: fewer than %d reads of %d bytes", a.MaxRequestDTOs, a.MaxRDMASize, reads, size)
			}
			src := p.srv.region(size, remote)
			want := src.fill(0, size, 0x71)
			dst := p.cli.region(reads*size, rw)
			for i := range reads {
				t.noErr(p.cli.ep.PostRDMARead(dst.iov(i*size, size), api.Cookie(i), src.rtr(0, size), api.CompletionDefault), fmt.Sprintf("PostRDMARead %d", i))
			}
			for i := range reads {
				p.cli.expectReq(api.Cookie(i), api.DTOSuccess, fmt.Sprintf("RDMA read %d of %d", i, reads))
				if !bytes.Equal(dst.b[i*size:(i+1)*size], want) {
					t.Fatalf("RDMA read %d did not fetch the remote bytes", i)
				}
			}
			t.wantState(p.cli.ep, api.EPConnected, "the client EP after the reads")
			t.wantState(p.srv.ep, api.EPConnected, "the server EP after the reads")
		}},
		{"DESCRIPTION", "a multi-segment local IOV is filled in IOV order", func(t *checkT) {
			p := t.pair()
			if m := t.queryEP(p.cli.ep).Attr.MaxRequestIOV; m < 2 {
				t.Skipf("MaxRequestIOV is %d", m)
			}
			src := p.srv.region(64, remote)
			want := src.fill(0, 30, 0x61)
			a, b := p.cli.region(64, rw), p.cli.region(64, rw)
			t.noErr(p.cli.ep.PostRDMARead([]api.LMRTriplet{a.tr(4, 12), b.tr(20, 18)}, 1, src.rtr(0, 30), api.CompletionDefault), "PostRDMARead with 2 segments")
			p.cli.expectReq(1, api.DTOSuccess, "the RDMA read")
			if !bytes.Equal(a.b[4:16], want[:12]) || !bytes.Equal(b.b[20:38], want[12:]) {
				t.Fatalf("the read bytes are not scattered in IOV order")
			}
		}},
		{"RETURN VALUES", "a wrong RMR context: REMOTE_ACCESS, BROKEN, target untouched", func(t *checkT) {
			t.rdmaFault(remote, 0, 0x62, rdmaReadFrom(64, wrongContext))
		}},
		{"RETURN VALUES", "a read running past the end of the remote region: REMOTE_ACCESS, BROKEN", func(t *checkT) {
			t.rdmaFault(remote, 0, 0, rdmaReadFrom(16, pastEnd(8)))
		}},
		{"RETURN VALUES", "a region without remote read privilege: REMOTE_ACCESS, BROKEN", func(t *checkT) {
			t.rdmaFault(rw|api.MemPrivRemoteWrite, 0, 0x63, rdmaReadFrom(16, atStart))
		}},
		{"RETURN VALUES", "a remote segment longer than the local IOV is DAT_LENGTH_ERROR or a local length error, and nothing outside the IOV is written", func(t *checkT) {
			t.readTooShort(16, 64)
		}},
		{"RETURN VALUES", "a local IOV one byte shorter than the remote segment is DAT_LENGTH_ERROR or a local length error, and nothing outside the IOV is written", func(t *checkT) {
			t.readTooShort(63, 64)
		}},
		{"RETURN VALUES", "a read reaching one byte past the end of the remote region: REMOTE_ACCESS, BROKEN", func(t *checkT) {
			t.rdmaFault(remote, 0, 0, rdmaReadFrom(17, pastEnd(1)))
		}},
		{"RETURN VALUES", "a local buffer without local write privilege is refused or fails locally, and is not written", func(t *checkT) {
			p := t.pair()
			src := p.srv.region(64, remote)
			src.fill(0, 64, 0x64)
			dst := p.cli.region(64, api.MemPrivLocalRead)
			t.localFault(p, dst, func(c api.Cookie) error {
				return p.cli.ep.PostRDMARead(dst.iov(0, 16), c, src.rtr(0, 16), api.CompletionDefault)
			}, func() {
				ok := p.cli.region(16, rw)
				t.noErr(p.cli.ep.PostRDMARead(ok.iov(0, 16), 2, src.rtr(0, 16), api.CompletionDefault), "a good PostRDMARead")
				p.cli.expectReq(2, api.DTOSuccess, "the good read, next after the refused one")
			})
		}},
	}},

	{page: "dat_ep_post_rdma_read_to_rmr", checks: []check{
		{"DESCRIPTION (DAT 2.0 dat.h)", "an RDMA read into a local RMR window places the remote bytes there", func(t *checkT) {
			p := t.pair()
			src := p.srv.region(64, remote)
			want := src.fill(0, 48, 0x71)
			l, _, lt := p.cli.window(128, 16, 64)
			lt.Length = 48
			t.noErr(p.cli.ep.PostRDMAReadToRMR(lt, 3, src.rtr(0, 48), api.CompletionDefault), "PostRDMAReadToRMR")
			ev := p.cli.expectReq(3, api.DTOSuccess, "the read-to-RMR completion")
			if ev.DTO.Op != api.OpRDMARead {
				t.Errorf("completion op %v, want %v", ev.DTO.Op, api.OpRDMARead)
			}
			if !bytes.Equal(l.b[16:64], want) {
				t.Fatalf("the local RMR window does not hold the remote bytes")
			}
		}},
		{"RETURN VALUES (DAT 2.0 dat.h)", "a local triplet one byte shorter than the remote segment is DAT_LENGTH_ERROR, or fails, and nothing outside the triplet is written", func(t *checkT) {
			p := t.pair()
			src := p.srv.region(64, remote)
			src.fill(0, 64, 0x72)
			l, _, lt := p.cli.window(128, 16, 64)
			lt.Length = 47
			t.lengthFault(p, l, 16, 16+47, "an RDMA read of 48 bytes into a 47-byte local triplet at 16", func(c api.Cookie) error {
				return p.cli.ep.PostRDMAReadToRMR(lt, c, src.rtr(0, 48), api.CompletionDefault)
			})
		}},
	}},

	{page: "dat_ep_post_send_with_invalidate", checks: []check{
		{"DESCRIPTION (DAT 2.0 dat.h)", "the receiver's completion is RECEIVE_WITH_INVALIDATE and names the invalidated RMR context", func(t *checkT) {
			x := t.sendInvalidate(true, 1)
			ev := x.p.srv.expectRecv(1, api.DTOSuccess, "the receive")
			if rt := x.rt; ev.DTO.Op != api.OpReceiveWithInvalidate || ev.DTO.RMRContext != rt.RMRContext {
				t.Fatalf("receive completion op %v context %#x, want %v with context %#x", ev.DTO.Op, ev.DTO.RMRContext, api.OpReceiveWithInvalidate, rt.RMRContext)
			}
		}},
		{"DESCRIPTION (DAT 2.0 dat.h)", "after the send-with-invalidate is received, the invalidated RMR context no longer grants access", func(t *checkT) {
			x := t.sendInvalidate(true, 1)
			x.p.srv.expectRecv(1, api.DTOSuccess, "its receive")
			x.sr.fill(0, 64, 0x5A)
			t.remoteFault(x.p, x.win, func(c api.Cookie) error {
				return x.p.cli.ep.PostRDMAWrite(x.sr.iov(0, 16), c, x.rt, api.CompletionDefault)
			})
		}},
		{"DESCRIPTION (DAT 2.0 dat.h)", "a send-with-invalidate of up to eight segments gathers them in IOV order and invalidates the RMR", func(t *checkT) {
			x := t.sendInvalidate(true, 8)
			if len(x.want) < 8 {
				t.Skipf("MaxRequestIOV is 1")
			}
			ev := x.p.srv.expectRecv(1, api.DTOSuccess, "the receive")
			if ev.DTO.Op != api.OpReceiveWithInvalidate || ev.DTO.RMRContext != x.rt.RMRContext {
				t.Fatalf("receive completion op %v context %#x, want %v with context %#x", ev.DTO.Op, ev.DTO.RMRContext, api.OpReceiveWithInvalidate, x.rt.RMRContext)
			}
			if int(ev.DTO.Length) != len(x.want) || !bytes.Equal(x.rr.b[:len(x.want)], x.want) {
				t.Fatalf("received %d bytes %x, want %x", ev.DTO.Length, x.rr.b[:ev.DTO.Length], x.want)
			}
		}},
		{"DESCRIPTION (DAT 2.0 dat.h)", "with invalidate false it is a plain send and the RMR context keeps working", func(t *checkT) {
			x := t.sendInvalidate(false, 1)
			ev := x.p.srv.expectRecv(1, api.DTOSuccess, "the receive")
			if ev.DTO.Op != api.OpReceive {
				t.Errorf("receive completion op %v, want %v", ev.DTO.Op, api.OpReceive)
			}
			want := x.sr.fill(0, 16, 0x5B)
			t.noErr(x.p.cli.ep.PostRDMAWrite(x.sr.iov(0, 16), 3, x.rt, api.CompletionDefault), "PostRDMAWrite through the context")
			x.p.cli.expectReq(3, api.DTOSuccess, "the RDMA write through the still valid context")
			if !bytes.Equal(x.win.b[:16], want) {
				t.Fatalf("the RDMA write did not land")
			}
		}},
		{"DESCRIPTION (DESIGN §4)", "naming an EP-scope RMR bound on another connection fails and leaves the RMR bound and working", func(t *checkT) {
			x := t.boundOnFirstOfTwo()
			t.skipForDeviation(x.first.srv.node, DeviationInvalidateScope)
			if x.scope != api.RMRScopeEP {
				t.Skipf("the RMR's scope is %d: another connection of the PZ may invalidate it", x.scope)
			}
			c2, s2 := x.second.cli, x.second.srv
			s2.postRecv(s2.region(64, rw), 0, 64, 1)
			sr := c2.region(64, rw)
			t.noErr(c2.ep.PostSendWithInvalidate(sr.iov(0, 8), 2, api.CompletionDefault, true, x.rt.RMRContext), "PostSendWithInvalidate on the other connection")
			if ev := t.expectEvent(c2.req, api.DTOCompletionEvent, "the send-with-invalidate completion"); ev.DTO.Status == api.DTOSuccess {
				t.Fatalf("a send-with-invalidate of an RMR bound to another connection's EP succeeded")
			}
			t.rdmaWrite(x.first, x.rt, pattern(16, 5), 3)
		}},
	}},
}

// invalidation is what sendInvalidate made: the pair, the server's window
// (region and triplet) and receive region, the client's 64-byte send
// region, and the bytes the send carried.
type invalidation struct {
	p           *pair
	win, rr, sr *region
	rt          api.RMRTriplet
	want        []byte
}

// sendInvalidate connects a pair, binds a 64-byte window on the server and
// posts a receive there (cookie 1), sends with PostSendWithInvalidate
// (cookie 2, invalidate inv) of the window's RMR context k 4-byte pieces of
// the client's send region (fewer if the EP takes fewer segments), named
// last first so that the order of the IOV shows, and waits for the send's successful completion; the checks of
// dat_ep_post_send_with_invalidate then look at the receive.
func (t *checkT) sendInvalidate(inv bool, k int) *invalidation {
	t.T.Helper()
	p := t.pair()
	win, _, rt := p.srv.window(64, 0, 64)
	rr := p.srv.region(64, rw)
	p.srv.postRecv(rr, 0, 64, 1)
	sr := p.cli.region(64, rw)
	k = min(k, t.queryEP(p.cli.ep).Attr.MaxRequestIOV)
	src := sr.fill(0, 4*k, 0x61)
	var iov []api.LMRTriplet
	var want []byte
	for i := k - 1; i >= 0; i-- {
		iov = append(iov, sr.tr(4*i, 4))
		want = append(want, src[4*i:4*i+4]...)
	}
	t.noErr(p.cli.ep.PostSendWithInvalidate(iov, 2, api.CompletionDefault, inv, rt.RMRContext), fmt.Sprintf("PostSendWithInvalidate(invalidate=%v) of %d segment(s)", inv, k))
	p.cli.expectReq(2, api.DTOSuccess, "the send-with-invalidate completion")
	return &invalidation{p: p, win: win, rr: rr, sr: sr, rt: rt, want: want}
}
