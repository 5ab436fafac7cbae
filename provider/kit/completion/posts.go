package completion

import "github.com/godat/godat/api"

// Poster is the one post call an EP that embeds Posts writes: it takes a
// request built by a DAT post call and runs, queues or refuses it as that
// call's page says. r is the caller's copy; keeping its IOV beyond the call
// needs a copy of the slice.
type Poster interface {
	PostRequest(r Request) error
}

// Posts gives a provider's EP the DTO post calls of api.EP
// (dat_ep_post_send(3DAT), dat_ep_post_rdma_write(3DAT),
// dat_ep_post_rdma_read(3DAT) and their DAT 2.0 variants) over its one
// PostRequest: each call builds the Request its arguments describe and
// hands it to To. The EP sets To to itself when it is created. Binds and
// receives have calls of their own and do not pass through it.
//
// The convenience costs an interface call and two copies of the Request
// per post: about 10 ns, a tenth of a 64-byte RDMA write on the loopback
// provider, which therefore writes its five calls itself, as tcp does;
// for a provider behind a plugin's RPC, or one whose post does real work,
// it is noise.
type Posts struct {
	To Poster
}

// PostSend posts a send of the bytes iov names (dat_ep_post_send(3DAT)).
func (s *Posts) PostSend(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags) error {
	return s.To.PostRequest(Request{Kind: Send, Cookie: cookie, Flags: flags, IOV: iov})
}

// PostSendWithInvalidate posts a send that, if invalidate is set, unbinds
// the peer's RMR rmr when the message is placed
// (dat_ep_post_send_with_invalidate, DAT 2.0).
func (s *Posts) PostSendWithInvalidate(iov []api.LMRTriplet, cookie api.Cookie, flags api.CompletionFlags, invalidate bool, rmr api.RMRContext) error {
	return s.To.PostRequest(Request{Kind: Send, Cookie: cookie, Flags: flags, IOV: iov, Invalidate: invalidate, RMRContext: rmr})
}

// PostRDMAWrite posts a write of the bytes iov names to the peer's window
// remote (dat_ep_post_rdma_write(3DAT)).
func (s *Posts) PostRDMAWrite(iov []api.LMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	return s.To.PostRequest(Request{Kind: Write, Cookie: cookie, Flags: flags, IOV: iov, Remote: remote})
}

// PostRDMARead posts a read of the peer's window remote into iov
// (dat_ep_post_rdma_read(3DAT)).
func (s *Posts) PostRDMARead(iov []api.LMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	return s.To.PostRequest(Request{Kind: Read, Cookie: cookie, Flags: flags, IOV: iov, Remote: remote})
}

// PostRDMAReadToRMR posts a read of the peer's window remote into the
// local window local (dat_ep_post_rdma_read_to_rmr, DAT 2.0).
func (s *Posts) PostRDMAReadToRMR(local api.RMRTriplet, cookie api.Cookie, remote api.RMRTriplet, flags api.CompletionFlags) error {
	return s.To.PostRequest(Request{Kind: ReadToRMR, Cookie: cookie, Flags: flags, Local: local, Remote: remote})
}
