// Package epattr holds the Endpoint attribute handling that godat's
// software providers share (dat_ep_create(3DAT), dat_ep_modify(3DAT)):
// filling unset limits with a provider's defaults, checking attributes
// against its limits, and the checks, state rules and merge of
// dat_ep_modify(3DAT) and dat_ep_set_watermark(3DAT). A provider checks
// here even though the registry's guard checks the same limits, so that it
// stays safe when called directly.
package epattr

import (
	"fmt"
	"slices"

	"github.com/godat/godat/api"
)

// Limits are the largest values a provider accepts in EP attributes.
type Limits struct {
	MaxDTOs        int // receive or request DTOs per EP
	MaxIOV         int // segments per DTO
	MaxRDMAReads   int // outstanding RDMA reads per EP, each way
	MaxMessageSize int
	MaxRDMASize    int
	QOS            api.QOS             // the QOS bits the provider supports
	Flags          api.CompletionFlags // the completion flags it supports
}

// WithDefaults returns a with its zero limits replaced by those of d, and
// its named-attribute slices copied so the EP owns them.
func WithDefaults(a, d api.EPAttr) api.EPAttr {
	set := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	if a.MaxMessageSize == 0 {
		a.MaxMessageSize = d.MaxMessageSize
	}
	if a.MaxRDMASize == 0 {
		a.MaxRDMASize = d.MaxRDMASize
	}
	set(&a.MaxRecvDTOs, d.MaxRecvDTOs)
	set(&a.MaxRequestDTOs, d.MaxRequestDTOs)
	set(&a.MaxRecvIOV, d.MaxRecvIOV)
	set(&a.MaxRequestIOV, d.MaxRequestIOV)
	set(&a.MaxRDMAReadIOV, d.MaxRDMAReadIOV)
	set(&a.MaxRDMAWriteIOV, d.MaxRDMAWriteIOV)
	a.TransportSpecific = slices.Clone(a.TransportSpecific)
	a.ProviderSpecific = slices.Clone(a.ProviderSpecific)
	return a
}

// Defaults returns the attributes an EP of a provider with limits l gets
// where its consumer sets none: the RC service, messages and RDMA
// transfers as large as l allows, dtos receive and request DTOs, iov
// segments for every kind of DTO and reads RDMA reads each way. A provider
// passes it to WithDefaults and Resolve.
func Defaults(l Limits, dtos, iov, reads int) api.EPAttr {
	return api.EPAttr{
		ServiceType:    api.ServiceRC,
		MaxMessageSize: uint32(l.MaxMessageSize), MaxRDMASize: uint32(l.MaxRDMASize),
		MaxRecvDTOs: dtos, MaxRequestDTOs: dtos,
		MaxRecvIOV: iov, MaxRequestIOV: iov, MaxRDMAReadIOV: iov, MaxRDMAWriteIOV: iov,
		MaxRDMAReadIn: reads, MaxRDMAReadOut: reads,
	}
}

// Resolve returns the attributes an EP is created with
// (dat_ep_create(3DAT)): d for a nil attr; otherwise *attr with its zero
// limits taken from d (WithDefaults) and checked against l (Check), whose
// error it returns. attr is not modified.
func Resolve(attr *api.EPAttr, d api.EPAttr, l Limits) (api.EPAttr, error) {
	if attr == nil {
		return d, nil
	}
	a := WithDefaults(*attr, d)
	if err := Check(&a, l); err != nil {
		return api.EPAttr{}, err
	}
	return a, nil
}

// CreateEPs gives an IA both EP create calls, dat_ep_create(3DAT) and
// dat_ep_create_with_srq(3DAT), over one function of the provider's that
// takes the SRQ, nil for an EP without one, and the EP's attributes
// resolved against Defaults and Limits (Resolve): a nil attr gets the
// defaults, and one that breaks a limit is refused before Create runs.
// The two calls differ in nothing else for a software provider. The
// provider's IA type embeds it and sets its fields when it makes the IA.
type CreateEPs struct {
	Defaults api.EPAttr
	Limits   Limits
	Create   func(pz api.PZ, recv, request, connect api.EVD, srq api.SRQ, attr api.EPAttr) (api.EP, error)
}

// CreateEP creates an EP without an SRQ (dat_ep_create(3DAT)).
func (c *CreateEPs) CreateEP(pz api.PZ, recv, request, connect api.EVD, attr *api.EPAttr) (api.EP, error) {
	return c.CreateEPWithSRQ(pz, recv, request, connect, nil, attr)
}

