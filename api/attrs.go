package api

import "net"

// IAAttr holds the attributes and limits of an open IA (DAT_IA_ATTR); see
// dat_ia_query(3DAT). Providers report their real limits and the registry's
// guard enforces them.
type IAAttr struct {
	AdapterName          string // the IA name the consumer opened (dat_ia_query(3DAT)); set by the registry
	VendorName           string
	HardwareVersionMajor uint32
	HardwareVersionMinor uint32
	FirmwareVersionMajor uint32
	FirmwareVersionMinor uint32
	Address              net.Addr // the IA's own address

	MaxEPs                        int
	MaxDTOPerEP                   int
	MaxRDMAReadPerEPIn            int
	MaxRDMAReadPerEPOut           int
	MaxEVDs                       int
	MaxEVDQLen                    int
	MaxIOVSegmentsPerDTO          int
	MaxLMRs                       int
	MaxLMRBlockSize               uint64
	MaxLMRVirtualAddress          VAddr
	MaxPZs                        int
	MaxMessageSize                uint32
	MaxRDMASize                   uint32
	MaxRMRs                       int
	MaxRMRTargetAddress           VAddr
	MaxSRQs                       int
	MaxEPPerSRQ                   int
	MaxRecvPerSRQ                 int
	MaxIOVSegmentsPerRDMARead     int
	MaxIOVSegmentsPerRDMAWrite    int
	MaxRDMAReadIn                 int
	MaxRDMAReadOut                int
	MaxRDMAReadPerEPInGuaranteed  bool
	MaxRDMAReadPerEPOutGuaranteed bool
	ZBSupported                   bool

	TransportAttrs []NamedAttr
	VendorAttrs    []NamedAttr
}

// ProviderAttr describes the provider behind an IA (DAT_PROVIDER_ATTR);
// see dat_ia_query(3DAT).
type ProviderAttr struct {
	ProviderName                  string
	ProviderVersionMajor          uint32
	ProviderVersionMinor          uint32
	DAPLVersionMajor              uint32
	DAPLVersionMinor              uint32
	LMRMemTypesSupported          MemType
	IOVOwnershipOnReturn          IOVOwnership
	QOSSupported                  QOS
	CompletionFlagsSupported      CompletionFlags
	ThreadSafe                    bool
	MaxPrivateDataSize            int
	SupportsMultipath             bool
	EPCreator                     EPCreatorForPSP
	PZSupport                     PZSupport
	OptimalBufferAlignment        uint32
	SRQSupported                  bool
	SRQWatermarksSupported        int
	SRQEPPZDifferenceSupported    bool
	SRQInfoSupported              int
	EPRecvInfoSupported           int
	LMRSyncRequired               bool
	DTOAsyncReturnGuaranteed      bool
	RDMAWriteForRDMAReadRequired  bool
	RDMAReadLMRRMRContextExposure bool
	RMRScopeSupported             RMRScope
	SignalSafe                    bool
	HASupported                   bool

	ProviderSpecific []NamedAttr
}

// EPAttr holds the attributes of an Endpoint (DAT_EP_ATTR); see
// dat_ep_create(3DAT) and dat_ep_modify(3DAT). A nil *EPAttr at creation
// means the provider's defaults.
type EPAttr struct {
	ServiceType            ServiceType
	MaxMessageSize         uint32
	MaxRDMASize            uint32
	QOS                    QOS
	RecvCompletionFlags    CompletionFlags // completion flags allowed on receives
	RequestCompletionFlags CompletionFlags // completion flags allowed on requests
	MaxRecvDTOs            int
	MaxRequestDTOs         int
	MaxRecvIOV             int
	MaxRequestIOV          int
	MaxRDMAReadIn          int
	MaxRDMAReadOut         int
	SRQSoftHighWatermark   int
	MaxRDMAReadIOV         int
	MaxRDMAWriteIOV        int
	TransportSpecific      []NamedAttr
	ProviderSpecific       []NamedAttr
}

