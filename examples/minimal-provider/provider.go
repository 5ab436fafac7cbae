// Package minimal is a small DAT provider written the way a third-party
// vendor writes one: in a module of its own, from godat's public packages
// only (api, provider, provider/kit and plugin). It is the example of
// godat's provider kit; README.md beside it walks through writing it.
//
// Its transport is the simplest there is: IAs of one process find each
// other through a process-wide table and move data by memory copy. All
// the IAs a program opens through the plugin executable (cmd/minimal-plugin)
// live in that one plugin process, so they connect to each other too.
//
// It supports IAs, PZs, EVDs, CNOs (with and without a descriptor), EPs
// that connect, accept, reject, disconnect and duplicate connections, with
// watermarks, PSPs (PSPAny too), RSPs, CRs with hand-off, LMRs, RMRs,
// sends, receives and RDMA writes and reads: the conformance suite checks
// each of them. It leaves out, as its attributes say, shared receive
// queues with the receive counts of dat_ep_recv_query(3DAT) (answered
// with ErrModelNotSupported by the kit's Unsupported bases) and PSPs that
// create EPs (which the guard refuses, since ProviderAttr.EPCreator says
// never).
//
// It relies on the registry's guard (see package api) for every check of
// handles, freed objects, objects in use and the arguments the guard
// checks, so it makes none of them. Its choices, where the pages leave
// one: one process-wide mutex guards every object (EVD queues have their
// own locks); a DTO runs when it is posted, except that a send that finds
// no receive at the peer waits at the head of the EP's request queue,
// with the requests posted after it, until the peer posts one; a service
// point's backlog is the free space of its EVD.
package minimal

import (
	"context"
	"strconv"
	"sync"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
	"github.com/godat/godat/provider/kit/connreq"
	"github.com/godat/godat/provider/kit/dispatch"
	"github.com/godat/godat/provider/kit/epattr"
	"github.com/godat/godat/provider/kit/iaattr"
)

func init() { provider.Register("minimal", Provider{}) }

// Provider opens minimal IAs; the package registers it as "minimal".
type Provider struct{}

// Addr is the address of a minimal IA: a number unique in the process.
type Addr uint64

// Network returns "minimal".
func (Addr) Network() string { return "minimal" }

// String returns the address as "minimal#N".
func (a Addr) String() string { return "minimal#" + strconv.FormatUint(uint64(a), 10) }

// limits are the provider's limits, reported by IA.Query and enforced by
// the registry's guard: a software provider's, made smaller.
var limits = func() iaattr.Limits {
	l := iaattr.Software()
	l.MaxObjects, l.MaxEVDQLen, l.MaxIOV, l.MaxDTOPerEP = 1<<14, 1<<16, 16, 1<<12
	l.MaxPrivateData, l.MaxRDMAReadPerEP, l.MaxRecvPerSRQ, l.MaxEPPerSRQ = 256, 16, 0, 0
	return l
}()

// defaultEPAttr fills the limits an EP's attributes leave at zero.
var defaultEPAttr = epattr.Defaults(limits.EP(), 256, 16, 16)

// fabric is the process-wide state: the open IAs, the listening service
// points by connection qualifier, and the one lock over every object.
var fabric = struct {
	sync.Mutex
	ias   map[Addr]*ia
	quals connreq.Quals[*point]
	next  uint64 // IA addresses and active port qualifiers
}{ias: map[Addr]*ia{}, quals: connreq.NewQuals[*point](0xC000)}

// Open opens a new IA with an address of its own (dat_ia_open(3DAT)); it
// never blocks. The parameters of the configuration entry are ignored.
func (Provider) Open(ctx context.Context, p api.OpenParams) (api.IA, error) {
	qlen, err := dispatch.CheckOpen(ctx, p, limits.MaxEVDQLen)
	if err != nil {
		return nil, err
	}
	defer lock()()
	fabric.next++
	i := newIA(Addr(fabric.next))
	i.async = i.evds.OpenAsync(qlen)
	i.InitIA(&fabric.Mutex, i.async)
	fabric.ias[i.addr] = i
	return i, nil
}

// Query reports the limits and what the provider leaves out
// (dat_ia_query(3DAT)).
func (i *ia) Query() (api.IAAttr, api.ProviderAttr, error) {
	a, p := iaattr.Named(limits, "minimal", i.addr, false)
	a.MaxSRQs, a.MaxEPPerSRQ, a.MaxRecvPerSRQ = 0, 0, 0
	p.EPCreator = api.PSPCreatesEPNever
	p.SRQSupported, p.SRQEPPZDifferenceSupported = false, false
	p.SRQWatermarksSupported, p.SRQInfoSupported, p.EPRecvInfoSupported = 0, 0, 0
	return a, p, nil
}

// lock takes fabric's lock and returns its unlock: defer lock()().
func lock() func() {
	fabric.Lock()
	return fabric.Unlock
}
