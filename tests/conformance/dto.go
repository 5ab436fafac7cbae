package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/godat/godat/api"
)

const (
	rw     = api.MemPrivLocalRead | api.MemPrivLocalWrite
	remote = api.MemPrivAll
)

// localErrs are the synchronous errors the post pages allow for a bad local
// IOV (dat_ep_post_send(3DAT) RETURN VALUES).
var localErrs = []*api.Error{api.ErrInvalidParameter, api.ErrProtectionViolation, api.ErrPrivilegesViolation}

// localFault checks a request DTO whose local IOV is bad. The post pages let
// the provider refuse it at once (DAT_INVALID_PARAMETER,
// DAT_PROTECTION_VIOLATION or DAT_PRIVILEGES_VIOLATION), in which case
// nothing is queued and the connection goes on (marker proves it); or
// accept it, in which case the DTO completes with a local protection error
// and the connection breaks (DESIGN §4). Either way no byte of watch
// changes.
func (t *checkT) localFault(p *pair, watch *region, post func(cookie api.Cookie) error, marker func(), ok ...api.DTOStatus) {
	t.T.Helper()
	const bad = 0xBAD
	snap := watch.snapshot()
	if err := post(bad); err != nil {
		if !isOneOf(err, localErrs...) {
			t.Fatalf("the post failed with %v, want one of %s (or success and an error completion)", err, errNames(localErrs))
		}
		t.wantConnected(p.cli.ep, "after the refused post")
		watch.unchanged(snap, "the refused post")
		marker()
		return
	}
	if len(ok) == 0 {
		ok = []api.DTOStatus{api.DTOErrLocalProtection}
	}
	ev := t.expectEvent(p.cli.req, api.DTOCompletionEvent, "the completion of the bad DTO")
	if ev.DTO.Cookie != bad {
		t.Fatalf("got %s, want the completion of the bad DTO (cookie %d)", describe(&ev), bad)
	}
	good := false
	for _, s := range ok {
		good = good || ev.DTO.Status == s
	}
	if !good {
		t.Errorf("the bad DTO completed with status %v, want %v", ev.DTO.Status, ok)
	}
	p.cli.expectConnEnd("the connection after a local protection error", api.ConnectionBrokenEvent)
	watch.unchanged(snap, "the failed DTO")
}

// remoteFault checks an RDMA operation that the target must refuse
// (dat_ep_post_rdma_write(3DAT), dat_ep_post_rdma_read(3DAT), DESIGN §4):
// the requester's DTO completes with DTO_ERR_REMOTE_ACCESS, the connection
// breaks (BROKEN on the requester, and the target's side ends too), and no
// byte of the target memory changes.
func (t *checkT) remoteFault(p *pair, target *region, post func(cookie api.Cookie) error) {
	t.T.Helper()
	const bad = 0xBAD
	snap := target.snapshot()
	t.noErr(post(bad), "posting the RDMA operation (the requester cannot know the remote window)")
	ev := t.expectEvent(p.cli.req, api.DTOCompletionEvent, "the completion of the refused RDMA operation")
	if ev.DTO.Cookie != bad {
		t.Fatalf("got %s, want the completion of the RDMA operation (cookie %d)", describe(&ev), bad)
	}
	if ev.DTO.Status != api.DTOErrRemoteAccess {
		t.Errorf("the refused RDMA operation completed with status %v, want %v", ev.DTO.Status, api.DTOErrRemoteAccess)
	}
	p.cli.expectConnEnd("the requester's connection after a remote access error", api.ConnectionBrokenEvent)
	p.srv.expectConnEnd("the target's connection after the remote access error", api.ConnectionBrokenEvent, api.ConnectionDisconnectedEvent)
	target.unchanged(snap, "the refused RDMA operation")
}

// rdmaFault is remoteFault for an RDMA operation between a 64-byte client
// region (local, rw) and a 64-byte server region (remote, privileges priv):
// localFill and remoteFill, where not zero, fill the region the operation
// reads from so that a byte that moves shows; post makes the operation.
func (t *checkT) rdmaFault(priv api.MemPriv, localFill, remoteFill byte, post func(p *pair, local, remote *region, cookie api.Cookie) error) {
	t.T.Helper()
	p := t.pair()
	remote := p.srv.region(64, priv)
	local := p.cli.region(64, rw)
	if localFill != 0 {
		local.fill(0, 64, localFill)
	}
	if remoteFill != 0 {
		remote.fill(0, 64, remoteFill)
	}
	t.remoteFault(p, remote, func(c api.Cookie) error { return post(p, local, remote, c) })
}

