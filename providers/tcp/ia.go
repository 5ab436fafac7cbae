package tcp

import (
	"fmt"
	"net"
	"sync"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/dispatch"
	"github.com/godat/godat/provider/kit/epattr"
	"github.com/godat/godat/provider/kit/iaattr"
	"github.com/godat/godat/provider/kit/memreg"
	"github.com/godat/godat/provider/kit/srqattr"
)

// ia is an open tcp Interface Adapter (dat_ia_open(3DAT)). Its mutex
// guards the state of every object of the IA, the connections' queues
// included; each EVD has its own lock, taken after it.
type ia struct {
	kit.IA           // handle type, async EVD, closed mark, the start of Close
	epattr.CreateEPs // CreateEP and CreateEPWithSRQ, through createEP
	mu               sync.Mutex
	ip               net.IP
	addr             *net.IPAddr
	opts             options // from platform_params; set by Open, then read-only
	async            *evd
	wg               sync.WaitGroup // every goroutine of the IA: acceptors, readers, writers
	// handshakes counts the accepted connections whose HELLO has not yet
	// come (acceptLoop, passive); on mu.
	handshakes int

	srqCond *sync.Cond // readers waiting for an SRQ receive; on mu

	pzs  kit.Set[*pz]
	evds kit.Set[*evd] // without the async EVD
	cnos dispatch.CNOs
	eps  kit.Set[*ep]
	psps kit.Set[*psp]
	rsps kit.Set[*rsp]
	crs  kit.Set[*cr]
	lmrs memreg.LMRs[*pz, *ep]
	rmrs kit.Set[*rmr]
	srqs srqattr.SRQs[*ia, *pz, *srq]
	mem  *memreg.Table[*pz, *ep]

	// The sync calls check segments only: the memory is coherent.
	memreg.Coherent[*pz, *ep]
}

func newIA(ip net.IP) *ia {
	i := &ia{
		ip: ip, addr: &net.IPAddr{IP: ip},
		pzs:  kit.NewSet[*pz](api.HandlePZ, providerLimits.MaxObjects),
		evds: kit.NewSet[*evd](api.HandleEVD, providerLimits.MaxObjects),
		eps:  kit.NewSet[*ep](api.HandleEP, providerLimits.MaxObjects),
		psps: kit.NewSet[*psp](api.HandlePSP, providerLimits.MaxObjects),
		rsps: kit.NewSet[*rsp](api.HandleRSP, providerLimits.MaxObjects),
		crs:  kit.NewSet[*cr](api.HandleCR, 0),
		rmrs: kit.NewSet[*rmr](api.HandleRMR, providerLimits.MaxObjects),
		mem:  memreg.New[*pz, *ep](),
	}
	i.srqCond = sync.NewCond(&i.mu)
	i.cnos = dispatch.NewCNOs(i, &i.mu, providerLimits.MaxObjects)
	i.lmrs = memreg.NewLMRs(i, &i.mu, i.mem, providerLimits.MaxObjects)
	i.CreateEPs = epattr.CreateEPs{Defaults: defaultEPAttr, Limits: epLimits, Create: i.createEP}
	i.srqs = srqattr.NewSRQs[*ia, *pz, *srq](i, &i.mu, providerLimits.MaxObjects, providerLimits.MaxRecvPerSRQ, providerLimits.MaxIOV,
		func(s api.SRQ) { i.async.PostAsync(srqattr.LowWatermarkEvent, s, api.ReasonSRQLowWatermark) })
	i.Coherent = memreg.NewCoherent(&i.IA, i.mem)
	i.cnos.Prepare = func(c *dispatch.CNOObject) { c.BeforeWait = func() { i.handBackFeeds(c.State()) } }
	return i
}

// Query returns the IA's attributes and limits, which the provider
// enforces, and the provider's attributes (dat_ia_query(3DAT)). The
// address is a *net.IPAddr: the IA's local IP.
func (i *ia) Query() (api.IAAttr, api.ProviderAttr, error) {
	if err := i.Live(); err != nil {
		return api.IAAttr{}, api.ProviderAttr{}, err
	}
	a, p := iaattr.Named(providerLimits, "tcp", &net.IPAddr{IP: i.ip}, true,
		api.NamedAttr{Name: "transport", Value: "tcp"}, api.NamedAttr{Name: "wire_version", Value: fmt.Sprint(wireVersion)})
	return a, p, nil
}

// Close closes the IA (dat_ia_close(3DAT)). CloseGraceful fails with
// ErrInvalidState (SubStateIAInUse) while any object other than the async
// EVD exists. CloseAbrupt destroys everything: listeners close, pending
// requests are refused (the requesters see NON_PEER_REJECTED), connected
// peers get DISCONNECTED (or BROKEN if the DISCONNECT frame cannot be
// written), EVD waiters return ErrAbort and CNO waiters a nil EVD. Close
// returns once every goroutine of the IA has ended.
func (i *ia) Close(flags api.CloseFlags) error {
	if err := i.LockClose(flags, &i.pzs, &i.evds, &i.cnos, &i.eps, &i.psps, &i.rsps, &i.crs, &i.lmrs, &i.rmrs, &i.srqs); err != nil {
		return err
	}
	i.psps.Each((*psp).stop)
	i.rsps.Each((*rsp).stop)
	i.crs.Each((*cr).abort)
	for p := range i.eps.All() {
		p.destroy()
	}
	for e := range i.evds.All() {
		e.Release()
		e.closeDriver()
	}
	i.async.Release()
	cnosIdle := i.cnos.CloseAll()
	i.srqCond.Broadcast()
	kit.ClearAll(&i.pzs, &i.evds, &i.eps, &i.psps, &i.rsps, &i.crs, &i.lmrs, &i.rmrs, &i.srqs, i.mem)
	i.mu.Unlock()
	i.wg.Wait()
	cnosIdle()
	return nil
}

// CreatePZ creates a protection zone (dat_pz_create(3DAT)).
func (i *ia) CreatePZ() (api.PZ, error) {
	return kit.Create[api.PZ](&i.mu, &i.pzs, &pz{kit.PZ[*ia]{IA: i}})
}

// pz is a protection zone (dat_pz_create(3DAT)).
type pz struct{ kit.PZ[*ia] }

// Free destroys the PZ (dat_pz_free(3DAT)); the registry's guard refuses
// it while objects use the PZ.
func (z *pz) Free() error { return kit.Free(&z.IA.mu, &z.IA.pzs, z, nil, nil) }
