package epattr

import "github.com/godat/godat/api"

// Links is what an EP is attached to, held as the provider's own types:
// its PZ, its three EVDs and its SRQ (dat_ep_create(3DAT),
// dat_ep_create_with_srq(3DAT)). A provider's EP embeds it beside
// Endpoint and guards it with the same lock. Any of them may be missing,
// the zero value of its type: an EP need not have a PZ or EVDs, and only
// an EP created with an SRQ has one.
//
// Z, E and S are the provider's pointer types; a provider without SRQs
// names *NoSRQ for S.
type Links[Z interface {
	comparable
	api.PZ
}, E interface {
	comparable
	api.EVD
}, S interface {
	comparable
	api.SRQ
}] struct {
	PZ                              Z
	RecvEVD, RequestEVD, ConnectEVD E
	SRQ                             S
}

// Link attaches the PZ and EVDs a create call names, which the guard has
// checked belong to the EP's IA; a nil handle leaves its link missing.
func (l *Links[Z, E, S]) Link(pz api.PZ, recv, request, connect api.EVD) {
	l.PZ, _ = pz.(Z)
	l.RecvEVD, _ = recv.(E)
	l.RequestEVD, _ = request.(E)
	l.ConnectEVD, _ = connect.(E)
}

// Fill sets the PZ, EVD and SRQ handles of prm as dat_ep_query(3DAT)
// reports them: nil interfaces for the missing ones.
func (l *Links[Z, E, S]) Fill(prm *api.EPParam) {
	var z Z
	var e E
	var s S
	prm.PZ, prm.RecvEVD, prm.RequestEVD, prm.ConnectEVD, prm.SRQ = nil, nil, nil, nil, nil
	if l.PZ != z {
		prm.PZ = l.PZ
	}
	if l.RecvEVD != e {
		prm.RecvEVD = l.RecvEVD
	}
	if l.RequestEVD != e {
		prm.RequestEVD = l.RequestEVD
	}
	if l.ConnectEVD != e {
		prm.ConnectEVD = l.ConnectEVD
	}
	if l.SRQ != s {
		prm.SRQ = l.SRQ
	}
}

// Apply attaches the PZ and EVDs that mask selects from prm
// (dat_ep_modify(3DAT)); CheckModify and Modifiable have passed the change.
func (l *Links[Z, E, S]) Apply(mask api.EPParamMask, prm *api.EPParam) {
	if mask&api.EPFieldPZ != 0 {
		l.PZ, _ = prm.PZ.(Z)
	}
	if mask&api.EPFieldRecvEVD != 0 {
		l.RecvEVD, _ = prm.RecvEVD.(E)
	}
	if mask&api.EPFieldRequestEVD != 0 {
		l.RequestEVD, _ = prm.RequestEVD.(E)
	}
	if mask&api.EPFieldConnectEVD != 0 {
		l.ConnectEVD, _ = prm.ConnectEVD.(E)
	}
}

// NoSRQ stands for the SRQ type of a provider without SRQs in Links:
// *NoSRQ is always nil there.
type NoSRQ struct{ api.SRQ }
