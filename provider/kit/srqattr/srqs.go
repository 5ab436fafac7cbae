package srqattr

import (
	"sync"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
	"github.com/godat/godat/provider/kit/memreg"
)

// SRQ is the part of a software provider's SRQ that does not depend on how
// the provider hands receives to its EPs: the posted receives (Queue), the
// IA and PZ, and the calls HandleType, Query, Resize and SetLW. The
// provider's SRQ type embeds it and writes PostRecv and Free, since only
// the provider knows which EPs wait for a receive and which use the SRQ.
// An SRQs set fills it in at Create; its fields are guarded by the lock
// given to NewSRQs.
type SRQ[I api.IA, Z memreg.Zone] struct {
	api.ContextSlot
	Queue // the posted receives, size and low watermark

	IA I
	PZ Z
	mu sync.Locker
}

// SRQBase returns the SRQ base itself, so that SRQs can fill in the base
// of any provider type that embeds it (the Object constraint).
func (s *SRQ[I, Z]) SRQBase() *SRQ[I, Z] { return s }

// HandleType reports HandleSRQ (dat_get_handle_type(3DAT)).
func (s *SRQ[I, Z]) HandleType() api.HandleType { return api.HandleSRQ }

// Query returns the SRQ's parameters (dat_srq_query(3DAT)): the queue's
// and the IA and PZ.
func (s *SRQ[I, Z]) Query() (api.SRQParam, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prm := s.Param()
	prm.IA, prm.PZ = s.IA, s.PZ
	return prm, nil
}

// Resize changes the maximum number of receives (dat_srq_resize(3DAT));
// see Queue.Resize.
func (s *SRQ[I, Z]) Resize(n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Queue.Resize(n)
}

// SetLW sets the low watermark and arms its one-shot event
// (dat_srq_set_lw(3DAT)); see Queue.SetLW.
func (s *SRQ[I, Z]) SetLW(lw int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Queue.SetLW(lw)
}

// Object is what an SRQs set holds: a pointer to the provider's SRQ type,
// which embeds SRQ.
type Object[I api.IA, Z memreg.Zone] interface {
	comparable
	api.SRQ
	SRQBase() *SRQ[I, Z]
}

// SRQs is an IA's set of SRQs for a software provider: it creates them
// (dat_srq_create(3DAT)) and counts them for a graceful close. Its lock,
// given to NewSRQs, is the provider's.
type SRQs[I api.IA, Z memreg.Zone, S Object[I, Z]] struct {
	kit.Set[S]
	ia              I
	mu              sync.Locker
	maxRecv, maxIOV int
	lowWater        func(api.SRQ)
}

// NewSRQs returns an empty set of ia's SRQs, at most limit of them (0: no
// limit), each holding at most maxRecv receives of maxIOV segments.
// lowWater posts an SRQ's low-watermark event to the IA's async EVD (see
// LowWatermarkEvent) when Queue says it is due; it runs with mu held.
func NewSRQs[I api.IA, Z memreg.Zone, S Object[I, Z]](ia I, mu sync.Locker, limit, maxRecv, maxIOV int, lowWater func(api.SRQ)) SRQs[I, Z, S] {
	return SRQs[I, Z, S]{Set: kit.NewSet[S](api.HandleSRQ, limit), ia: ia, mu: mu, maxRecv: maxRecv, maxIOV: maxIOV, lowWater: lowWater}
}

// Create makes s, a new SRQ of the provider's type, an SRQ of the set's IA
// in pzArg (dat_srq_create(3DAT)) and adds it to the set. A non-zero
// attr.LowWatermark arms the low-watermark event, which fires at once
// since the queue starts empty. Errors are those of CheckCreate,
// kit.PZArg and the set's room; on an error s is not used.
func (t *SRQs[I, Z, S]) Create(pzArg api.PZ, attr api.SRQAttr, s S) (api.SRQ, error) {
	if err := CheckCreate(attr, t.maxRecv, t.maxIOV); err != nil {
		return nil, err
	}
	z, err := kit.PZArg[Z](pzArg)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.Room(); err != nil {
		return nil, err
	}
	b := s.SRQBase()
	b.IA, b.PZ, b.mu = t.ia, z, t.mu
	t.Add(s)
	b.Init(attr, t.maxRecv, func() { t.lowWater(s) })
	return s, nil
}

// RecvPZ is the PZ an EP's receive buffers are checked against: that of
// srq, the SRQ the EP takes its receives from, or pz, the EP's own, when
// srq is nil. The SRQ may be in another PZ than its EPs.
func RecvPZ[I api.IA, Z memreg.Zone, S Object[I, Z]](srq S, pz Z) Z {
	var none S
	if srq != none {
		return srq.SRQBase().PZ
	}
	return pz
}
