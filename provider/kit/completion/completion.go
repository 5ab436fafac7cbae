// Package completion holds the requests a software provider posts on an
// EP's request queue, Posts, which turns the DTO post calls of api.EP into
// those requests, and the events that complete requests and receives,
// under the rules of DAT for suppressed, unsignalled and solicited
// completions (dat_ep_post_send(3DAT), dat_ep_post_recv(3DAT),
// dat_rmr_bind(3DAT)).
//
// Nothing here allocates: Posts hands its Request over by value, and the
// Event methods fill an event the caller owns and report whether to post
// it and whether it notifies, so they serve on the post and completion
// paths.
package completion

import "github.com/godat/godat/api"

// Recv is a posted receive buffer, on an EP's receive queue or an SRQ
// (dat_ep_post_recv(3DAT), dat_srq_post_recv(3DAT)): what its completion
// reports and the memory a message fills.
type Recv struct {
	Cookie api.Cookie
	Flags  api.CompletionFlags
	IOV    []api.LMRTriplet
}

// Kind is the kind of a request on an EP's request queue.
type Kind uint8

// Request kinds.
const (
	Send Kind = iota
	Write
	Read
	ReadToRMR
	Bind
)

var posting = [...]string{"posting a send", "posting an RDMA write", "posting an RDMA read", "posting an RDMA read", "binding an RMR"}

// Posting names the call that posts a request of kind k, for state errors.
func (k Kind) Posting() string { return posting[k] }

// Op returns the operation a completion of a request of kind k reports.
func (k Kind) Op() api.DTOOp {
	switch k {
	case Write:
		return api.OpRDMAWrite
	case Read, ReadToRMR:
		return api.OpRDMARead
	case Bind:
		return api.OpBindMW
	}
	return api.OpSend
}

// Request is a request posted on an EP's request queue as the DAT post
// calls describe it: a DTO or an RMR bind. A provider's own request type
// embeds it and adds what its transport needs.
type Request struct {
	Kind       Kind
	Cookie     api.Cookie
	Flags      api.CompletionFlags
	IOV        []api.LMRTriplet
	Remote     api.RMRTriplet // RDMA: the peer's window
	Local      api.RMRTriplet // ReadToRMR: the local window the data goes to
	Invalidate bool           // a send that invalidates the peer's RMR RMRContext
	RMRContext api.RMRContext // ... or a bind's new context
}

// Event fills ev with the completion, with status st after n bytes, of r
// posted on ep; rmr is the RMR of a bind. It reports whether there is an
// event to post, false for a success with CompletionSuppress, and whether
// it notifies, false for a success with CompletionUnsignalled. A failed
// DTO reports length 0.
func (r *Request) Event(ev *api.Event, ep api.EP, rmr api.RMR, st api.DTOStatus, n uint64) (post, notify bool) {
	if st == api.DTOSuccess && r.Flags&api.CompletionSuppress != 0 {
		return false, false
	}
	notify = st != api.DTOSuccess || r.Flags&api.CompletionUnsignalled == 0
	if r.Kind == Bind {
		ev.Number = api.RMRBindCompletionEvent
		ev.RMRBind = api.RMRBindCompletionData{RMR: rmr, Cookie: r.Cookie, Status: st}
		return true, notify
	}
	if st != api.DTOSuccess {
		n = 0
	}
	ev.Number = api.DTOCompletionEvent
	ev.DTO = api.DTOCompletionData{EP: ep, Cookie: r.Cookie, Status: st, Length: uint32(n), Op: r.Kind.Op()}
	return true, notify
}

// Event fills ev with the completion, with status st after n bytes, of r
// posted on ep, reporting op and, for a receive with invalidate, the
// invalidated context rctx; epFlags are the EP's receive completion flags
// and solicited says whether the matching send asked for a solicited
// event. It reports whether the event notifies: a failure always does; a
// success does unless the receive was posted unsignalled, or the EP is
// configured for solicited wait and the send was not solicited. A failure
// reports length 0 and no context.
func (r *Recv) Event(ev *api.Event, ep api.EP, epFlags api.CompletionFlags, st api.DTOStatus, n uint64, op api.DTOOp, rctx api.RMRContext, solicited bool) bool {
	notify := true
	if st == api.DTOSuccess {
		if r.Flags&api.CompletionUnsignalled != 0 || (epFlags&api.CompletionSolicitedWait != 0 && !solicited) {
			notify = false
		}
	} else {
		n, rctx = 0, 0
	}
	ev.Number = api.DTOCompletionEvent
	ev.DTO = api.DTOCompletionData{EP: ep, Cookie: r.Cookie, Status: st, Length: uint32(n), Op: op, RMRContext: rctx}
	return notify
}