// rdmaWriteTo is an rdmaFault post: an RDMA write of the first n bytes of
// the local region, with flags, to the triplet that at picks in the remote
// region.
func rdmaWriteTo(n int, at func(r *region, n int) api.RMRTriplet, flags api.CompletionFlags) func(p *pair, local, remote *region, c api.Cookie) error {
	return func(p *pair, local, remote *region, c api.Cookie) error {
		return p.cli.ep.PostRDMAWrite(local.iov(0, n), c, at(remote, n), flags)
	}
}

// rdmaReadFrom is an rdmaFault post: an RDMA read into the first n bytes
// of the local region from the triplet that at picks in the remote region.
func rdmaReadFrom(n int, at func(r *region, n int) api.RMRTriplet) func(p *pair, local, remote *region, c api.Cookie) error {
	return func(p *pair, local, remote *region, c api.Cookie) error {
		return p.cli.ep.PostRDMARead(local.iov(0, n), c, at(remote, n), api.CompletionDefault)
	}
}

// The remote triplets of n bytes in r that the RDMA checks pick: at r's
// start, the same with an RMR context that is not the LMR's, starting 8
// bytes before r, and (pastEnd) ending over bytes past r's end.

func atStart(r *region, n int) api.RMRTriplet { return r.rtr(0, n) }

func wrongContext(r *region, n int) api.RMRTriplet {
	rt := r.rtr(0, n)
	rt.RMRContext = otherContext(r.p.RMRContext)
	return rt
}

func beforeStart(r *region, n int) api.RMRTriplet {
	rt := r.rtr(0, n)
	rt.Addr -= 8
	return rt
}

func pastEnd(over int) func(r *region, n int) api.RMRTriplet {
	return func(r *region, n int) api.RMRTriplet { return r.rtr(len(r.b)+over-n, n) }
}

// sendFault is localFault for a send: the server has a receive posted into
// a region that must stay untouched; the marker is a good 8-byte send that
// must be the next thing that receive and the client's request queue see.
func (t *checkT) sendFault(p *pair, post func(cookie api.Cookie) error, ok ...api.DTOStatus) {
	t.T.Helper()
	target := p.srv.region(256, rw)
	p.srv.postRecv(target, 0, 256, 1)
	t.localFault(p, target, post, func() {
		m := p.cli.region(8, rw)
		want := m.fill(0, 8, 0x66)
		p.cli.postSend(m, 0, 8, 2)
		p.cli.expectReq(2, api.DTOSuccess, "the marker send (the refused post must not complete)")
		ev := p.srv.expectRecv(1, api.DTOSuccess, "the receive, filled by the marker")
		if ev.DTO.Length != 8 || !bytes.Equal(target.b[:8], want) {
			t.Fatalf("the receive holds %d bytes %x, want the marker %x", ev.DTO.Length, target.b[:8], want)
		}
	}, ok...)
}

// dtoGroups are the DTO pages' checks in run order: dto_send.go,
// dto_recv.go, dto_rdma.go (RDMA, and the send that invalidates an RMR).
var dtoGroups = slices.Concat(postSendGroups, postRecvGroups, rdmaGroups)

// queryEP returns the EP's parameters.
func (t *checkT) queryEP(ep api.EP) api.EPParam {
	t.T.Helper()
	p, err := ep.Query()
	t.noErr(err, "EP.Query")
	return p
}

// disconnectedPair returns a pair whose client EP is DISCONNECTED (after a
// graceful disconnect it asked for) and not reset.
func (t *checkT) disconnectedPair() *pair {
	t.T.Helper()
	p := t.pair()
	t.noErr(p.cli.ep.Disconnect(api.CloseGraceful), "EP.Disconnect")
	p.cli.expectConn(api.ConnectionDisconnectedEvent, "DISCONNECTED")
	t.eventuallyState(p.cli.ep, "the disconnected EP", api.EPDisconnected)
	return p
}

