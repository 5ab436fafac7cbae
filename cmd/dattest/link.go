package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

// Timeouts of the control path. Benchmarks loops wait without a deadline of
// their own (their context still ends them).
const (
	openTimeout    = 10 * time.Second // opening an IA
	connectTimeout = 10 * time.Second // connection establishment
	stepTimeout    = 15 * time.Second // one step of the validated sequence
	dtoEVDQLen     = 4096             // completions of one connection
	cmEVDQLen      = 16               // connection events of one connection
	maxBenchSize   = 64 << 20         // largest benchmark message the server accepts
)

// chooseIAs returns the IAs dattest tries, in order, when -d is not
// given: the available ones, "tcp" first, then those marked default, then
// the rest; the IAs of the file before godat's built-in IAs, which the
// registry lists after them, so that a file's RDMA IA wins over the
// built-in tcp. A classic /etc/dat.conf lists many IAs, often all marked
// default, most of them for devices the machine does not have: openNode
// passes over those. When none is available the error says why the first
// is not and how to go on.
func chooseIAs(reg *registry.Registry) ([]string, error) {
	list := reg.List()
	if len(list) == 0 {
		return nil, fmt.Errorf("no IA is configured in %s", reg.Config().File)
	}
	rank := func(pi registry.ProviderInfo) int {
		r := 2
		switch {
		case pi.IAName == "tcp":
			r = 0
		case pi.Default:
			r = 1
		}
		if pi.Origin == registry.OriginBuiltIn && reg.Config().Format != registry.FormatEmbedded {
			r += 3
		}
		return r
	}
	var avail []registry.ProviderInfo
	for _, pi := range list {
		if pi.Available {
			avail = append(avail, pi)
		}
	}
	if len(avail) == 0 {
		first := list[0]
		return nil, fmt.Errorf("no IA in %s is available (the first, %s at %v: %s); %s",
			reg.Config().File, first.IAName, first.Pos, first.Reason, nameOne)
	}
	slices.SortStableFunc(avail, func(a, b registry.ProviderInfo) int { return rank(a) - rank(b) })
	names := make([]string, len(avail))
	for i, pi := range avail {
		names[i] = pi.IAName
	}
	return names, nil
}

// nameOne is how to go on when dattest finds no IA by itself.
const nameOne = "name one with -d, or use -embedded for godat's built-in configuration"

// node is an open IA with one protection zone.
type node struct {
	name  string
	ia    api.IA
	pz    api.PZ
	attr  api.IAAttr
	pattr api.ProviderAttr
}

// openNode opens the IA called name, or, when name is empty, the first
// of chooseIAs that exists on this host (registry.OpenFirst).
func openNode(ctx context.Context, reg *registry.Registry, name string) (*node, error) {
	octx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if name != "" {
		ia, err := reg.Open(octx, name)
		if err != nil {
			return nil, fmt.Errorf("opening IA %s: %w", name, err)
		}
		return newNode(ia)
	}
	names, err := chooseIAs(reg)
	if err != nil {
		return nil, err
	}
	ia, err := reg.OpenFirst(octx, names)
	if err != nil {
		return nil, fmt.Errorf("opening an IA of %s: %w; %s", reg.Config().File, err, nameOne)
	}
	return newNode(ia)
}

// newNode queries ia, opened through the registry (whose Query names the
// IA as it was opened), and creates its PZ; on an error it closes ia.
func newNode(ia api.IA) (*node, error) {
	n := &node{ia: ia}
	var err error
	if n.attr, n.pattr, err = ia.Query(); err != nil {
		ia.Close(api.CloseAbrupt)
		return nil, fmt.Errorf("querying the IA: %w", err)
	}
	n.name = n.attr.AdapterName
	if n.pz, err = ia.CreatePZ(); err != nil {
		ia.Close(api.CloseAbrupt)
		return nil, fmt.Errorf("IA %s: %w", n.name, err)
	}
	return n, nil
}

// close frees the PZ and closes the IA. Every other object must be freed.
func (n *node) close() error {
	err := n.pz.Free()
	if cerr := n.ia.Close(api.CloseGraceful); cerr != nil {
		// Something was left behind: do not leak it.
		n.ia.Close(api.CloseAbrupt)
		err = errors.Join(err, cerr)
	}
	return err
}

// describe names the IA for people: "tcp (provider tcp, 127.0.0.1)".
func (n *node) describe() string {
	s := n.name + " (provider " + n.pattr.ProviderName
	if n.attr.Address != nil {
		s += ", " + n.attr.Address.String()
	}
	return s + ")"
}

