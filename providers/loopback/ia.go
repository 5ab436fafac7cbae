package loopback

import (
	"fmt"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/dispatch"
	"github.com/godat/godat/provider/kit/iaattr"
	"github.com/godat/godat/provider/kit/memreg"
)

// ia is an open loopback Interface Adapter (dat_ia_open(3DAT)). It owns
// every object created through it; all fields are guarded by fabric.mu.
type ia struct {
	api.ContextSlot
	addr   Addr
	closed bool
	async  *evd

	pzs  map[*pz]struct{}
	evds map[*evd]struct{} // without the async EVD
	cnos map[*dispatch.CNOObject]struct{}
	eps  map[*ep]struct{}
	psps map[*psp]struct{}
	rsps map[*rsp]struct{}
	crs  map[*cr]struct{} // pending connection requests
	lmrs map[*lmr]struct{}
	rmrs map[*rmr]struct{}
	srqs map[*srq]struct{}
	mem  *memreg.Table[*pz, *ep] // LMR and RMR contexts
}

func newIA(a Addr) *ia {
	return &ia{
		addr: a,
		pzs:  map[*pz]struct{}{}, evds: map[*evd]struct{}{}, cnos: map[*dispatch.CNOObject]struct{}{},
		eps: map[*ep]struct{}{}, psps: map[*psp]struct{}{}, rsps: map[*rsp]struct{}{},
		crs: map[*cr]struct{}{}, lmrs: map[*lmr]struct{}{}, rmrs: map[*rmr]struct{}{},
		srqs: map[*srq]struct{}{}, mem: memreg.New[*pz, *ep](),
	}
}

var errIAClosed = api.Errorf(api.InvalidHandle, api.SubHandleIA, "IA is closed")

// HandleType reports HandleIA (dat_get_handle_type(3DAT)).
func (i *ia) HandleType() api.HandleType { return api.HandleIA }

// Query returns the IA's attributes and limits, which the provider
// enforces, and the provider's attributes (dat_ia_query(3DAT)).
func (i *ia) Query() (api.IAAttr, api.ProviderAttr, error) {
	fabric.mu.Lock()
	closed := i.closed
	fabric.mu.Unlock()
	if closed {
		return api.IAAttr{}, api.ProviderAttr{}, errIAClosed
	}
	a := iaattr.IA(providerLimits)
	a.AdapterName = "loopback"
	a.Address = i.addr
	a.TransportAttrs = []api.NamedAttr{{Name: "transport", Value: "in-process copy"}}
	p := iaattr.Provider(providerLimits)
	p.ProviderName = "loopback"
	p.ProviderVersionMajor = 1
	p.DTOAsyncReturnGuaranteed = false
	return a, p, nil
}

// AsyncEVD returns the IA's async EVD, created by Open and destroyed by
// Close (dat_ia_open(3DAT)).
func (i *ia) AsyncEVD() (api.EVD, error) {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if i.closed {
		return nil, errIAClosed
	}
	return i.async, nil
}

// objectCount returns how many consumer-visible objects other than the
// async EVD the IA has.
func (i *ia) objectCount() int {
	return len(i.pzs) + len(i.evds) + len(i.cnos) + len(i.eps) + len(i.psps) + len(i.rsps) +
		len(i.crs) + len(i.lmrs) + len(i.rmrs) + len(i.srqs)
}

// Close closes the IA (dat_ia_close(3DAT)). CloseGraceful fails with
// ErrInvalidState (SubStateIAInUse) while any object other than the async
// EVD exists, pending connection requests included. CloseAbrupt destroys
// everything: connections are torn down (peers in other IAs see
// DISCONNECTED), pending requests to this IA are rejected as non-peer
// rejections, EVD waiters return ErrAbort, CNO waiters return a nil EVD,
// and Close returns once no goroutine of the IA runs.
func (i *ia) Close(flags api.CloseFlags) error {
	fabric.mu.Lock()
	if i.closed {
		fabric.mu.Unlock()
		return errIAClosed
	}
	if flags == api.CloseGraceful && i.objectCount() > 0 {
		n := i.objectCount()
		fabric.mu.Unlock()
		return api.Errorf(api.InvalidState, api.SubStateIAInUse, fmt.Sprintf("the IA still has %d object(s)", n))
	}
	waits := i.teardown()
	fabric.mu.Unlock()
	for _, w := range waits {
		w()
	}
	return nil
}

