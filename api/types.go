package api

import (
	"encoding/binary"
	"strconv"
	"time"
)

// VAddr is a virtual address as DAT carries it in triplets (DAT_VADDR). For
// an LMR created with VATypeVA it is the process address of the byte; for
// VATypeZB it is the offset from the start of the region.
type VAddr uint64

// LMRContext names an LMR in a local triplet (DAT_LMR_CONTEXT).
type LMRContext uint32

// RMRContext names a remotely accessible window (DAT_RMR_CONTEXT). Providers
// make it unguessable: a random value, fresh on each bind.
type RMRContext uint32

// ConnQual is a connection qualifier: the "port" a PSP or RSP listens on
// (DAT_CONN_QUAL). For the tcp provider it is the TCP port.
type ConnQual uint64

// Cookie is the consumer's value attached to a posted DTO or RMR bind and
// returned unchanged in its completion event (DAT_DTO_COOKIE, DAT_RMR_COOKIE).
type Cookie uint64

// LMRTriplet names local memory for a DTO: a segment of Length bytes at Addr
// inside the LMR whose context is LMRContext (DAT_LMR_TRIPLET). A zero Length
// is legal and moves no data.
type LMRTriplet struct {
	Addr       VAddr
	Length     uint32
	LMRContext LMRContext
}

// RMRTriplet names remote memory for an RDMA operation: Length bytes at Addr
// inside the window the peer granted with RMRContext (DAT_RMR_TRIPLET).
// The side that grants access makes it with LMRParam.RemoteTriplet or
// RMRParam.Triplet and sends it to the other in binary form
// (AppendBinary, UnmarshalBinary).
type RMRTriplet struct {
	Addr       VAddr
	Length     uint32
	RMRContext RMRContext
}

// RMRTripletSize is the length of an RMRTriplet in binary form.
const RMRTripletSize = 16

// AppendBinary appends t to b in godat's binary form, RMRTripletSize
// bytes: Addr (8 bytes), Length (4) and RMRContext (4), each little
// endian. DAT defines no wire form for a triplet; this one lets two godat
// programs exchange one in private data or a message without writing
// their own. It never fails.
func (t RMRTriplet) AppendBinary(b []byte) ([]byte, error) {
	b = binary.LittleEndian.AppendUint64(b, uint64(t.Addr))
	b = binary.LittleEndian.AppendUint32(b, t.Length)
	return binary.LittleEndian.AppendUint32(b, uint32(t.RMRContext)), nil
}

// MarshalBinary returns t in the binary form of AppendBinary.
func (t RMRTriplet) MarshalBinary() ([]byte, error) {
	return t.AppendBinary(make([]byte, 0, RMRTripletSize))
}

// UnmarshalBinary sets t from the binary form of AppendBinary. Anything
// but exactly RMRTripletSize bytes is ErrInvalidParameter, and t is left
// as it was.
func (t *RMRTriplet) UnmarshalBinary(b []byte) error {
	if len(b) != RMRTripletSize {
		return Errorf(InvalidParameter, SubArg1, "RMRTriplet.UnmarshalBinary: "+strconv.Itoa(len(b))+
			" bytes, want "+strconv.Itoa(RMRTripletSize))
	}
	t.Addr = VAddr(binary.LittleEndian.Uint64(b))
	t.Length = binary.LittleEndian.Uint32(b[8:])
	t.RMRContext = RMRContext(binary.LittleEndian.Uint32(b[12:]))
	return nil
}

// CompletionFlags modify how a posted DTO or RMR bind completes
// (DAT_COMPLETION_FLAGS); see dat_ep_post_send(3DAT).
type CompletionFlags uint32

