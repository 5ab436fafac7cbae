package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/openfds"
)

// evdQLen is the queue length of the EVDs the helpers create.
const evdQLen = 64

// ---------------------------------------------------------------------
// Errors and states.

// noErr fails the check if err is not nil.
func (t *checkT) noErr(err error, what string) {
	t.T.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", what, err)
	}
}

// wantErr fails the check unless errors.Is(err, want).
func (t *checkT) wantErr(err error, want *api.Error, what string) {
	t.T.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want %s", what, errName(want))
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %s", what, err, errName(want))
	}
}

// wantOneOf fails the check unless err matches one of wants.
func (t *checkT) wantOneOf(err error, what string, wants ...*api.Error) {
	t.T.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want one of %s", what, errNames(wants))
	}
	for _, w := range wants {
		if errors.Is(err, w) {
			return
		}
	}
	t.Fatalf("%s: got %v, want one of %s", what, err, errNames(wants))
}

// isOneOf reports whether err matches one of wants.
func isOneOf(err error, wants ...*api.Error) bool {
	for _, w := range wants {
		if errors.Is(err, w) {
			return true
		}
	}
	return false
}

func errName(e *api.Error) string {
	if e.Sub != api.NoSubtype {
		return e.Type.String() + "(" + e.Sub.String() + ")"
	}
	return e.Type.String()
}

func errNames(es []*api.Error) string {
	var s []string
	for _, e := range es {
		s = append(s, errName(e))
	}
	return strings.Join(s, ", ")
}

// sub builds an error with a subtype for errors.Is.
func sub(t api.ReturnType, s api.Subtype) *api.Error { return &api.Error{Type: t, Sub: s} }

// state returns the EP state.
func (t *checkT) state(ep api.EP) api.EPState {
	t.T.Helper()
	st, _, _, err := ep.GetStatus()
	t.noErr(err, "EP.GetStatus")
	return st
}

// wantState fails the check unless ep is in state want.
func (t *checkT) wantState(ep api.EP, want api.EPState, what string) {
	t.T.Helper()
	if got := t.state(ep); got != want {
		t.Fatalf("%s: EP state %v, want %v", what, got, want)
	}
}