// ipAddr returns the IP of the IA's address, or nil when the provider's
// addresses are not IP addresses (loopback).
func ipAddr(a net.Addr) (net.IP, bool) {
	switch v := a.(type) {
	case *net.TCPAddr:
		return v.IP, true
	case *net.IPAddr:
		return v.IP, true
	case *net.UDPAddr:
		return v.IP, true
	}
	return nil, false
}

// buf is registered memory from api.AllocMemory, which every provider can
// use (an in-process provider would also take a Go slice; a NIC or a plugin
// would not), registered as MemTypeVirtual, the memory type every provider
// supports: MemTypeSharedVirtual is optional (ProviderAttr.
// LMRMemTypesSupported) and asks for nothing dattest needs, since a
// provider that shares the pages with another process finds them as
// AllocMemory's either way.
type buf struct {
	mem *api.Memory
	b   []byte
	lmr api.LMR
	prm api.LMRParam
}

func newBuf(n *node, size int, priv api.MemPriv) (*buf, error) {
	mem, err := api.AllocMemory(size)
	if err != nil {
		return nil, err
	}
	b := mem.Bytes()[:size]
	lmr, err := n.ia.CreateLMR(n.pz, api.Region{Type: api.MemTypeVirtual, Bytes: b}, priv, api.VATypeVA)
	if err != nil {
		mem.Free()
		return nil, err
	}
	prm, err := lmr.Query()
	if err != nil {
		lmr.Free()
		mem.Free()
		return nil, err
	}
	return &buf{mem: mem, b: b, lmr: lmr, prm: prm}, nil
}

func (b *buf) free() error {
	if b == nil {
		return nil
	}
	err := b.lmr.Free()
	if err == nil {
		err = b.mem.Free()
	}
	return err
}

// tri is the local triplet of n bytes at offset off.
func (b *buf) tri(off, n int) api.LMRTriplet { return b.prm.Triplet(uint64(off), uint32(n)) }

// scatter places segments of the given lengths in b from offset off with
// gap bytes between them, so that a provider that ignores segment
// boundaries misplaces data visibly. It returns the IOV and the segments.
func (b *buf) scatter(off int, lens []int, gap int) ([]api.LMRTriplet, [][]byte) {
	iov := make([]api.LMRTriplet, len(lens))
	segs := make([][]byte, len(lens))
	for i, l := range lens {
		iov[i] = b.tri(off, l)
		segs[i] = b.b[off : off+l]
		off += l + gap
	}
	return iov, segs
}

// splitLens splits total bytes into k segments of unequal lengths.
func splitLens(total, k int) []int {
	if k < 1 {
		k = 1
	}
	lens := make([]int, k)
	rest := total
	for i := 0; i < k-1; i++ {
		l := total / (k + 1 + i) // shrinking shares; the last gets the rest
		if l < 1 && rest > 0 {
			l = 1
		}
		if l > rest {
			l = rest
		}
		lens[i] = l
		rest -= l
	}
	lens[k-1] = rest
	return lens
}

// gather concatenates the first n bytes of segs.
func gather(segs [][]byte, n int) []byte {
	out := make([]byte, 0, n)
	for _, s := range segs {
		if n <= 0 {
			break
		}
		k := min(len(s), n)
		out = append(out, s[:k]...)
		n -= k
	}
	return out
}

// spread copies data into segs, in order.
func spread(segs [][]byte, data []byte) {
	for _, s := range segs {
		data = data[copy(s, data):]
	}
}

// link is one endpoint with its event dispatchers: dto receives every
// completion (receives, sends, RDMA, RMR binds), cm the connection events.
type link struct {
	n      *node
	dto    api.EVD
	cm     api.EVD
	ep     api.EP
	epAttr api.EPAttr
	cookie api.Cookie
}

// newLink creates the EVDs and an EP with the provider's default
// attributes.
func newLink(n *node) (*link, error) {
	l := &link{n: n}
	var err error
	qlen := min(dtoEVDQLen, max(n.attr.MaxEVDQLen, 64))
	if l.dto, err = n.ia.CreateEVD(qlen, nil, api.EVDDTO|api.EVDRMRBind); err != nil {
		return nil, fmt.Errorf("CreateEVD: %w", err)
	}
	if l.cm, err = n.ia.CreateEVD(cmEVDQLen, nil, api.EVDConnection); err != nil {
		l.free()
		return nil, fmt.Errorf("CreateEVD: %w", err)
	}
	if l.ep, err = n.ia.CreateEP(n.pz, l.dto, l.dto, l.cm, nil); err != nil {
		l.free()
		return nil, fmt.Errorf("CreateEP: %w", err)
	}
	prm, err := l.ep.Query()
	if err != nil {
		l.free()
		return nil, fmt.Errorf("EP.Query: %w", err)
	}
	l.epAttr = prm.Attr
	return l, nil
}