// Completion flags, values as in dat.h.
const (
	// CompletionDefault: the DTO completes with an event and notification.
	CompletionDefault CompletionFlags = 0x00
	// CompletionSuppress: no event is generated if the DTO succeeds; a failed
	// DTO still completes with an event. Allowed only when the EP's
	// completion-flag attribute permits suppression.
	CompletionSuppress CompletionFlags = 0x01
	// CompletionSolicitedWait: on a send, the receiver's completion is
	// solicited; on a receive, only solicited (or failed) completions notify.
	CompletionSolicitedWait CompletionFlags = 0x02
	// CompletionUnsignalled: the completion is queued but does not notify a
	// waiter or CNO.
	CompletionUnsignalled CompletionFlags = 0x04
	// CompletionBarrierFence: processing waits until all previously posted
	// RDMA reads of the EP have completed.
	CompletionBarrierFence CompletionFlags = 0x08
	// CompletionEVDThreshold: EP attribute for receive completions: waiters
	// are woken by the EVD wait threshold (uDAPL only).
	CompletionEVDThreshold CompletionFlags = 0x10
)

// Timeout is a DAT timeout; TimeoutInfinite waits for ever. Negative values
// other than TimeoutInfinite are out of range and rejected.
type Timeout = time.Duration

// TimeoutInfinite is the "wait for ever" timeout (DAT_TIMEOUT_INFINITE).
const TimeoutInfinite Timeout = -1

// DTOOp identifies the operation a DTO completion event reports (DAT_DTOS).
type DTOOp uint32

// DTO operations, numbered as DAT_DTOS in dat.h.
const (
	OpSend DTOOp = iota
	OpRDMAWrite
	OpRDMARead
	OpReceive
	OpReceiveWithInvalidate
	OpBindMW
)

var dtoOpNames = [...]string{"SEND", "RDMA_WRITE", "RDMA_READ", "RECEIVE", "RECEIVE_WITH_INVALIDATE", "BIND_MW"}

// String returns the operation name without its DAT_DTO_ prefix, e.g.
// "RDMA_WRITE".
func (o DTOOp) String() string { return listedName(dtoOpNames[:], o, "DTOOp") }

// QOS is the requested quality of service of a connection (DAT_QOS).
type QOS uint32

// QOS values, as in dat.h.
const (
	QOSBestEffort     QOS = 0x00
	QOSHighThroughput QOS = 0x01
	QOSLowLatency     QOS = 0x02
	QOSEconomy        QOS = 0x04
	QOSPremium        QOS = 0x08
)

// ConnectFlags modify dat_ep_connect (DAT_CONNECT_FLAGS).
type ConnectFlags uint32

// Connect flags, as in dat.h.
const (
	ConnectDefault            ConnectFlags = 0x00
	ConnectMultipathRequested ConnectFlags = 0x01
	ConnectMultipathRequired  ConnectFlags = 0x02
)

// CloseFlags select abrupt or graceful teardown for dat_ep_disconnect and
// dat_ia_close (DAT_CLOSE_FLAGS).
type CloseFlags uint32

// Close flags, as in dat.h. CloseAbrupt is the default.
const (
	CloseAbrupt   CloseFlags = 0x00
	CloseGraceful CloseFlags = 0x01
)

// EVDFlags select the event streams an EVD accepts (DAT_EVD_FLAGS).
type EVDFlags uint32

// EVD flags, as in dat.h.
const (
	EVDSoftware   EVDFlags = 0x001
	EVDCR         EVDFlags = 0x010
	EVDDTO        EVDFlags = 0x020
	EVDConnection EVDFlags = 0x040
	EVDRMRBind    EVDFlags = 0x080
	EVDAsync      EVDFlags = 0x100
	// EVDDefault accepts every DAT event stream but software events.
	EVDDefault EVDFlags = 0x1F0
)

// PSPFlags say who creates the EP for a connection request arriving on a
// PSP (DAT_PSP_FLAGS).
type PSPFlags uint32

// PSP flags, as in dat.h.
const (
	// PSPConsumer: the consumer supplies the EP at accept time.
	PSPConsumer PSPFlags = 0x00
	// PSPProvider: the provider creates an EP with default attributes and
	// reports it in the CR; the consumer may modify it before accepting.
	PSPProvider PSPFlags = 0x01
)

// MemPriv is a set of memory access privileges (DAT_MEM_PRIV_FLAGS).
type MemPriv uint32

