// Package iaattr holds the limits of godat's software providers and the IA
// and provider attributes they report from them (dat_ia_query(3DAT)).
//
// A provider states its limits once, in a Limits value; IA and Provider
// turn them into the attribute structures, with every field that does not
// depend on the transport filled in the same way for every provider, and EP
// derives the limits package epattr checks EP attributes against. The
// provider then fills in what is its own (names, addresses, transport
// attributes) before it returns the attributes.
package iaattr

import (
	"net"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/epattr"
)

// Limits are the largest values a provider reports and enforces.
type Limits struct {
	MaxObjects       int // of each kind per IA
	MaxEVDQLen       int
	MaxIOV           int // segments per DTO
	MaxDTOPerEP      int
	MaxMessageSize   int
	MaxRDMASize      int
	MaxPrivateData   int
	MaxRDMAReadPerEP int // outstanding RDMA reads per EP, each way
	MaxRecvPerSRQ    int
	MaxEPPerSRQ      int
	QOS              api.QOS             // the QOS bits the provider supports
	Flags            api.CompletionFlags // the completion flags it supports
}

// Software returns the limits of godat's software providers (loopback,
// tcp), for a provider to start from and lower where its transport must:
// 65536 objects of each kind per IA, event queues of a million events,
// 64 segments per DTO, 65536 DTOs per EP, messages and RDMA transfers up
// to 1 GiB, 1024 bytes of private data, 64 outstanding RDMA reads per EP
// each way, 65536 receives and EPs per SRQ, every QOS and every
// completion flag.
func Software() Limits {
	return Limits{
		MaxObjects: 1 << 16, MaxEVDQLen: 1 << 20, MaxIOV: 64, MaxDTOPerEP: 1 << 16,
		MaxMessageSize: 1 << 30, MaxRDMASize: 1 << 30, MaxPrivateData: 1024,
		MaxRDMAReadPerEP: 64, MaxRecvPerSRQ: 1 << 16, MaxEPPerSRQ: 1 << 16,
		QOS: api.QOSBestEffort | api.QOSHighThroughput | api.QOSLowLatency | api.QOSEconomy | api.QOSPremium,
		Flags: api.CompletionSuppress | api.CompletionSolicitedWait | api.CompletionUnsignalled |
			api.CompletionBarrierFence | api.CompletionEVDThreshold,
	}
}

// EP returns the limits EP attributes are checked against.
func (l Limits) EP() epattr.Limits {
	return epattr.Limits{
		MaxDTOs: l.MaxDTOPerEP, MaxIOV: l.MaxIOV, MaxRDMAReads: l.MaxRDMAReadPerEP,
		MaxMessageSize: l.MaxMessageSize, MaxRDMASize: l.MaxRDMASize,
		QOS: l.QOS, Flags: l.Flags,
	}
}

// IA returns the IA attributes of a software provider with limits l:
// virtual addresses and LMR sizes up to the machine's, zero-based
// addressing, and guaranteed outstanding RDMA reads. AdapterName, Address
// and TransportAttrs are left for the provider.
func IA(l Limits) api.IAAttr {
	return api.IAAttr{
		VendorName:                    "godat",
		HardwareVersionMajor:          1,
		FirmwareVersionMajor:          1,
		MaxEPs:                        l.MaxObjects,
		MaxDTOPerEP:                   l.MaxDTOPerEP,
		MaxRDMAReadPerEPIn:            l.MaxRDMAReadPerEP,
		MaxRDMAReadPerEPOut:           l.MaxRDMAReadPerEP,
		MaxEVDs:                       l.MaxObjects,
		MaxEVDQLen:                    l.MaxEVDQLen,
		MaxIOVSegmentsPerDTO:          l.MaxIOV,
		MaxLMRs:                       l.MaxObjects,
		MaxLMRBlockSize:               1 << 48,
		MaxLMRVirtualAddress:          api.VAddr(1<<64 - 1),
		MaxPZs:                        l.MaxObjects,
		MaxMessageSize:                uint32(l.MaxMessageSize),
		MaxRDMASize:                   uint32(l.MaxRDMASize),
		MaxRMRs:                       l.MaxObjects,
		MaxRMRTargetAddress:           api.VAddr(1<<64 - 1),
		MaxSRQs:                       l.MaxObjects,
		MaxEPPerSRQ:                   l.MaxEPPerSRQ,
		MaxRecvPerSRQ:                 l.MaxRecvPerSRQ,
		MaxIOVSegmentsPerRDMARead:     l.MaxIOV,
		MaxIOVSegmentsPerRDMAWrite:    l.MaxIOV,
		MaxRDMAReadIn:                 l.MaxRDMAReadPerEP * l.MaxObjects,
		MaxRDMAReadOut:                l.MaxRDMAReadPerEP * l.MaxObjects,
		MaxRDMAReadPerEPInGuaranteed:  true,
		MaxRDMAReadPerEPOutGuaranteed: true,
		ZBSupported:                   true,
	}
}

// Provider returns the provider attributes of a software provider with
// limits l: DAT 2.0, thread-safe, every memory type of the API over Go
// memory, unique PZs, EP-scoped RMRs, SRQs with watermarks, and PSPs that
// create EPs when asked. ProviderName, the provider's version and
// DTOAsyncReturnGuaranteed are left for the provider.
func Provider(l Limits) api.ProviderAttr {
	return api.ProviderAttr{
		DAPLVersionMajor:              2,
		DAPLVersionMinor:              0,
		LMRMemTypesSupported:          api.MemTypeVirtual | api.MemTypeLMR | api.MemTypeSharedVirtual,
		IOVOwnershipOnReturn:          api.IOVConsumer,
		QOSSupported:                  l.QOS,
		CompletionFlagsSupported:      l.Flags,
		ThreadSafe:                    true,
		MaxPrivateDataSize:            l.MaxPrivateData,
		SupportsMultipath:             false,
		EPCreator:                     api.PSPCreatesEPIfAsked,
		PZSupport:                     api.PZUnique,
		OptimalBufferAlignment:        64,
		SRQSupported:                  true,
		SRQWatermarksSupported:        1,
		SRQEPPZDifferenceSupported:    true,
		SRQInfoSupported:              1,
		EPRecvInfoSupported:           1,
		LMRSyncRequired:               false,
		RDMAWriteForRDMAReadRequired:  false,
		RDMAReadLMRRMRContextExposure: false,
		RMRScopeSupported:             api.RMRScopeEP,
	}
}

// Named returns IA(l) and Provider(l) with what a provider names of its
// own filled in: name as both the adapter's and the provider's name,
// version 1 of the provider, its address, whether its DTO calls return
// before the transfer completes (DTOAsyncReturnGuaranteed), and its
// transport attributes. A provider that differs further edits the result.
func Named(l Limits, name string, addr net.Addr, asyncReturn bool, transport ...api.NamedAttr) (api.IAAttr, api.ProviderAttr) {
	a := IA(l)
	a.AdapterName, a.Address, a.TransportAttrs = name, addr, transport
	p := Provider(l)
	p.ProviderName, p.ProviderVersionMajor = name, 1
	p.DTOAsyncReturnGuaranteed = asyncReturn
	return a, p
}