// EPParam is everything dat_ep_query(3DAT) reports about an Endpoint
// (DAT_EP_PARAM).
type EPParam struct {
	IA             IA
	State          EPState
	LocalAddr      net.Addr
	LocalPortQual  ConnQual
	RemoteAddr     net.Addr
	RemotePortQual ConnQual
	PZ             PZ
	RecvEVD        EVD
	RequestEVD     EVD
	ConnectEVD     EVD
	SRQ            SRQ
	Attr           EPAttr
}

// EPParamMask selects the fields dat_ep_modify changes (DAT_EP_PARAM_MASK).
type EPParamMask uint64

// EP parameter mask bits, values as in dat.h.
const (
	EPFieldIA                     EPParamMask = 0x00000001
	EPFieldState                  EPParamMask = 0x00000002
	EPFieldLocalAddr              EPParamMask = 0x00000008
	EPFieldLocalPortQual          EPParamMask = 0x00000010
	EPFieldRemoteAddr             EPParamMask = 0x00000020
	EPFieldRemotePortQual         EPParamMask = 0x00000040
	EPFieldPZ                     EPParamMask = 0x00000080
	EPFieldRecvEVD                EPParamMask = 0x00000100
	EPFieldRequestEVD             EPParamMask = 0x00000200
	EPFieldConnectEVD             EPParamMask = 0x00000400
	EPFieldSRQ                    EPParamMask = 0x00000800
	EPFieldServiceType            EPParamMask = 0x00001000
	EPFieldMaxMessageSize         EPParamMask = 0x00002000
	EPFieldMaxRDMASize            EPParamMask = 0x00004000
	EPFieldQOS                    EPParamMask = 0x00008000
	EPFieldRecvCompletionFlags    EPParamMask = 0x00010000
	EPFieldRequestCompletionFlags EPParamMask = 0x00020000
	EPFieldMaxRecvDTOs            EPParamMask = 0x00040000
	EPFieldMaxRequestDTOs         EPParamMask = 0x00080000
	EPFieldMaxRecvIOV             EPParamMask = 0x00100000
	EPFieldMaxRequestIOV          EPParamMask = 0x00200000
	EPFieldMaxRDMAReadIn          EPParamMask = 0x00400000
	EPFieldMaxRDMAReadOut         EPParamMask = 0x00800000
	EPFieldSRQSoftHW              EPParamMask = 0x01000000
	EPFieldMaxRDMAReadIOV         EPParamMask = 0x02000000
	EPFieldMaxRDMAWriteIOV        EPParamMask = 0x04000000
	EPFieldAttrAll                EPParamMask = 0x7FFFF000
	EPFieldAll                    EPParamMask = 0x7FFFFFFF
)

// EVDParam is what dat_evd_query(3DAT) reports (DAT_EVD_PARAM).
type EVDParam struct {
	IA    IA
	QLen  int
	State EVDState
	CNO   CNO
	Flags EVDFlags
}

// LMRParam is what dat_lmr_query(3DAT) reports (DAT_LMR_PARAM).
type LMRParam struct {
	IA                IA
	MemType           MemType
	Length            uint64
	PZ                PZ
	Priv              MemPriv
	VAType            VAType
	LMRContext        LMRContext
	RMRContext        RMRContext
	RegisteredSize    uint64
	RegisteredAddress VAddr
}

// Triplet returns the local triplet for n bytes at offset off of the
// registered region described by p. It does no bounds checking: a triplet
// outside the LMR is caught when it is used.
func (p LMRParam) Triplet(off uint64, n uint32) LMRTriplet {
	return LMRTriplet{Addr: p.RegisteredAddress + VAddr(off), Length: n, LMRContext: p.LMRContext}
}

// RemoteTriplet returns the triplet a peer's RDMA operation names n bytes
// at offset off of the registered region with, through the LMR's own RMR
// context: what a program sends its peer (see RMRTriplet.AppendBinary)
// to let it read or write the region. The context grants what the LMR
// was created with: remote read with MemPrivRemoteRead, remote write with
// MemPrivRemoteWrite, nothing without either. Like Triplet it does no
// bounds checking: the peer's operation fails if the triplet lies outside
// the region.
func (p LMRParam) RemoteTriplet(off uint64, n uint32) RMRTriplet {
	return RMRTriplet{Addr: p.RegisteredAddress + VAddr(off), Length: n, RMRContext: p.RMRContext}
}