// Memory privileges, as in dat.h.
const (
	MemPrivNone        MemPriv = 0x00
	MemPrivLocalRead   MemPriv = 0x01
	MemPrivRemoteRead  MemPriv = 0x02
	MemPrivLocalWrite  MemPriv = 0x10
	MemPrivRemoteWrite MemPriv = 0x20
	MemPrivAll         MemPriv = 0x33
	MemPrivRead                = MemPrivLocalRead | MemPrivRemoteRead
	MemPrivWrite               = MemPrivLocalWrite | MemPrivRemoteWrite
)

// VAType says how triplets address an LMR (DAT_VA_TYPE, DAT 2.0).
type VAType uint32

// VA types, as in dat.h.
const (
	// VATypeVA: triplets carry process virtual addresses.
	VATypeVA VAType = 0
	// VATypeZB: zero based; triplets carry offsets from the region start.
	VATypeZB VAType = 1
)

// CheckPrivVA checks the memory privileges and VA type given to
// dat_lmr_create(3DAT) or dat_rmr_bind(3DAT): unknown privilege bits or a
// VA type other than VATypeVA and VATypeZB are ErrInvalidParameter with
// subtype privArg or vaArg, the arguments' positions in the call. The
// registry's guard makes this check, so providers do not (api/doc.go).
func CheckPrivVA(priv MemPriv, va VAType, privArg, vaArg Subtype) error {
	if priv&^MemPrivAll != 0 {
		return Errorf(InvalidParameter, privArg, "memory privileges 0x"+strconv.FormatUint(uint64(priv), 16)+" name unknown bits")
	}
	if va != VATypeVA && va != VATypeZB {
		return Errorf(InvalidParameter, vaArg, "VA type "+strconv.FormatUint(uint64(va), 10)+" is unknown")
	}
	return nil
}

// RMRScope is the protection scope of an RMR (DAT_RMR_SCOPE, DAT 2.0).
type RMRScope uint32

// RMR scopes, as in dat.h.
const (
	RMRScopeEP  RMRScope = iota // bound to one EP at a time
	RMRScopePZ                  // usable by any EP of the protection zone
	RMRScopeAny                 // the provider supports both
)

// MemType says what a Region describes (DAT_MEM_TYPE).
type MemType uint32

// Memory types, as in udat.h.
const (
	MemTypeVirtual       MemType = 0x00
	MemTypeLMR           MemType = 0x01
	MemTypeSharedVirtual MemType = 0x02
)

// HandleType identifies the kind of a DAT object (DAT_HANDLE_TYPE);
// see dat_get_handle_type(3DAT).
type HandleType uint32

// Handle types, numbered as in udat.h.
const (
	HandleCR HandleType = iota
	HandleEP
	HandleEVD
	HandleIA
	HandleLMR
	HandlePSP
	HandlePZ
	HandleRMR
	HandleRSP
	HandleCNO
	HandleSRQ
	HandleCSP
)

var handleTypeNames = [...]string{"CR", "EP", "EVD", "IA", "LMR", "PSP", "PZ", "RMR", "RSP", "CNO", "SRQ", "CSP"}

// String returns the handle type name, e.g. "EP".
func (h HandleType) String() string { return listedName(handleTypeNames[:], h, "HandleType") }

// EPState is the state of an Endpoint (DAT_EP_STATE); see dat_ep_create(3DAT)
// and dat_ep_get_status(3DAT).
type EPState uint32

// EP states, numbered as in dat.h.
const (
	EPUnconnected EPState = iota
	EPUnconfiguredUnconnected
	EPReserved
	EPUnconfiguredReserved
	EPPassiveConnectionPending
	EPUnconfiguredPassive
	EPActiveConnectionPending
	EPTentativeConnectionPending
	EPUnconfiguredTentative
	EPConnected
	EPDisconnectPending
	EPDisconnected
	EPCompletionPending
	EPConnectedSinglePath
	EPConnectedMultiPath
)