// eventuallyState waits until ep reaches one of the states in want; it is
// for transitions that the pages make asynchronous.
func (t *checkT) eventuallyState(ep api.EP, what string, want ...api.EPState) api.EPState {
	t.T.Helper()
	deadline := time.Now().Add(eventTimeout)
	for {
		got := t.state(ep)
		for _, w := range want {
			if got == w {
				return got
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: EP state is still %v after %v, want %v", what, got, eventTimeout, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// ---------------------------------------------------------------------
// Events.

// describe formats an event for failure messages.
func describe(ev *api.Event) string {
	switch ev.Number.Stream() {
	case api.EVDDTO:
		return fmt.Sprintf("%v{op %v, cookie %d, status %v, length %d}", ev.Number, ev.DTO.Op, ev.DTO.Cookie, ev.DTO.Status, ev.DTO.Length)
	case api.EVDRMRBind:
		return fmt.Sprintf("%v{cookie %d, status %v}", ev.Number, ev.RMRBind.Cookie, ev.RMRBind.Status)
	case api.EVDCR:
		return fmt.Sprintf("%v{conn_qual %d}", ev.Number, ev.CR.ConnQual)
	case api.EVDConnection:
		return fmt.Sprintf("%v{%d bytes of private data}", ev.Number, len(ev.Conn.PrivateData))
	case api.EVDAsync:
		return fmt.Sprintf("%v{reason %d}", ev.Number, ev.Async.Reason)
	case api.EVDSoftware:
		return fmt.Sprintf("%v{%v}", ev.Number, ev.Software)
	}
	return ev.Number.String()
}

// expectDTO waits for the next event of evd and fails unless it is the DTO
// completion of ep with cookie and status st.
func (t *checkT) expectDTO(evd api.EVD, ep api.EP, cookie api.Cookie, st api.DTOStatus, what string) api.Event {
	t.T.Helper()
	ev := t.expectEvent(evd, api.DTOCompletionEvent, what)
	if ev.DTO.Cookie != cookie || ev.DTO.Status != st {
		t.Fatalf("waiting for %s: got %s, want cookie %d with status %v", what, describe(&ev), cookie, st)
	}
	if ev.DTO.EP != ep {
		t.Fatalf("waiting for %s: the completion names another EP (%v) than the one the DTO was posted on", what, ev.DTO.EP)
	}
	if ev.EVD != evd {
		t.Fatalf("waiting for %s: Event.EVD is not the EVD it was dequeued from", what)
	}
	return ev
}

// expectEmpty fails unless evd has no event queued.
func (t *checkT) expectEmpty(evd api.EVD, what string) {
	t.T.Helper()
	var ev api.Event
	err := evd.Dequeue(&ev)
	if err == nil {
		t.Fatalf("%s: unexpected event %s", what, describe(&ev))
	}
	if !errors.Is(err, api.ErrQueueEmpty) {
		t.Fatalf("%s: EVD.Dequeue: got %v, want DAT_QUEUE_EMPTY", what, err)
	}
}

// quiet checks that evd gets no event for d: a negative check bounded by
// d, which a slow provider could pass but a correct one cannot fail.
func (t *checkT) quiet(evd api.EVD, d time.Duration, what string) {
	t.T.Helper()
	ctx, cancel := context.WithTimeout(t.ctx, d)
	defer cancel()
	var ev api.Event
	_, err := evd.Wait(ctx, 1, &ev)
	switch {
	case err == nil:
		t.Fatalf("%s: unexpected event %s", what, describe(&ev))
	case !errors.Is(err, api.ErrTimeoutExpired):
		t.Fatalf("%s: EVD.Wait: got %v, want DAT_TIMEOUT_EXPIRED (no event)", what, err)
	}
}

// ---------------------------------------------------------------------
// Nodes: an IA with a PZ and one EVD per stream.

type node struct {
	t     *checkT
	ia    api.IA
	attr  api.IAAttr
	pattr api.ProviderAttr
	async api.EVD
	pz    api.PZ
	req   api.EVD // request completions and RMR binds
	recv  api.EVD // receive completions
	conn  api.EVD // connection events
	cr    api.EVD // connection requests

	defAttr *api.EPAttr // the provider's default EP attributes
}

// node opens an IA and creates its PZ and EVDs.
func (t *checkT) node() *node {
	t.T.Helper()
	return t.nodeOn(t.openIA())
}

// serverNode is node for the server end of a connection (see RunSplit).
func (t *checkT) serverNode() *node {
	t.T.Helper()
	return t.nodeOn(t.openServerIA())
}

// nodeOn creates the PZ and EVDs of a node on ia.
func (t *checkT) nodeOn(ia api.IA) *node {
	t.T.Helper()
	n := &node{t: t, ia: ia}
	var err error
	n.attr, n.pattr, err = n.ia.Query()
	t.noErr(err, "IA.Query")
	n.async, err = n.ia.AsyncEVD()
	t.noErr(err, "IA.AsyncEVD")
	n.pz, err = n.ia.CreatePZ()
	t.noErr(err, "IA.CreatePZ")
	n.req = n.evd(api.EVDDTO | api.EVDRMRBind)
	n.recv = n.evd(api.EVDDTO)
	n.conn = n.evd(api.EVDConnection)
	n.cr = n.evd(api.EVDCR)
	return n
}

// qlen is the EVD queue length the helpers ask for.
func (n *node) qlen() int {
	if n.attr.MaxEVDQLen > 0 && n.attr.MaxEVDQLen < evdQLen {
		return n.attr.MaxEVDQLen
	}
	return evdQLen
}

// evd creates an EVD with the helpers' queue length and no CNO.
func (n *node) evd(flags api.EVDFlags) api.EVD {
	n.t.T.Helper()
	e, err := n.ia.CreateEVD(n.qlen(), nil, flags)
	n.t.noErr(err, fmt.Sprintf("IA.CreateEVD(%d, nil, %#x)", n.qlen(), flags))
	return e
}

// epAttr returns a copy of the provider's default EP attributes.
func (n *node) epAttr() *api.EPAttr {
	n.t.T.Helper()
	if n.defAttr == nil {
		ep, err := n.ia.CreateEP(n.pz, n.recv, n.req, n.conn, nil)
		n.t.noErr(err, "IA.CreateEP with default attributes")
		p, err := ep.Query()
		n.t.noErr(err, "EP.Query")
		n.t.noErr(ep.Free(), "EP.Free")
		a := p.Attr
		n.defAttr = &a
	}
	a := *n.defAttr
	return &a
}

// newEP creates an EP with the node's PZ and EVDs.
func (n *node) newEP(attr *api.EPAttr) api.EP {
	n.t.T.Helper()
	ep, err := n.ia.CreateEP(n.pz, n.recv, n.req, n.conn, attr)
	n.t.noErr(err, "IA.CreateEP")
	return ep
}

// end is one EP with its node.
func (n *node) end(attr *api.EPAttr) *end {
	n.t.T.Helper()
	return &end{node: n, ep: n.newEP(attr)}
}

// listen creates a PSP on a free conn_qual for the node's CR EVD.
func (n *node) listen(flags api.PSPFlags) (api.PSP, api.ConnQual) {
	n.t.T.Helper()
	psp, q, err := n.ia.CreatePSPAny(n.cr, flags)
	n.t.noErr(err, "IA.CreatePSPAny")
	return psp, q
}

// freeQual returns a conn_qual on which nothing listens: one the provider
// chose as free, with its PSP freed again.
func (n *node) freeQual() api.ConnQual {
	n.t.T.Helper()
	psp, q := n.listen(api.PSPConsumer)
	n.t.noErr(psp.Free(), "PSP.Free")
	return q
}

// ---------------------------------------------------------------------
// Ends and connected pairs.

type end struct {
	*node
	ep api.EP
}

// connect asks for a connection to q on the IA of srv.
func (e *end) connect(srv *node, q api.ConnQual, pd []byte) {
	e.t.T.Helper()
	e.connectWithin(srv, q, pd, connTimeout)
}

// connectWithin is connect with the connect timeout given.
func (e *end) connectWithin(srv *node, q api.ConnQual, pd []byte, timeout api.Timeout) {
	e.t.T.Helper()
	e.t.noErr(e.ep.Connect(srv.attr.Address, q, timeout, pd, api.QOSBestEffort, api.ConnectDefault), fmt.Sprintf("EP.Connect with timeout %v", timeout))
}

// expectConn waits for the next connection event of e and fails unless it
// is num for e's EP.
func (e *end) expectConn(num api.EventNumber, what string) api.Event {
	e.t.T.Helper()
	ev := e.t.expectEvent(e.conn, num, what)
	if ev.Conn.EP != e.ep {
		e.t.Fatalf("%s: the %v event names another EP than the one it is for", what, num)
	}
	return ev
}

// expectConnEnd waits for the event that ends e's connection: one of nums.
func (e *end) expectConnEnd(what string, nums ...api.EventNumber) api.Event {
	e.t.T.Helper()
	ev := e.t.wait(e.conn, what)
	for _, n := range nums {
		if ev.Number == n {
			if ev.Conn.EP != e.ep {
				e.t.Fatalf("%s: the %v event names another EP than the one it is for", what, n)
			}
			return ev
		}
	}
	e.t.Fatalf("%s: got %s, want one of %v", what, describe(&ev), nums)
	return ev
}

// expectCR waits for a connection request on n's CR EVD.
func (n *node) expectCR(what string) api.Event {
	n.t.T.Helper()
	ev := n.t.expectEvent(n.cr, api.ConnectionRequestEvent, what)
	if ev.CR.CR == nil {
		n.t.Fatalf("%s: the CONNECTION_REQUEST event carries no CR", what)
	}
	return ev
}

type pair struct {
	cli, srv *end
	psp      api.PSP
	q        api.ConnQual
	crParam  api.CRParam // the server's view of the request
	crEvent  api.Event
	cliEst   api.Event // ESTABLISHED on the client
	srvEst   api.Event // ESTABLISHED on the server
}

type pairCfg struct {
	cliAttr, srvAttr *api.EPAttr
	cliPD, srvPD     []byte
	cli, srv         *node // nodes to use; new ones when nil
}

// pair connects a client EP on a new IA to a server EP on another new IA.
func (t *checkT) pair() *pair {
	t.T.Helper()
	return t.pairWith(pairCfg{})
}

// pairWith connects a client and a server EP as c says.
func (t *checkT) pairWith(c pairCfg) *pair {
	t.T.Helper()
	if c.srv == nil {
		c.srv = t.serverNode()
	}
	if c.cli == nil {
		c.cli = t.node()
	}
	p := &pair{cli: c.cli.end(c.cliAttr), srv: c.srv.end(c.srvAttr)}
	p.psp, p.q = c.srv.listen(api.PSPConsumer)
	p.cli.connect(c.srv, p.q, c.cliPD)
	p.crEvent = c.srv.expectCR("the CONNECTION_REQUEST of a connect")
	var err error
	p.crParam, err = p.crEvent.CR.CR.Query()
	t.noErr(err, "CR.Query")
	p.crParam.PrivateData = bytes.Clone(p.crParam.PrivateData)
	t.noErr(p.crEvent.CR.CR.Accept(p.srv.ep, c.srvPD), "CR.Accept")
	p.cliEst = p.cli.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the active side")
	p.srvEst = p.srv.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the passive side")
	return p
}

// acceptInto connects a new EP of cli to a new PSP of s's node and
// accepts the request on s, an EP the caller has prepared; it returns the
// client's end without waiting for ESTABLISHED on either side.
func (t *checkT) acceptInto(cli *node, s *end) *end {
	t.T.Helper()
	_, q := s.node.listen(api.PSPConsumer)
	c := cli.end(nil)
	c.connect(s.node, q, nil)
	ev := s.node.expectCR("the CONNECTION_REQUEST")
	t.noErr(ev.CR.CR.Accept(s.ep, nil), "CR.Accept")
	return c
}

// connectEnd connects c to a new PSP of srv and accepts the request on a
// new EP of srv, which it returns. It does not wait for ESTABLISHED.
func (t *checkT) connectEnd(c *end, srv *node) *end {
	t.T.Helper()
	_, q := srv.listen(api.PSPConsumer)
	return t.acceptOn(c, srv, q)
}

// acceptOn connects c to the PSP q of srv and accepts the request on a
// new EP of srv, which it returns. It does not wait for ESTABLISHED.
func (t *checkT) acceptOn(c *end, srv *node, q api.ConnQual) *end {
	t.T.Helper()
	c.connect(srv, q, nil)
	ev := srv.expectCR("the CONNECTION_REQUEST")
	s := srv.end(nil)
	t.noErr(ev.CR.CR.Accept(s.ep, nil), "CR.Accept")
	return s
}

// connectTo connects a new EP of cli to the PSP q of srv and accepts the
// request on a new EP of srv.
func (t *checkT) connectTo(cli, srv *node, q api.ConnQual) (c, s *end) {
	t.T.Helper()
	c = cli.end(nil)
	s = t.acceptOn(c, srv, q)
	c.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the active side")
	s.expectConn(api.ConnectionEstablishedEvent, "ESTABLISHED on the passive side")
	return c, s
}

// ---------------------------------------------------------------------
// Memory.

const guardByte = 0xEE

// region is registered memory: Bytes b, page aligned and surrounded by a
// guard page on each side inside the same mapping, so that a write past
// either end lands in memory the check can inspect.
type region struct {
	t    *checkT
	mem  *api.Memory
	b    []byte
	lmr  api.LMR
	p    api.LMRParam
	va   api.VAType
	page int
}

// byteIOV returns k one-byte segments of r, at offsets 0 to k-1.
func (r *region) byteIOV(k int) []api.LMRTriplet {
	iov := make([]api.LMRTriplet, k)
	for i := range iov {
		iov[i] = r.tr(i, 1)
	}
	return iov
}

// region registers size bytes (rounded up to whole pages) in the node's PZ.
func (n *node) region(size int, priv api.MemPriv) *region {
	n.t.T.Helper()
	return n.regionIn(n.pz, size, priv)
}

// regionIn is region registered in pz.
func (n *node) regionIn(pz api.PZ, size int, priv api.MemPriv) *region {
	n.t.T.Helper()
	r, err := n.tryRegion(pz, size, priv, api.VATypeVA)
	n.t.noErr(err, fmt.Sprintf("IA.CreateLMR(%d bytes, privileges %#x)", size, priv))
	return r
}

// newPZ creates another PZ on n's IA, for the checks on objects of
// different PZs.
func (n *node) newPZ() api.PZ {
	n.t.T.Helper()
	pz, err := n.ia.CreatePZ()
	n.t.noErr(err, "IA.CreatePZ")
	return pz
}

// segsPast skips the check unless the limit k (called name) is between 1
// and most, and returns k+1 one-byte segments of a new region of n: one
// segment more than the limit allows.
func (n *node) segsPast(name string, k, most int) []api.LMRTriplet {
	n.t.T.Helper()
	n.t.skipUnlessIn(name, k, most)
	return n.region(k+1, rw).byteIOV(k + 1)
}

// skipUnlessIn skips the check unless the limit v (called name) is
// between 1 and most: the checks that go one past a limit need it small
// enough to reach.
func (t *checkT) skipUnlessIn(name string, v, most int) {
	t.T.Helper()
	if v < 1 || v > most {
		t.Skipf("%s is %d", name, v)
	}
}

// tryRegion registers size bytes in pz and returns the error of CreateLMR.
func (n *node) tryRegion(pz api.PZ, size int, priv api.MemPriv, va api.VAType) (*region, error) {
	n.t.T.Helper()
	page := os.Getpagesize()
	sz := (size + page - 1) / page * page
	mem := n.t.alloc(sz + 2*page)
	all := mem.Bytes()
	for i := range all {
		all[i] = guardByte
	}
	b := all[page : page+sz]
	for i := range b {
		b[i] = 0
	}
	lmr, err := n.ia.CreateLMR(pz, api.Region{Type: api.MemTypeVirtual, Bytes: b}, priv, va)
	if err != nil {
		return nil, err
	}
	p, err := lmr.Query()
	n.t.noErr(err, "LMR.Query")
	return &region{t: n.t, mem: mem, b: b, lmr: lmr, p: p, va: va, page: page}, nil
}

// addr is the DTO address of byte off of the region.
func (r *region) addr(off int) api.VAddr {
	if r.va == api.VATypeZB {
		return api.VAddr(off)
	}
	return api.AddrOf(r.b) + api.VAddr(off)
}

// tr is the local triplet for n bytes at off.
func (r *region) tr(off, n int) api.LMRTriplet {
	return api.LMRTriplet{Addr: r.addr(off), Length: uint32(n), LMRContext: r.p.LMRContext}
}

// iov is a one-segment IOV for n bytes at off.
func (r *region) iov(off, n int) []api.LMRTriplet { return []api.LMRTriplet{r.tr(off, n)} }

// rtr is the remote triplet for n bytes at off through the LMR's own RMR
// context.
func (r *region) rtr(off, n int) api.RMRTriplet {
	return api.RMRTriplet{Addr: r.addr(off), Length: uint32(n), RMRContext: r.p.RMRContext}
}

// fill writes a pattern derived from seed into the region at off.
func (r *region) fill(off, n int, seed byte) []byte {
	p := pattern(n, seed)
	copy(r.b[off:], p)
	return p
}

// snapshot copies the whole mapping, guard pages included.
func (r *region) snapshot() []byte { return bytes.Clone(r.mem.Bytes()) }

// changed reports the first offset (relative to the registered bytes; the
// guard page before them is negative) where the mapping differs from snap.
func (r *region) changed(snap []byte) (int, bool) {
	all := r.mem.Bytes()
	for i := range all {
		if all[i] != snap[i] {
			return i - r.page, true
		}
	}
	return 0, false
}

// unchanged fails the check (without stopping it) if any byte of the
// mapping differs from snap.
func (r *region) unchanged(snap []byte, what string) {
	r.t.T.Helper()
	if off, ok := r.changed(snap); ok {
		r.t.Errorf("%s: target memory changed at offset %d of the region (no byte may change)", what, off)
	}
}

// pattern returns n bytes that depend on seed, never all equal.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7) + byte(i>>8)
	}
	return b
}

// ---------------------------------------------------------------------
// Data transfer helpers.

// postRecv posts a one-segment receive.
func (e *end) postRecv(r *region, off, n int, cookie api.Cookie) {
	e.t.T.Helper()
	e.t.noErr(e.ep.PostRecv(r.iov(off, n), cookie, api.CompletionDefault), "EP.PostRecv")
}

// postSend posts a one-segment send.
func (e *end) postSend(r *region, off, n int, cookie api.Cookie) {
	e.t.T.Helper()
	e.t.noErr(e.ep.PostSend(r.iov(off, n), cookie, api.CompletionDefault), "EP.PostSend")
}

// expectReq waits for the request completion of cookie with status st.
func (e *end) expectReq(cookie api.Cookie, st api.DTOStatus, what string) api.Event {
	e.t.T.Helper()
	return e.t.expectDTO(e.req, e.ep, cookie, st, what)
}

// expectRecv waits for the receive completion of cookie with status st.
func (e *end) expectRecv(cookie api.Cookie, st api.DTOStatus, what string) api.Event {
	e.t.T.Helper()
	return e.t.expectDTO(e.recv, e.ep, cookie, st, what)
}

// message sends data from one end to the other and returns what arrived.
func (t *checkT) message(from, to *end, data []byte, cookie api.Cookie) []byte {
	t.T.Helper()
	n := len(data)
	rr := to.region(n+1, api.MemPrivLocalWrite|api.MemPrivLocalRead)
	sr := from.region(n+1, api.MemPrivLocalRead|api.MemPrivLocalWrite)
	copy(sr.b, data)
	to.postRecv(rr, 0, n+1, cookie)
	from.postSend(sr, 0, n, cookie)
	from.expectReq(cookie, api.DTOSuccess, "the send completion")
	ev := to.expectRecv(cookie, api.DTOSuccess, "the receive completion")
	if int(ev.DTO.Length) != n {
		t.Fatalf("receive completion length %d, want %d", ev.DTO.Length, n)
	}
	return bytes.Clone(rr.b[:n])
}

// works checks that the connection between a and b still carries a send.
func (t *checkT) works(a, b *end, what string) {
	t.T.Helper()
	data := []byte("still connected")
	if got := t.message(a, b, data, 0xC0FFEE); !bytes.Equal(got, data) {
		t.Fatalf("%s: received %q, want %q", what, got, data)
	}
}

// expectBind waits for the completion of an RMR bind posted on e: an
// RMR_BIND_COMPLETION event for rmr, or a DTO completion of operation
// BIND_MW, with cookie and status st.
func (e *end) expectBind(rmr api.RMR, cookie api.Cookie, st api.DTOStatus, what string) {
	e.t.T.Helper()
	ev := e.t.wait(e.req, what)
	switch ev.Number {
	case api.RMRBindCompletionEvent:
		if ev.RMRBind.Cookie != cookie || ev.RMRBind.Status != st {
			e.t.Fatalf("%s: got %s, want cookie %d and status %v", what, describe(&ev), cookie, st)
		}
		if ev.RMRBind.RMR != rmr {
			e.t.Fatalf("%s: the bind completion names another RMR", what)
		}
	case api.DTOCompletionEvent:
		if ev.DTO.Op != api.OpBindMW || ev.DTO.Cookie != cookie || ev.DTO.Status != st {
			e.t.Fatalf("%s: got %s, want a bind completion with cookie %d and status %v", what, describe(&ev), cookie, st)
		}
	default:
		e.t.Fatalf("%s: got %s, want RMR_BIND_COMPLETION", what, describe(&ev))
	}
}

// newRMR creates an RMR in n's PZ.
func (n *node) newRMR() api.RMR {
	n.t.T.Helper()
	rmr, err := n.pz.CreateRMR()
	n.t.noErr(err, "PZ.CreateRMR")
	return rmr
}

// bind creates an RMR in e's PZ, binds it over n bytes at off of r on e's
// EP, waits for the bind to complete and returns the remote triplet.
func (e *end) bind(r *region, off, n int, priv api.MemPriv) (api.RMR, api.RMRTriplet) {
	e.t.T.Helper()
	rmr := e.newRMR()
	return rmr, e.rebind(rmr, r, off, n, priv)
}

// window registers size bytes with remote privileges on e's IA and binds a
// new RMR over n bytes at off with remote read and write, as bind does.
func (e *end) window(size, off, n int) (*region, api.RMR, api.RMRTriplet) {
	e.t.T.Helper()
	r := e.region(size, remote)
	rmr, rt := e.bind(r, off, n, rmrRW)
	return r, rmr, rt
}

// unbind binds rmr to a zero-length triplet of r, which unbinds it, and
// waits for the bind to complete successfully.
func (e *end) unbind(rmr api.RMR, r *region) {
	e.t.T.Helper()
	_, err := rmr.Bind(r.lmr, r.tr(0, 0), rmrRW, api.VATypeVA, e.ep, 0xDE, api.CompletionDefault)
	e.t.noErr(err, "RMR.Bind with a zero-length triplet")
	e.expectBind(rmr, 0xDE, api.DTOSuccess, "the unbind completion")
}

// inUse checks that free, of an object (obj) that another one (user)
// uses, is DAT_INVALID_STATE with subtype st until freeUser has freed the
// user, and succeeds after.
func (t *checkT) inUse(obj string, free func() error, st api.Subtype, user string, freeUser func() error) {
	t.T.Helper()
	t.wantErr(free(), sub(api.InvalidState, st), obj+".Free while used by "+user)
	t.noErr(freeUser(), "freeing "+user)
	t.noErr(free(), obj+".Free once "+user+" is gone")
}

// rebind binds rmr again and waits for the completion.
func (e *end) rebind(rmr api.RMR, r *region, off, n int, priv api.MemPriv) api.RMRTriplet {
	e.t.T.Helper()
	const cookie = 0xB1D
	ctx, err := rmr.Bind(r.lmr, r.tr(off, n), priv, r.va, e.ep, cookie, api.CompletionDefault)
	e.t.noErr(err, "RMR.Bind")
	e.expectBind(rmr, cookie, api.DTOSuccess, "the RMR bind completion")
	return api.RMRTriplet{Addr: r.addr(off), Length: uint32(n), RMRContext: ctx}
}

// otherContext returns an RMR context that differs from every one in used.
func otherContext(used ...api.RMRContext) api.RMRContext {
	c := api.RMRContext(0x5A5A0001)
	for {
		clash := false
		for _, u := range used {
			if u == c {
				clash = true
			}
		}
		if !clash {
			return c
		}
		c += 0x01010101
	}
}

// lmrContextNotIn returns an LMR context that no region in rs has.
func lmrContextNotIn(rs ...*region) api.LMRContext {
	c := api.LMRContext(0x6B6B0001)
	for {
		clash := false
		for _, r := range rs {
			if r.p.LMRContext == c {
				clash = true
			}
		}
		if !clash {
			return c
		}
		c += 0x01010101
	}
}

// openFDs counts the process's open descriptors; a failure to list them
// fails the check with its page reference.
func (t *checkT) openFDs() int {
	t.T.Helper()
	return openfds.Count(t)
}

// providerFDs lists the process's open descriptors (openfds.List) but for
// the memory of api.AllocMemory, which a check owns, not its provider.
func (t *checkT) providerFDs() map[string]string {
	t.T.Helper()
	m := openfds.List(t)
	for fd, what := range m {
		if strings.HasPrefix(what, "/memfd:godat-lmr ") {
			delete(m, fd)
		}
	}
	return m
}