// RMRParam is what dat_rmr_query(3DAT) reports (DAT_RMR_PARAM). While the
// RMR is unbound, LMRTriplet has zero length and RMRContext is stale.
type RMRParam struct {
	IA         IA
	PZ         PZ
	LMRTriplet LMRTriplet
	Priv       MemPriv
	RMRContext RMRContext
	Scope      RMRScope
	VAType     VAType
}

// Triplet returns the triplet a peer's RDMA operation names n bytes at
// offset off of the RMR's window with: the window it is bound to (p is
// the RMR's Query after its bind completed, when the new context is in
// place) and its current context. A window bound with VATypeZB is
// addressed from 0 at its first byte; one bound with VATypeVA by the
// addresses of the LMR triplet it was bound over. Like LMRParam.Triplet
// it does no bounds checking: the peer's operation fails if the triplet
// lies outside the window, or if the RMR is unbound or bound again.
func (p RMRParam) Triplet(off uint64, n uint32) RMRTriplet {
	base := p.LMRTriplet.Addr
	if p.VAType == VATypeZB {
		base = 0
	}
	return RMRTriplet{Addr: base + VAddr(off), Length: n, RMRContext: p.RMRContext}
}

// SRQAttr sets the size of a shared receive queue (DAT_SRQ_ATTR); see
// dat_srq_create(3DAT).
type SRQAttr struct {
	MaxRecvDTOs  int
	MaxRecvIOV   int
	LowWatermark int // 0 means no low-watermark event
}

// SRQParam is what dat_srq_query(3DAT) reports (DAT_SRQ_PARAM).
type SRQParam struct {
	IA                IA
	State             SRQState
	PZ                PZ
	MaxRecvDTOs       int
	MaxRecvIOV        int
	LowWatermark      int
	AvailableDTOCount int // receives posted that an EP may still take
	// OutstandingDTOCount is the SRQ's occupied entries, which limit new
	// posts. The page counts a buffer until the consumer dequeues its
	// completion; godat's providers count it until it completes (its
	// message arrived), so outside that window the two agree.
	OutstandingDTOCount int
}

// PZParam is what dat_pz_query(3DAT) reports (DAT_PZ_PARAM).
type PZParam struct {
	IA IA
}

// PSPParam is what dat_psp_query(3DAT) reports (DAT_PSP_PARAM).
type PSPParam struct {
	IA       IA
	ConnQual ConnQual
	EVD      EVD
	Flags    PSPFlags
}

// RSPParam is what dat_rsp_query(3DAT) reports (DAT_RSP_PARAM).
type RSPParam struct {
	IA       IA
	ConnQual ConnQual
	EVD      EVD
	EP       EP
}

// CRParam is what dat_cr_query(3DAT) reports (DAT_CR_PARAM). PrivateData is
// the requester's private data, valid until the CR is accepted, rejected or
// handed off. LocalEP is the EP reserved for the request (an RSP's EP, or
// the EP a provider-flagged PSP created), or nil.
type CRParam struct {
	RemoteAddr     net.Addr
	RemotePortQual ConnQual
	PrivateData    []byte
	LocalEP        EP
}

// WaitAgent is the OS wait proxy agent of a CNO (DAT_OS_WAIT_PROXY_AGENT):
// a function the provider calls, on a goroutine of its own, when the CNO
// triggers, naming the EVD that triggered it. A nil WaitAgent is the null
// agent.
type WaitAgent func(evd EVD)

// CNOParam is what dat_cno_query(3DAT) reports (DAT_CNO_PARAM).
type CNOParam struct {
	IA    IA
	Agent WaitAgent
}

// OpenParams is what the registry hands a provider when it opens an IA: the
// configuration entry of the IA (see dat.conf(5)) and the consumer's
// requests. See dat_ia_open(3DAT).
type OpenParams struct {
	Name           string // the IA name, as configured
	Params         string // ia_params: provider specific (address, netdev, "device port")
	PlatformParams string // platform_params
	AsyncEVDQLen   int    // minimum length of the async EVD queue
	ThreadSafe     bool   // the configuration asks for a thread-safe provider
}