// expectRecvLengthError waits for the receive of cookie on p's server to
// fail because the message is longer than it (DTO_ERR_LOCAL_LENGTH, or any
// error under DeviationRecvLengthStatus), and for the receiver's
// connection to break.
func (t *checkT) expectRecvLengthError(p *pair, cookie api.Cookie, what string) {
	t.T.Helper()
	if why, ok := p.srv.deviation(DeviationRecvLengthStatus); ok {
		t.Logf("%s: accepting any error status: the provider declares deviation %q: %s", t.ref, DeviationRecvLengthStatus, why)
		ev := t.expectEvent(p.srv.recv, api.DTOCompletionEvent, what)
		if ev.DTO.Cookie != cookie || ev.DTO.Status == api.DTOSuccess || ev.DTO.Status == api.DTOErrFlushed {
			t.Fatalf("%s: got %s, want cookie %d with an error status", what, describe(&ev), cookie)
		}
	} else {
		p.srv.expectRecv(cookie, api.DTOErrLocalLength, what)
	}
	p.srv.expectConnEnd("the receiver's connection after the length error", api.ConnectionBrokenEvent)
}

// readTooShort posts an RDMA read of remote bytes into a local IOV of
// iov < remote bytes (dat_ep_post_rdma_read(3DAT) RETURN VALUES): see
// lengthFault; a read that is posted fails with DTO_ERR_LOCAL_LENGTH.
func (t *checkT) readTooShort(iov, remote int) {
	t.T.Helper()
	p := t.pair()
	src := p.srv.region(remote, api.MemPrivAll)
	src.fill(0, remote, 0x65)
	dst := p.cli.region(remote, rw)
	what := fmt.Sprintf("an RDMA read of %d bytes into %d", remote, iov)
	ev, posted := t.lengthFault(p, dst, 0, iov, what, func(c api.Cookie) error {
		return p.cli.ep.PostRDMARead(dst.iov(0, iov), c, src.rtr(0, remote), api.CompletionDefault)
	})
	if posted && (ev.DTO.Status != api.DTOErrLocalLength || ev.DTO.Op != api.OpRDMARead) {
		t.Errorf("%s completed as %s, want %v with status %v", what, describe(&ev), api.OpRDMARead, api.DTOErrLocalLength)
	}
}

// lengthFault checks an RDMA operation whose local and remote lengths do
// not match (the RETURN VALUES of dat_ep_post_rdma_write(3DAT) and
// dat_ep_post_rdma_read(3DAT), DAT_LENGTH_ERROR): post is refused with
// DAT_LENGTH_ERROR and the connection goes on, or the operation fails and
// the connection breaks; either way no byte of watch outside [lo, hi)
// changes. It returns the failed operation's completion, and whether the
// operation was posted.
func (t *checkT) lengthFault(p *pair, watch *region, lo, hi int, what string, post func(api.Cookie) error) (api.Event, bool) {
	t.T.Helper()
	const cookie = 3
	var ev api.Event
	snap := watch.snapshot()
	err := post(cookie)
	switch {
	case errors.Is(err, api.ErrLength):
		// Refused at post time: nothing queued, the connection goes on.
		t.works(p.cli, p.srv, "after the refused "+what)
	case err != nil:
		t.Fatalf("%s: %v, want success or DAT_LENGTH_ERROR", what, err)
	default:
		ev = t.expectEvent(p.cli.req, api.DTOCompletionEvent, "the completion of "+what)
		if ev.DTO.Cookie != cookie || ev.DTO.Status == api.DTOSuccess {
			t.Fatalf("%s: got %s, want cookie %d failing", what, describe(&ev), cookie)
		}
		p.cli.expectConnEnd("the connection after the failure of "+what, api.ConnectionBrokenEvent)
	}
	all := watch.mem.Bytes()
	for i := range all {
		if off := i - watch.page; (off < lo || off >= hi) && all[i] != snap[i] {
			t.Fatalf("%s changed offset %d, outside [%d, %d)", what, off, lo, hi)
		}
	}
	return ev, err == nil
}

// twoReceives posts two 64-byte receives on p's server (cookies 1 and 2)
// and returns an 8-byte region of p's client to send from.
func (p *pair) twoReceives() *region {
	p.cli.t.T.Helper()
	rr := p.srv.region(128, rw)
	p.srv.postRecv(rr, 0, 64, 1)
	p.srv.postRecv(rr, 64, 64, 2)
	return p.cli.region(8, rw)
}
