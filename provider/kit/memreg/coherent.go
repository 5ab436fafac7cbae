package memreg

import (
	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
)

// Coherent is dat_lmr_sync_rdma_read(3DAT) and dat_lmr_sync_rdma_write(3DAT)
// for a provider whose memory needs no synchronisation: its RDMA is a
// copy by the processor, or the transport keeps memory coherent, so that
// the consumer's writes are seen by an incoming RDMA read and an incoming
// RDMA write is seen by the consumer. Both calls check that every
// non-empty segment lies inside an LMR of the IA, in any PZ
// (Table.CheckSegments), under the IA's lock and only while it is open
// (kit.ErrIAClosed otherwise), and do nothing more. A provider's IA embeds
// it, set with NewCoherent.
type Coherent[PZ, EP comparable] struct {
	ia  *kit.IA
	mem *Table[PZ, EP]
}

// NewCoherent returns the sync calls of the IA whose base is ia and whose
// LMRs mem holds.
func NewCoherent[PZ, EP comparable](ia *kit.IA, mem *Table[PZ, EP]) Coherent[PZ, EP] {
	return Coherent[PZ, EP]{ia: ia, mem: mem}
}

// SyncRDMARead checks segs and does nothing more (dat_lmr_sync_rdma_read(3DAT)).
func (c Coherent[PZ, EP]) SyncRDMARead(segs []api.LMRTriplet) error {
	return c.ia.WhileOpen(func() error { return c.mem.CheckSegments(segs) })
}

// SyncRDMAWrite checks segs and does nothing more (dat_lmr_sync_rdma_write(3DAT)).
func (c Coherent[PZ, EP]) SyncRDMAWrite(segs []api.LMRTriplet) error { return c.SyncRDMARead(segs) }
