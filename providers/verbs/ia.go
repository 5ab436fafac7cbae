//go:build verbs && cgo

package verbs

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/dispatch"
	"github.com/godat/godat/provider/kit/epattr"
)

// ia is an open verbs Interface Adapter (dat_ia_open(3DAT)): one port of
// one RDMA device, reached through one local IP address. Its mutex guards
// the object sets and every object's state; each EVD's queue has its own
// lock, taken after it.
type ia struct {
	kit.IA           // handle type, async EVD, closed mark, the start of Close
	epattr.CreateEPs // CreateEP and CreateEPWithSRQ, through createEP
	mu               sync.Mutex
	devs             *deviceList // holds librdmacm's device contexts while the IA is open
	dev              *device
	addr             *net.IPAddr
	async            *evd

	cm     *cmChannel                       // the rdma_cm event channel of every id of the IA
	owners map[*C.struct_rdma_cm_id]cmOwner // who each cm id belongs to
	qps    map[uint32]*ep                   // EPs by QP number, for completions
	lkeys  map[uint32]*lmr                  // LMRs by LMR context (lkey), for the checks of a post
	rkeys  map[uint32]*rmr                  // bound RMRs by context, for send-with-invalidate

	// sink takes the completions of EP queues created without an EVD.
	sink    *cq
	sinkEVD *evd

	pzs  kit.Set[*pz]
	evds kit.Set[*evd] // without the async EVD
	cnos dispatch.CNOs
	lmrs kit.Set[*lmr]
	rmrs kit.Set[*rmr]
	eps  kit.Set[*ep]
	psps kit.Set[*psp]
	rsps kit.Set[*rsp]
	srqs kit.Set[*srq]
	crs  kit.Set[*cr]
}

// open opens the IA p names: it finds the device and port, and creates
// the async EVD.
func open(ctx context.Context, p api.OpenParams) (api.IA, error) {
	qlen := max(p.AsyncEVDQLen, 1)
	if qlen > maxEVDQLen {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("async EVD queue length %d exceeds %d", qlen, maxEVDQLen))
	}
	if why := unavailable(); why != "" {
		return nil, notFound(why)
	}
	devs, err := getDevices()
	if err != nil {
		return nil, err
	}
	dev, err := resolve(devs, p.Params)
	if err != nil {
		devs.free()
		return nil, err
	}
	if ctx.Err() != nil {
		devs.free()
		return nil, api.ContextError(ctx)
	}
	i := &ia{
		devs: devs, dev: dev, addr: &net.IPAddr{IP: dev.ip, Zone: ""},
		owners: map[*C.struct_rdma_cm_id]cmOwner{}, qps: map[uint32]*ep{}, lkeys: map[uint32]*lmr{}, rkeys: map[uint32]*rmr{},
		// Each kind is bounded by what the device holds of the resource
		// it takes (a QP an EP, a CQ an EVD, ...).
		pzs:  kit.NewSet[*pz](api.HandlePZ, dev.attr.MaxPD),
		evds: kit.NewSet[*evd](api.HandleEVD, dev.attr.MaxCQ),
		lmrs: kit.NewSet[*lmr](api.HandleLMR, dev.attr.MaxMR),
		rmrs: kit.NewSet[*rmr](api.HandleRMR, dev.attr.MaxMW),
		eps:  kit.NewSet[*ep](api.HandleEP, dev.attr.MaxQP),
		psps: kit.NewSet[*psp](api.HandlePSP, 0),
		rsps: kit.NewSet[*rsp](api.HandleRSP, 0),
		srqs: kit.NewSet[*srq](api.HandleSRQ, dev.attr.MaxSRQ),
		crs:  kit.NewSet[*cr](api.HandleCR, 0),
	}
	i.cnos = dispatch.NewCNOs(i, &i.mu, 0)
	i.CreateEPs = epattr.CreateEPs{Defaults: defaultEPAttr(dev), Limits: epLimits(dev), Create: i.createEP}
	i.async = newEVD(i, qlen, api.EVDAsync, nil)
	i.InitIA(&i.mu, i.async)
	i.sinkEVD = &evd{ia: i}
	if i.cm, err = newCMChannel(i); err != nil {
		devs.free()
		return nil, err
	}
	if err := i.joinAsync(); err != nil {
		i.cm.close()
		devs.free()
		return nil, err
	}
	return i, nil
}

// Query returns the IA's attributes, which are the device's limits, and
// the provider's attributes (dat_ia_query(3DAT)). The address is a
// *net.IPAddr, the IA's local IP; TransportAttrs name the device, port,
// link layer, GID and MTU, VendorAttrs the device's identity.
func (i *ia) Query() (api.IAAttr, api.ProviderAttr, error) {
	if err := i.Live(); err != nil {
		return api.IAAttr{}, api.ProviderAttr{}, err
	}
	return iaAttr(i.dev, i.addr), providerAttr(i.dev), nil
}

// Close closes the IA (dat_ia_close(3DAT)). CloseGraceful refuses while
// objects other than the async EVD exist; CloseAbrupt destroys them all,
// releasing their rdma-core resources before it returns.
func (i *ia) Close(flags api.CloseFlags) error {
	if err := i.LockClose(flags, &i.pzs, &i.evds, &i.cnos, &i.lmrs, &i.rmrs, &i.eps, &i.psps, &i.rsps, &i.srqs, &i.crs); err != nil {
		return err
	}
	// Children before parents: requests, listeners and connections, QPs,
	// then CQs, MRs and PDs.
	for c := range i.crs.All() {
		refuse(c.id)
		c.drop()
	}
	i.psps.Each((*psp).stop)
	i.rsps.Each((*rsp).stop)
	i.rmrs.Each((*rmr).destroy)
	i.eps.Each((*ep).destroy)
	var cqs []*cq
	for e := range i.evds.All() {
		e.Release()
		if e.cq != nil {
			cqs = append(cqs, e.cq)
		}
	}
	if i.sink != nil {
		cqs = append(cqs, i.sink)
	}
	i.srqs.Each((*srq).destroy)
	for l := range i.lmrs.All() {
		l.rmrs = 0
		l.destroy()
	}
	for z := range i.pzs.All() {
		z.destroy()
	}
	i.async.Release()
	cnosIdle := i.cnos.CloseAll()
	kit.ClearAll(&i.lmrs, &i.rmrs, &i.pzs, &i.evds, &i.eps, &i.psps, &i.rsps, &i.srqs, &i.crs)
	clear(i.rkeys)
	clear(i.owners)
	i.mu.Unlock()
	// The watchers take ia.mu: stop them without it.
	for _, c := range cqs {
		c.destroy()
	}
	i.cm.close()
	i.leaveAsync()
	i.devs.free()
	cnosIdle()
	return nil
}

// SyncRDMARead checks that every segment lies inside an LMR of the IA and
// does nothing more: on the machines rdma-core supports, DMA is coherent
// with the processor's caches, so a device's read sees the consumer's
// writes and the consumer sees a device's writes
// (dat_lmr_sync_rdma_read(3DAT)).
func (i *ia) SyncRDMARead(segs []api.LMRTriplet) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	_, err := i.checkIOV(segs, nil, 0)
	return err
}

// SyncRDMAWrite is SyncRDMARead for dat_lmr_sync_rdma_write(3DAT).
func (i *ia) SyncRDMAWrite(segs []api.LMRTriplet) error { return i.SyncRDMARead(segs) }

// deviceText is the device, port and address in one phrase, for messages.
func (d *device) String() string {
	return d.name + " port " + strconv.Itoa(int(d.port.Num)) + " (" + d.ip.String() + ")"
}