// CreateEPWithSRQ creates an EP that takes its receive buffers from srq
// (dat_ep_create_with_srq(3DAT)); the guard has refused a nil srq or
// attr, which the page requires.
func (c *CreateEPs) CreateEPWithSRQ(pz api.PZ, recv, request, connect api.EVD, srq api.SRQ, attr *api.EPAttr) (api.EP, error) {
	a, err := Resolve(attr, c.Defaults, c.Limits)
	if err != nil {
		return nil, err
	}
	return c.Create(pz, recv, request, connect, srq, a)
}

// Check reports the first attribute of a outside l: ErrInvalidParameter
// for a limit, a service other than RC or unknown completion flags, and
// ErrModelNotSupported for an unsupported QOS.
func Check(a *api.EPAttr, l Limits) error {
	for _, c := range []struct {
		f      string
		v, max int
	}{
		{"MaxRecvDTOs", a.MaxRecvDTOs, l.MaxDTOs},
		{"MaxRequestDTOs", a.MaxRequestDTOs, l.MaxDTOs},
		{"MaxRecvIOV", a.MaxRecvIOV, l.MaxIOV},
		{"MaxRequestIOV", a.MaxRequestIOV, l.MaxIOV},
		{"MaxRDMAReadIOV", a.MaxRDMAReadIOV, l.MaxIOV},
		{"MaxRDMAWriteIOV", a.MaxRDMAWriteIOV, l.MaxIOV},
		{"MaxRDMAReadIn", a.MaxRDMAReadIn, l.MaxRDMAReads},
		{"MaxRDMAReadOut", a.MaxRDMAReadOut, l.MaxRDMAReads},
		{"MaxMessageSize", int(a.MaxMessageSize), l.MaxMessageSize},
		{"MaxRDMASize", int(a.MaxRDMASize), l.MaxRDMASize},
	} {
		if c.v < 0 || c.v > c.max {
			return api.Errorf(api.InvalidParameter, api.NoSubtype, fmt.Sprintf("EP attribute %s = %d outside 0..%d", c.f, c.v, c.max))
		}
	}
	switch {
	case a.ServiceType != api.ServiceRC:
		return api.Errorf(api.InvalidParameter, api.NoSubtype, "only the reliable connection service is supported")
	case a.QOS&^l.QOS != 0:
		return api.Errorf(api.ModelNotSupported, api.NoSubtype, fmt.Sprintf("QOS %#x is not supported", uint32(a.QOS)))
	case a.RecvCompletionFlags&^l.Flags != 0 || a.RequestCompletionFlags&^l.Flags != 0:
		return api.Errorf(api.InvalidParameter, api.NoSubtype, "EP completion flags name unknown bits")
	case a.SRQSoftHighWatermark < api.WatermarkInfinite:
		return api.Errorf(api.InvalidParameter, api.NoSubtype, "SRQ soft high watermark is negative")
	}
	return nil
}

// Fields that dat_ep_modify(3DAT) cannot change.
const fixedFields = api.EPFieldIA | api.EPFieldState | api.EPFieldLocalAddr | api.EPFieldLocalPortQual |
	api.EPFieldRemoteAddr | api.EPFieldRemotePortQual | api.EPFieldSRQ

const evdFields = api.EPFieldRecvEVD | api.EPFieldRequestEVD | api.EPFieldConnectEVD

// CheckModify checks the arguments of dat_ep_modify(3DAT) that do not
// depend on the EP: prm must not be nil, and mask must name only fields
// that exist and may change (not the IA, state, addresses, port
// qualifiers or SRQ); ErrInvalidParameter otherwise.
func CheckModify(mask api.EPParamMask, prm *api.EPParam) error {
	if prm == nil {
		return api.Errorf(api.InvalidParameter, api.SubArg3, "EP parameters are nil")
	}
	if mask&^api.EPFieldAll != 0 || mask&fixedFields != 0 {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("EP parameter mask %#x names fields that cannot be modified", uint64(mask)))
	}
	return nil
}

// Modifiable reports whether an EP in state s may change the fields of
// mask: the PZ only in UNCONNECTED and TENTATIVE_CONNECTION_PENDING, the
// EVDs and attributes also in RESERVED and PASSIVE_CONNECTION_PENDING.
func Modifiable(s api.EPState, mask api.EPParamMask) bool {
	quiescent := s == api.EPUnconnected || s == api.EPTentativeConnectionPending
	preAccept := quiescent || s == api.EPReserved || s == api.EPPassiveConnectionPending
	return (mask&api.EPFieldPZ == 0 || quiescent) && (mask&(evdFields|api.EPFieldAttrAll) == 0 || preAccept)
}