var epStateNames = [...]string{
	"UNCONNECTED", "UNCONFIGURED_UNCONNECTED", "RESERVED", "UNCONFIGURED_RESERVED",
	"PASSIVE_CONNECTION_PENDING", "UNCONFIGURED_PASSIVE", "ACTIVE_CONNECTION_PENDING",
	"TENTATIVE_CONNECTION_PENDING", "UNCONFIGURED_TENTATIVE", "CONNECTED",
	"DISCONNECT_PENDING", "DISCONNECTED", "COMPLETION_PENDING", "CONNECTED_SINGLE_PATH",
	"CONNECTED_MULTI_PATH",
}

// String returns the state name without its DAT_EP_STATE_ prefix, e.g.
// "CONNECTED".
func (s EPState) String() string { return listedName(epStateNames[:], s, "EPState") }

// StateSubtype returns the DAT_INVALID_STATE subtype that names state s,
// for errors that report "the EP is in the wrong state".
func (s EPState) StateSubtype() Subtype {
	switch s {
	case EPUnconnected:
		return SubStateEPUnconnected
	case EPUnconfiguredUnconnected:
		return SubStateEPUnconfigured
	case EPReserved:
		return SubStateEPReserved
	case EPUnconfiguredReserved:
		return SubStateEPUnconfReserved
	case EPPassiveConnectionPending:
		return SubStateEPPassConnPending
	case EPUnconfiguredPassive:
		return SubStateEPUnconfPassive
	case EPActiveConnectionPending:
		return SubStateEPActConnPending
	case EPTentativeConnectionPending:
		return SubStateEPTentConnPending
	case EPUnconfiguredTentative:
		return SubStateEPUnconfTentative
	case EPConnected, EPConnectedSinglePath, EPConnectedMultiPath:
		return SubStateEPConnected
	case EPDisconnectPending:
		return SubStateEPDiscPending
	case EPDisconnected:
		return SubStateEPDisconnected
	case EPCompletionPending:
		return SubStateEPComplPending
	}
	return NoSubtype
}

// EVDState is the state of an EVD as three orthogonal bands
// (DAT_EVD_STATE): enabled/disabled, waitable/unwaitable and the
// notification configuration.
type EVDState uint32

// EVD state bits, as in udat.h.
const (
	EVDStateEnabled         EVDState = 0x01
	EVDStateDisabled        EVDState = 0x02
	EVDStateWaitable        EVDState = 0x04
	EVDStateUnwaitable      EVDState = 0x08
	EVDStateConfigNotify    EVDState = 0x10
	EVDStateConfigSolicited EVDState = 0x20
	EVDStateConfigThreshold EVDState = 0x30
)

// SRQState is the state of a shared receive queue (DAT_SRQ_STATE).
type SRQState uint32

// SRQ states, as in dat.h.
const (
	SRQStateError SRQState = iota
	SRQStateOperational
	SRQStateShutdown
)

// ServiceType is the transport service of an EP (DAT_SERVICE_TYPE); DAT 2.0
// defines only reliable connections.
type ServiceType uint32

// ServiceRC is a reliable connection.
const ServiceRC ServiceType = 0

// IOVOwnership says whether the provider modifies a posted IOV
// (DAT_IOV_OWNERSHIP).
type IOVOwnership uint32

// IOV ownership values, as in dat.h.
const (
	IOVConsumer       IOVOwnership = 0
	IOVProviderNoMod  IOVOwnership = 1
	IOVProviderMayMod IOVOwnership = 2
)

// EPCreatorForPSP says whether the provider can create EPs for PSPs
// (DAT_EP_CREATOR_FOR_PSP).
type EPCreatorForPSP uint32

// EP creator values, as in dat.h.
const (
	PSPCreatesEPNever EPCreatorForPSP = iota
	PSPCreatesEPIfAsked
	PSPCreatesEPAlways
)

// PZSupport says whether PZs are unique or shareable (DAT_PZ_SUPPORT).
type PZSupport uint32

// PZ support values, as in udat.h.
const (
	PZUnique PZSupport = iota
	PZShareable
)

// WatermarkInfinite disables an EP high watermark (DAT_WATERMARK_INFINITE).
const WatermarkInfinite = -1

// NamedAttr is a provider- or transport-specific attribute (DAT_NAMED_ATTR).
type NamedAttr struct {
	Name  string
	Value string
}