// teardown destroys every object of the IA and returns what to wait for
// once fabric.mu is released. fabric.mu is held.
func (i *ia) teardown() []func() {
	i.closed = true
	delete(fabric.ias, i.addr)
	var waits []func()
	for s := range i.psps {
		s.unlist()
		s.freed = true
	}
	for r := range i.rsps {
		r.unlist()
		r.freed = true
	}
	for c := range i.crs {
		c.abort()
	}
	for e := range i.eps {
		waits = append(waits, e.destroy())
	}
	for r := range i.rmrs {
		r.freed = true
	}
	for l := range i.lmrs {
		l.freed = true
	}
	for s := range i.srqs {
		s.freed = true
	}
	for z := range i.pzs {
		z.freed = true
	}
	for e := range i.evds {
		e.freed = true
		e.Q.Close()
	}
	i.async.freed = true
	i.async.Q.Close()
	for c := range i.cnos {
		c.Close()
		waits = append(waits, c.WaitIdle)
	}
	clear(i.pzs)
	clear(i.evds)
	clear(i.cnos)
	clear(i.eps)
	clear(i.psps)
	clear(i.rsps)
	clear(i.crs)
	clear(i.lmrs)
	clear(i.rmrs)
	clear(i.srqs)
	i.mem.Clear()
	return waits
}

// SyncRDMARead checks that every segment lies inside an LMR of the IA
// (ErrInvalidParameter otherwise) and does nothing more: an incoming RDMA
// read is a copy by the processor, which sees the consumer's writes
// (dat_lmr_sync_rdma_read(3DAT)).
func (i *ia) SyncRDMARead(segs []api.LMRTriplet) error { return i.checkSegments(segs) }

// SyncRDMAWrite checks the segments like SyncRDMARead and does nothing
// more: an incoming RDMA write is a copy by the processor, which the
// consumer sees (dat_lmr_sync_rdma_write(3DAT)).
func (i *ia) SyncRDMAWrite(segs []api.LMRTriplet) error { return i.checkSegments(segs) }

// checkSegments checks that each non-empty segment names an LMR of the IA,
// in any PZ, and lies inside it.
func (i *ia) checkSegments(segs []api.LMRTriplet) error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if i.closed {
		return errIAClosed
	}
	return i.mem.CheckSegments(segs)
}

// CreatePZ creates a protection zone (dat_pz_create(3DAT)).
func (i *ia) CreatePZ() (api.PZ, error) {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if i.closed {
		return nil, errIAClosed
	}
	if len(i.pzs) >= maxObjects {
		return nil, tooMany("PZs")
	}
	z := &pz{ia: i}
	i.pzs[z] = struct{}{}
	return z, nil
}

func tooMany(what string) error {
	return api.Errorf(api.InsufficientResources, api.NoSubtype, fmt.Sprintf("the IA has the maximum number of %s (%d)", what, maxObjects))
}

// pz is a protection zone (dat_pz_create(3DAT)).
type pz struct {
	api.ContextSlot
	ia    *ia
	users int // EPs, LMRs, RMRs and SRQs in the PZ
	freed bool
}

var errPZFreed = api.Errorf(api.InvalidHandle, api.SubHandlePZ, "PZ was freed")

// HandleType reports HandlePZ (dat_get_handle_type(3DAT)).
func (z *pz) HandleType() api.HandleType { return api.HandlePZ }

// Query returns the PZ's IA (dat_pz_query(3DAT)).
func (z *pz) Query() (api.PZParam, error) {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if z.freed {
		return api.PZParam{}, errPZFreed
	}
	return api.PZParam{IA: z.ia}, nil
}

// Free destroys the PZ (dat_pz_free(3DAT)): ErrInvalidState
// (SubStatePZInUse) while an EP, LMR, RMR or SRQ is in it.
func (z *pz) Free() error {
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	if z.freed {
		return errPZFreed
	}
	if z.users > 0 {
		return api.Errorf(api.InvalidState, api.SubStatePZInUse, fmt.Sprintf("%d object(s) use the PZ", z.users))
	}
	z.freed = true
	delete(z.ia.pzs, z)
	return nil
}

// asPZ converts a PZ argument; nil stays nil.
func asPZ(x api.PZ, i *ia) (*pz, error) {
	if x == nil {
		return nil, nil
	}
	z, ok := x.(*pz)
	if !ok || z == nil || z.freed || z.ia != i {
		return nil, api.Errorf(api.InvalidHandle, api.SubHandlePZ, "not a live PZ of this IA")
	}
	return z, nil
}

// pzOrNil returns z as an api.PZ, or a nil interface for a nil z.
func pzOrNil(z *pz) api.PZ {
	if z == nil {
		return nil
	}
	return z
}
