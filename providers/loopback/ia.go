package loopback

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/dispatch"
	"github.com/godat/godat/provider/kit/epattr"
	"github.com/godat/godat/provider/kit/iaattr"
	"github.com/godat/godat/provider/kit/memreg"
	"github.com/godat/godat/provider/kit/srqattr"
)

// ia is an open loopback Interface Adapter (dat_ia_open(3DAT)). It owns
// every object created through it; all fields are guarded by fabric.mu.
type ia struct {
	kit.IA           // handle type, async EVD, closed mark, the start of Close
	epattr.CreateEPs // CreateEP and CreateEPWithSRQ, through createEP
	addr             Addr
	async            *evd

	pzs  kit.Set[*pz]
	evds dispatch.EVDs // without the async EVD
	cnos dispatch.CNOs
	eps  kit.Set[*ep]
	psps kit.Set[*psp]
	rsps kit.Set[*rsp]
	crs  kit.Set[*cr] // pending connection requests
	lmrs memreg.LMRs[*pz, *ep]
	rmrs kit.Set[*rmr]
	srqs srqattr.SRQs[*ia, *pz, *srq]
	mem  *memreg.Table[*pz, *ep] // LMR and RMR contexts

	// The sync calls check segments only: an RDMA is a copy by the processor.
	memreg.Coherent[*pz, *ep]
}

func newIA(a Addr) *ia {
	i := &ia{
		addr: a,
		pzs:  kit.NewSet[*pz](api.HandlePZ, providerLimits.MaxObjects),
		eps:  kit.NewSet[*ep](api.HandleEP, providerLimits.MaxObjects),
		psps: kit.NewSet[*psp](api.HandlePSP, providerLimits.MaxObjects),
		rsps: kit.NewSet[*rsp](api.HandleRSP, providerLimits.MaxObjects),
		crs:  kit.NewSet[*cr](api.HandleCR, 0),
		rmrs: kit.NewSet[*rmr](api.HandleRMR, providerLimits.MaxObjects),
		mem:  memreg.New[*pz, *ep](),
	}
	i.cnos = dispatch.NewCNOs(i, &fabric.mu, providerLimits.MaxObjects)
	i.evds = dispatch.NewEVDs(i, &i.IA, &fabric.mu, providerLimits.MaxEVDQLen, providerLimits.MaxObjects)
	i.lmrs = memreg.NewLMRs(i, &fabric.mu, i.mem, providerLimits.MaxObjects)
	i.CreateEPs = epattr.CreateEPs{Defaults: defaultEPAttr, Limits: epLimits, Create: i.createEP}
	i.srqs = srqattr.NewSRQs[*ia, *pz, *srq](i, &fabric.mu, providerLimits.MaxObjects, providerLimits.MaxRecvPerSRQ, providerLimits.MaxIOV,
		func(s api.SRQ) { i.async.PostAsync(srqattr.LowWatermarkEvent, s, api.ReasonSRQLowWatermark) })
	i.Coherent = memreg.NewCoherent(&i.IA, i.mem)
	return i
}

// Query returns the IA's attributes and limits, which the provider
// enforces, and the provider's attributes (dat_ia_query(3DAT)).
func (i *ia) Query() (api.IAAttr, api.ProviderAttr, error) {
	if err := i.Live(); err != nil {
		return api.IAAttr{}, api.ProviderAttr{}, err
	}
	a, p := iaattr.Named(providerLimits, "loopback", i.addr, false, api.NamedAttr{Name: "transport", Value: "in-process copy"})
	return a, p, nil
}

// Close closes the IA (dat_ia_close(3DAT)). CloseGraceful fails with
// ErrInvalidState (SubStateIAInUse) while any object other than the async
// EVD exists, pending connection requests included. CloseAbrupt destroys
// everything: connections are torn down (peers in other IAs see
// DISCONNECTED), pending requests to this IA are rejected as non-peer
// rejections, EVD waiters return ErrAbort, CNO waiters return a nil EVD,
// and Close returns once no goroutine of the IA runs.
func (i *ia) Close(flags api.CloseFlags) error {
	// Pending connection requests keep a graceful close from closing it
	// too; the async EVD belongs to the IA.
	if err := i.LockClose(flags, &i.pzs, &i.evds, &i.cnos, &i.eps, &i.psps, &i.rsps, &i.crs, &i.lmrs, &i.rmrs, &i.srqs); err != nil {
		return err
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
	delete(fabric.ias, i.addr)
	var waits []func()
	i.psps.Each((*psp).unlist)
	i.rsps.Each((*rsp).unlist)
	i.crs.Each((*cr).abort)
	for e := range i.eps.All() {
		waits = append(waits, e.destroy())
	}
	for e := range i.evds.All() {
		e.Release()
	}
	i.async.Release()
	waits = append(waits, i.cnos.CloseAll())
	kit.ClearAll(&i.pzs, &i.evds, &i.eps, &i.psps, &i.rsps, &i.crs, &i.lmrs, &i.rmrs, &i.srqs, i.mem)
	return waits
}

// CreatePZ creates a protection zone (dat_pz_create(3DAT)).
func (i *ia) CreatePZ() (api.PZ, error) {
	return kit.Create[api.PZ](&fabric.mu, &i.pzs, &pz{kit.PZ[*ia]{IA: i}})
}

// pz is a protection zone (dat_pz_create(3DAT)).
type pz struct{ kit.PZ[*ia] }

// Free destroys the PZ (dat_pz_free(3DAT)); the guard has refused it while
// an EP, LMR, RMR or SRQ is in it.
func (z *pz) Free() error { return kit.Free(&fabric.mu, &z.IA.pzs, z, nil, nil) }