// free destroys the EP (breaking its connection) and the EVDs.
func (l *link) free() error {
	var errs []error
	if l.ep != nil {
		errs = append(errs, l.ep.Free())
		l.ep = nil
	}
	for _, e := range []*api.EVD{&l.dto, &l.cm} {
		if *e != nil {
			errs = append(errs, (*e).Free())
			*e = nil
		}
	}
	return errors.Join(errs...)
}

// refresh re-reads the EP attributes: a provider may lower its limits to
// the peer's when the connection is established.
func (l *link) refresh() {
	if prm, err := l.ep.Query(); err == nil {
		l.epAttr = prm.Attr
	}
}

// nextCookie returns a fresh cookie for a post.
func (l *link) nextCookie() api.Cookie {
	l.cookie++
	return l.cookie
}

// next returns the next completion event: spinning on Dequeue when poll is
// set, else blocking in Wait. ctx ends either.
func (l *link) next(ctx context.Context, poll bool, ev *api.Event) error {
	if !poll {
		_, err := l.dto.Wait(ctx, 1, ev)
		return err
	}
	done := ctx.Done()
	for i := 0; ; i++ {
		err := l.dto.Dequeue(ev)
		if err == nil || !errors.Is(err, api.ErrQueueEmpty) {
			return err
		}
		if i&63 == 63 {
			// Let another goroutine of this process run (an in-process
			// peer sharing one P); the caller never parks.
			runtime.Gosched()
			select {
			case <-done:
				return api.ContextError(ctx)
			default:
			}
		}
	}
}

// cmEvent waits up to d for the next connection event.
func (l *link) cmEvent(ctx context.Context, d time.Duration) (api.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var ev api.Event
	_, err := l.cm.Wait(ctx, 1, &ev)
	return ev, err
}

// connState says in words why a DTO may have failed: the connection event
// waiting on cm, if any.
func (l *link) connState() string {
	var ev api.Event
	if err := l.cm.Dequeue(&ev); err == nil {
		return "; connection event " + ev.Number.String()
	}
	if st, _, _, err := l.ep.GetStatus(); err == nil {
		return "; EP " + st.String()
	}
	return ""
}

// dtoError describes a failed completion.
type dtoError struct {
	d    api.DTOCompletionData
	conn string
}

func (e *dtoError) Error() string {
	return fmt.Sprintf("%v completed with %v%s", e.d.Op, e.d.Status, e.conn)
}

// await waits until every cookie in want has completed successfully and
// returns their completions, in the order of want. A failed completion, or
// one with a cookie not in want, is an error.
func (l *link) await(ctx context.Context, poll bool, want ...api.Cookie) ([]api.DTOCompletionData, error) {
	got := make([]api.DTOCompletionData, len(want))
	left := len(want)
	var ev api.Event
	for left > 0 {
		if err := l.next(ctx, poll, &ev); err != nil {
			return nil, err
		}
		var ck api.Cookie
		var st api.DTOStatus
		var d api.DTOCompletionData
		switch ev.Number {
		case api.DTOCompletionEvent:
			d = ev.DTO
			ck, st = d.Cookie, d.Status
		case api.RMRBindCompletionEvent:
			ck, st = ev.RMRBind.Cookie, ev.RMRBind.Status
			d = api.DTOCompletionData{Cookie: ck, Status: st, Op: api.OpBindMW}
		default:
			return nil, fmt.Errorf("unexpected event %v", ev.Number)
		}
		if st != api.DTOSuccess {
			return nil, &dtoError{d: d, conn: l.connState()}
		}
		i := slices.Index(want, ck)
		if i < 0 {
			return nil, fmt.Errorf("unexpected completion of %v (cookie %d)", d.Op, ck)
		}
		got[i] = d
		left--
	}
	return got, nil
}

// awaitAny waits for the completion of cookie and returns it whatever its
// status.
func (l *link) awaitAny(ctx context.Context, cookie api.Cookie) (api.DTOCompletionData, error) {
	var ev api.Event
	for {
		if err := l.next(ctx, false, &ev); err != nil {
			return api.DTOCompletionData{}, err
		}
		if ev.Number == api.DTOCompletionEvent && ev.DTO.Cookie == cookie {
			return ev.DTO, nil
		}
	}
}

// iovLimit is how many segments a DTO of the EP may have, at most want.
func iovLimit(want int, limits ...int) int {
	for _, l := range limits {
		if l > 0 && l < want {
			want = l
		}
	}
	return max(want, 1)
}
