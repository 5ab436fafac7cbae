package minimal

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/dispatch"
	"github.com/godat/godat/provider/kit/memreg"
)

// ia is an open IA. It keeps a table of each kind of object it creates,
// for dat_ia_close(3DAT), and the memory registry of its LMRs and RMRs.
type ia struct {
	kit.IA            // handle type, async EVD, closed mark, the start of Close
	kit.UnsupportedIA // no SRQs
	addr              Addr
	async             *evd
	pzs               kit.Set[*pz]
	evds              dispatch.EVDs
	cnos              dispatch.CNOs
	eps               kit.Set[*ep]
	psps              kit.Set[*psp]
	rsps              kit.Set[*rsp]
	crs               kit.Set[*cr]
	lmrs              memreg.LMRs[*pz, *ep]
	rmrs              kit.Set[*rmr]
	mem               *memreg.Table[*pz, *ep]

	// The sync calls check segments only: copies by the processor need no
	// synchronisation.
	memreg.Coherent[*pz, *ep]
}

func newIA(a Addr) *ia {
	n := limits.MaxObjects
	i := &ia{addr: a,
		pzs: kit.NewSet[*pz](api.HandlePZ, n),
		eps: kit.NewSet[*ep](api.HandleEP, n), psps: kit.NewSet[*psp](api.HandlePSP, n),
		rsps: kit.NewSet[*rsp](api.HandleRSP, n), crs: kit.NewSet[*cr](api.HandleCR, 0),
		rmrs: kit.NewSet[*rmr](api.HandleRMR, n), mem: memreg.New[*pz, *ep](),
	}
	i.cnos = dispatch.NewCNOs(i, &fabric.Mutex, n)
	i.evds = dispatch.NewEVDs(i, &i.IA, &fabric.Mutex, limits.MaxEVDQLen, n)
	i.lmrs = memreg.NewLMRs(i, &fabric.Mutex, i.mem, n)
	i.Coherent = memreg.NewCoherent(&i.IA, i.mem)
	return i
}

// Close closes the IA (dat_ia_close(3DAT)). A graceful close fails while
// the IA has objects, pending connection requests included; an abrupt one
// destroys them: peers see their connections end, requesters see
// NON_PEER_REJECTED and waiters are released. It returns once no
// goroutine of the IA runs.
func (i *ia) Close(flags api.CloseFlags) error {
	if err := i.LockClose(flags, &i.pzs, &i.evds, &i.cnos, &i.eps, &i.psps, &i.rsps, &i.crs, &i.lmrs, &i.rmrs); err != nil {
		return err
	}
	delete(fabric.ias, i.addr)
	var waits []func()
	i.psps.Each((*psp).unlist)
	i.rsps.Each((*rsp).unlist)
	i.crs.Each((*cr).abort)
	for p := range i.eps.All() {
		waits = append(waits, p.destroy())
	}
	for e := range i.evds.All() {
		e.Release()
	}
	i.async.Release()
	waits = append(waits, i.cnos.CloseAll())
	i.mem.Clear()
	fabric.Unlock()
	for _, w := range waits {
		w()
	}
	return nil
}

// pz is a protection zone: the kit's base answers HandleType and Query.
type pz struct{ kit.PZ[*ia] }

func (i *ia) CreatePZ() (api.PZ, error) {
	defer lock()()
	return kit.Put[api.PZ](&i.pzs, &pz{kit.PZ[*ia]{IA: i}})
}
func (z *pz) Free() error { return kit.Free(&fabric.Mutex, &z.IA.pzs, z, nil, nil) }

// evd is an event dispatcher: the kit's whole EVD (dispatch.EVDs), since
// every event here is posted by the provider's own code as it happens.
type evd = dispatch.EVDObject

func (i *ia) CreateEVD(qlen int, c api.CNO, flags api.EVDFlags) (api.EVD, error) {
	return i.evds.Create(qlen, c, flags)
}

// CreateCNO and CreateCNOFD make the kit's CNOs.
func (i *ia) CreateCNO(agent api.WaitAgent) (api.CNO, error) { return i.cnos.Create(agent) }
func (i *ia) CreateCNOFD() (api.CNO, int, error)             { return i.cnos.CreateFD() }
