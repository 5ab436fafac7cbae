// Package epattr holds the Endpoint attribute handling that godat's
// software providers share (dat_ep_create(3DAT), dat_ep_modify(3DAT)):
// filling unset limits with a provider's defaults, and checking attributes
// against its limits. A provider checks here even though the registry's
// guard checks the same limits, so that it stays safe when called
// directly.
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