// Merge copies the attribute fields mask selects from src into dst.
func Merge(dst, src *api.EPAttr, mask api.EPParamMask) {
	if mask&api.EPFieldServiceType != 0 {
		dst.ServiceType = src.ServiceType
	}
	if mask&api.EPFieldMaxMessageSize != 0 {
		dst.MaxMessageSize = src.MaxMessageSize
	}
	if mask&api.EPFieldMaxRDMASize != 0 {
		dst.MaxRDMASize = src.MaxRDMASize
	}
	if mask&api.EPFieldQOS != 0 {
		dst.QOS = src.QOS
	}
	if mask&api.EPFieldRecvCompletionFlags != 0 {
		dst.RecvCompletionFlags = src.RecvCompletionFlags
	}
	if mask&api.EPFieldRequestCompletionFlags != 0 {
		dst.RequestCompletionFlags = src.RequestCompletionFlags
	}
	if mask&api.EPFieldMaxRecvDTOs != 0 {
		dst.MaxRecvDTOs = src.MaxRecvDTOs
	}
	if mask&api.EPFieldMaxRequestDTOs != 0 {
		dst.MaxRequestDTOs = src.MaxRequestDTOs
	}
	if mask&api.EPFieldMaxRecvIOV != 0 {
		dst.MaxRecvIOV = src.MaxRecvIOV
	}
	if mask&api.EPFieldMaxRequestIOV != 0 {
		dst.MaxRequestIOV = src.MaxRequestIOV
	}
	if mask&api.EPFieldMaxRDMAReadIn != 0 {
		dst.MaxRDMAReadIn = src.MaxRDMAReadIn
	}
	if mask&api.EPFieldMaxRDMAReadOut != 0 {
		dst.MaxRDMAReadOut = src.MaxRDMAReadOut
	}
	if mask&api.EPFieldSRQSoftHW != 0 {
		dst.SRQSoftHighWatermark = src.SRQSoftHighWatermark
	}
	if mask&api.EPFieldMaxRDMAReadIOV != 0 {
		dst.MaxRDMAReadIOV = src.MaxRDMAReadIOV
	}
	if mask&api.EPFieldMaxRDMAWriteIOV != 0 {
		dst.MaxRDMAWriteIOV = src.MaxRDMAWriteIOV
	}
}

// ModifyAttr returns cur with the fields of mask taken from next, checked
// against l, for an EP that holds posted receives: ErrInvalidParameter if
// a limit is exceeded or MaxRecvDTOs would fall below posted, and cur
// unchanged when mask names no attribute.
func ModifyAttr(cur api.EPAttr, next *api.EPAttr, mask api.EPParamMask, l Limits, posted int) (api.EPAttr, error) {
	if mask&api.EPFieldAttrAll == 0 {
		return cur, nil
	}
	Merge(&cur, next, mask)
	if err := Check(&cur, l); err != nil {
		return cur, err
	}
	if cur.MaxRecvDTOs < posted {
		return cur, api.Errorf(api.InvalidParameter, api.NoSubtype, "more receives are posted than the new MaxRecvDTOs")
	}
	return cur, nil
}

// SoftHighWatermarkEvent is the event number of an EP's soft high
// watermark notification. DAT 2.0 names its reason
// (DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT, api.ReasonEPSoftHighWater) but
// gives it no event number, so every provider posts it to the async EVD
// as this event, whose AsyncErrorData names the EP: the same choice as
// for the SRQ low watermark (srqattr.LowWatermarkEvent).
const SoftHighWatermarkEvent = api.AsyncProviderInternalErrorEvent

// Watermarks are an EP's high watermarks on the receive buffers it holds
// (dat_ep_set_watermark(3DAT)): posted to it and not completed, or, on an
// SRQ, taken from the SRQ and not completed (dat_ep_recv_query(3DAT)).
// Only Set arms them: the zero value, like api.WatermarkInfinite for
// both, watches nothing. The provider keeps the count and calls Check
// whenever it may have crossed one (and when the connection is
// established, since the hard watermark is watched only while it is up).
type Watermarks struct {
	soft, hard int
	softArmed  bool // the soft event has not been posted since Set
	hardSet    bool
}

// Set replaces the watermarks, each non-negative or api.WatermarkInfinite
// (the guard has checked them), and arms the soft one's event again.
func (w *Watermarks) Set(soft, hard int) {
	w.soft, w.softArmed = soft, soft != api.WatermarkInfinite
	w.hard, w.hardSet = hard, hard != api.WatermarkInfinite
}

// Check reports, for an EP holding held receive buffers, whether the soft
// watermark's event is due (once per Set: it disarms itself) and whether
// held is above the hard watermark (the connection is to break).
func (w *Watermarks) Check(held int) (softEvent, hardExceeded bool) {
	if w.softArmed && held > w.soft {
		w.softArmed = false
		softEvent = true
	}
	return softEvent, w.hardSet && held > w.hard
}
