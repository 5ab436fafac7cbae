package api

import (
	"context"
	"errors"
	"strconv"
)

// ReturnType is the major part of a DAT return code (DAT_RETURN_TYPE in
// dat_error.h). Its numeric values are those of the C headers, so a code
// printed by godat can be looked up in any uDAPL documentation. See
// dat_strerror(3DAT).
type ReturnType uint32

// The DAT return types. Values are identical to dat_error.h.
const (
	Success                   ReturnType = 0x00000000
	Abort                     ReturnType = 0x00010000
	ConnQualInUse             ReturnType = 0x00020000
	InsufficientResources     ReturnType = 0x00030000
	InternalError             ReturnType = 0x00040000
	InvalidHandle             ReturnType = 0x00050000
	InvalidParameter          ReturnType = 0x00060000
	InvalidState              ReturnType = 0x00070000
	LengthError               ReturnType = 0x00080000
	ModelNotSupported         ReturnType = 0x00090000
	ProviderNotFound          ReturnType = 0x000A0000
	PrivilegesViolation       ReturnType = 0x000B0000
	ProtectionViolation       ReturnType = 0x000C0000
	QueueEmpty                ReturnType = 0x000D0000
	QueueFull                 ReturnType = 0x000E0000
	TimeoutExpired            ReturnType = 0x000F0000
	ProviderAlreadyRegistered ReturnType = 0x00100000
	ProviderInUse             ReturnType = 0x00110000
	InvalidAddress            ReturnType = 0x00120000
	InterruptedCall           ReturnType = 0x00130000
	ConnQualUnavailable       ReturnType = 0x00140000
	PortInUse                 ReturnType = 0x00160000
	CommNotSupported          ReturnType = 0x00170000
	NotImplemented            ReturnType = 0x3FFF0000
)

// Return-code class bits (DAT_CLASS_* in dat_error.h).
const (
	ClassError   uint32 = 0x80000000
	ClassWarning uint32 = 0x40000000
)

var returnTypeNames = map[ReturnType]string{
	Success:                   "DAT_SUCCESS",
	Abort:                     "DAT_ABORT",
	ConnQualInUse:             "DAT_CONN_QUAL_IN_USE",
	InsufficientResources:     "DAT_INSUFFICIENT_RESOURCES",
	InternalError:             "DAT_INTERNAL_ERROR",
	InvalidHandle:             "DAT_INVALID_HANDLE",
	InvalidParameter:          "DAT_INVALID_PARAMETER",
	InvalidState:              "DAT_INVALID_STATE",
	LengthError:               "DAT_LENGTH_ERROR",
	ModelNotSupported:         "DAT_MODEL_NOT_SUPPORTED",
	ProviderNotFound:          "DAT_PROVIDER_NOT_FOUND",
	PrivilegesViolation:       "DAT_PRIVILEGES_VIOLATION",
	ProtectionViolation:       "DAT_PROTECTION_VIOLATION",
	QueueEmpty:                "DAT_QUEUE_EMPTY",
	QueueFull:                 "DAT_QUEUE_FULL",
	TimeoutExpired:            "DAT_TIMEOUT_EXPIRED",
	ProviderAlreadyRegistered: "DAT_PROVIDER_ALREADY_REGISTERED",
	ProviderInUse:             "DAT_PROVIDER_IN_USE",
	InvalidAddress:            "DAT_INVALID_ADDRESS",
	InterruptedCall:           "DAT_INTERRUPTED_CALL",
	ConnQualUnavailable:       "DAT_CONN_QUAL_UNAVAILABLE",
	PortInUse:                 "DAT_PORT_IN_USE",
	CommNotSupported:          "DAT_COMM_NOT_SUPPORTED",
	NotImplemented:            "DAT_NOT_IMPLEMENTED",
}

// String returns the C name of the return type, e.g. "DAT_INVALID_STATE".
func (t ReturnType) String() string { return mappedName(returnTypeNames, t, "DAT_RETURN_TYPE") }

// Subtype is the minor part of a DAT return code (DAT_RETURN_SUBTYPE in
// dat_error.h), naming which argument, handle or state caused the error.
type Subtype uint32

// The DAT return subtypes, numbered exactly as the DAT_RETURN_SUBTYPE
// enumeration of dat_error.h.
const (
	NoSubtype Subtype = iota
	SubInterrupted
	SubResourceMemory
	SubResourceDevice
	SubResourceTEP
	SubResourceTEVD
	SubResourceProtectionDomain
	SubResourceMemoryRegion
	SubResourceErrorHandler
	SubResourceCredits
	SubResourceSRQ
	SubHandleIA
	SubHandleEP
	SubHandleLMR
	SubHandleRMR
	SubHandlePZ
	SubHandlePSP
	SubHandleRSP
	SubHandleCR
	SubHandleCNO
	SubHandleEVDCR
	SubHandleEVDRequest
	SubHandleEVDRecv
	SubHandleEVDConn
	SubHandleEVDAsync
	SubHandleSRQ
	SubHandleCSP
	SubHandle1
	SubHandle2
	SubHandle3
	SubHandle4
	SubHandle5
	SubHandle6
	SubHandle7
	SubHandle8
	SubHandle9
	SubHandle10
	SubArg1
	SubArg2
	SubArg3
	SubArg4
	SubArg5
	SubArg6
	SubArg7
	SubArg8
	SubArg9
	SubArg10
	SubStateEPUnconnected
	SubStateEPActConnPending
	SubStateEPPassConnPending
	SubStateEPTentConnPending
	SubStateEPConnected
	SubStateEPDisconnected
	SubStateEPReserved
	SubStateEPComplPending
	SubStateEPDiscPending
	SubStateEPProviderControl
	SubStateEPNotReady
	SubStateEPRecvWatermark
	SubStateEPPZ
	SubStateEPEVDRequest
	SubStateEPEVDRecv
	SubStateEPEVDConnect
	SubStateEPUnconfigured
	SubStateEPUnconfReserved
	SubStateEPUnconfPassive
	SubStateEPUnconfTentative
	SubStateCNOInUse
	SubStateCNODead
	SubStateEVDOpen
	SubStateEVDEnabled
	SubStateEVDDisabled
	SubStateEVDWaitable
	SubStateEVDUnwaitable
	SubStateEVDInUse
	SubStateEVDConfigNotify
	SubStateEVDConfigSolicited
	SubStateEVDConfigThreshold
	SubStateEVDWaiter
	SubStateEVDAsync
	SubStateIAInUse
	SubStateLMRInUse
	SubStateLMRFree
	SubStatePZInUse
	SubStatePZFree
	SubStateSRQOperational
	SubStateSRQError
	SubStateSRQInUse
	SubStateSRQShutdown
	SubPrivilegesRead
	SubPrivilegesWrite
	SubPrivilegesRDMARead
	SubPrivilegesRDMAWrite
	SubProtectionRead
	SubProtectionWrite
	SubProtectionRDMARead
	SubProtectionRDMAWrite
	SubAddressUnsupported
	SubAddressUnreachable
	SubAddressMalformed
	SubNameNotRegistered
	SubMajorNotFound
	SubMinorNotFound
	SubThreadSafetyNotFound
)

var subtypeNames = [...]string{
	"DAT_NO_SUBTYPE", "DAT_SUB_INTERRUPTED", "DAT_RESOURCE_MEMORY", "DAT_RESOURCE_DEVICE",
	"DAT_RESOURCE_TEP", "DAT_RESOURCE_TEVD", "DAT_RESOURCE_PROTECTION_DOMAIN",
	"DAT_RESOURCE_MEMORY_REGION", "DAT_RESOURCE_ERROR_HANDLER", "DAT_RESOURCE_CREDITS",
	"DAT_RESOURCE_SRQ", "DAT_INVALID_HANDLE_IA", "DAT_INVALID_HANDLE_EP",
	"DAT_INVALID_HANDLE_LMR", "DAT_INVALID_HANDLE_RMR", "DAT_INVALID_HANDLE_PZ",
	"DAT_INVALID_HANDLE_PSP", "DAT_INVALID_HANDLE_RSP", "DAT_INVALID_HANDLE_CR",
	"DAT_INVALID_HANDLE_CNO", "DAT_INVALID_HANDLE_EVD_CR", "DAT_INVALID_HANDLE_EVD_REQUEST",
	"DAT_INVALID_HANDLE_EVD_RECV", "DAT_INVALID_HANDLE_EVD_CONN", "DAT_INVALID_HANDLE_EVD_ASYNC",
	"DAT_INVALID_HANDLE_SRQ", "DAT_INVALID_HANDLE_CSP", "DAT_INVALID_HANDLE1",
	"DAT_INVALID_HANDLE2", "DAT_INVALID_HANDLE3", "DAT_INVALID_HANDLE4", "DAT_INVALID_HANDLE5",
	"DAT_INVALID_HANDLE6", "DAT_INVALID_HANDLE7", "DAT_INVALID_HANDLE8", "DAT_INVALID_HANDLE9",
	"DAT_INVALID_HANDLE10", "DAT_INVALID_ARG1", "DAT_INVALID_ARG2", "DAT_INVALID_ARG3",
	"DAT_INVALID_ARG4", "DAT_INVALID_ARG5", "DAT_INVALID_ARG6", "DAT_INVALID_ARG7",
	"DAT_INVALID_ARG8", "DAT_INVALID_ARG9", "DAT_INVALID_ARG10",
	"DAT_INVALID_STATE_EP_UNCONNECTED", "DAT_INVALID_STATE_EP_ACTCONNPENDING",
	"DAT_INVALID_STATE_EP_PASSCONNPENDING", "DAT_INVALID_STATE_EP_TENTCONNPENDING",
	"DAT_INVALID_STATE_EP_CONNECTED", "DAT_INVALID_STATE_EP_DISCONNECTED",
	"DAT_INVALID_STATE_EP_RESERVED", "DAT_INVALID_STATE_EP_COMPLPENDING",
	"DAT_INVALID_STATE_EP_DISCPENDING", "DAT_INVALID_STATE_EP_PROVIDERCONTROL",
	"DAT_INVALID_STATE_EP_NOTREADY", "DAT_INVALID_STATE_EP_RECV_WATERMARK",
	"DAT_INVALID_STATE_EP_PZ", "DAT_INVALID_STATE_EP_EVD_REQUEST",
	"DAT_INVALID_STATE_EP_EVD_RECV", "DAT_INVALID_STATE_EP_EVD_CONNECT",
	"DAT_INVALID_STATE_EP_UNCONFIGURED", "DAT_INVALID_STATE_EP_UNCONFRESERVED",
	"DAT_INVALID_STATE_EP_UNCONFPASSIVE", "DAT_INVALID_STATE_EP_UNCONFTENTATIVE",
	"DAT_INVALID_STATE_CNO_IN_USE", "DAT_INVALID_STATE_CNO_DEAD", "DAT_INVALID_STATE_EVD_OPEN",
	"DAT_INVALID_STATE_EVD_ENABLED", "DAT_INVALID_STATE_EVD_DISABLED",
	"DAT_INVALID_STATE_EVD_WAITABLE", "DAT_INVALID_STATE_EVD_UNWAITABLE",
	"DAT_INVALID_STATE_EVD_IN_USE", "DAT_INVALID_STATE_EVD_CONFIG_NOTIFY",
	"DAT_INVALID_STATE_EVD_CONFIG_SOLICITED", "DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD",
	"DAT_INVALID_STATE_EVD_WAITER", "DAT_INVALID_STATE_EVD_ASYNC", "DAT_INVALID_STATE_IA_IN_USE",
	"DAT_INVALID_STATE_LMR_IN_USE", "DAT_INVALID_STATE_LMR_FREE", "DAT_INVALID_STATE_PZ_IN_USE",
	"DAT_INVALID_STATE_PZ_FREE", "DAT_INVALID_STATE_SRQ_OPERATIONAL",
	"DAT_INVALID_STATE_SRQ_ERROR", "DAT_INVALID_STATE_SRQ_IN_USE",
	"DAT_INVALID_STATE_SRQ_SHUTDOWN", "DAT_PRIVILEGES_READ", "DAT_PRIVILEGES_WRITE",
	"DAT_PRIVILEGES_RDMA_READ", "DAT_PRIVILEGES_RDMA_WRITE", "DAT_PROTECTION_READ",
	"DAT_PROTECTION_WRITE", "DAT_PROTECTION_RDMA_READ", "DAT_PROTECTION_RDMA_WRITE",
	"DAT_INVALID_ADDRESS_UNSUPPORTED", "DAT_INVALID_ADDRESS_UNREACHABLE",
	"DAT_INVALID_ADDRESS_MALFORMED", "DAT_NAME_NOT_REGISTERED", "DAT_MAJOR_NOT_FOUND",
	"DAT_MINOR_NOT_FOUND", "DAT_THREAD_SAFETY_NOT_FOUND",
}

// String returns the C name of the subtype, e.g. "DAT_INVALID_ARG3".
func (s Subtype) String() string { return listedName(subtypeNames[:], s, "DAT_RETURN_SUBTYPE") }

// listedName is the String of an enumeration numbered from 0: names[v], or
// typ(v) for a value past the list.
func listedName[T ~uint32](names []string, v T, typ string) string {
	if uint64(v) < uint64(len(names)) {
		return names[v]
	}
	return typ + "(" + strconv.FormatUint(uint64(v), 10) + ")"
}

// mappedName is the String of an enumeration with gaps: names[v], or
// typ(0x<v in hex>) for a value names lacks.
func mappedName[T ~uint32](names map[T]string, v T, typ string) string {
	if s, ok := names[v]; ok {
		return s
	}
	return typ + "(0x" + strconv.FormatUint(uint64(v), 16) + ")"
}

// Error is the error every godat call returns. It carries the DAT return type
// and subtype so that errors.Is matches the sentinels below, and Code gives
// the numeric DAT_RETURN value of the C headers (dat_strerror(3DAT)).
//
// errors.Is(err, ErrInvalidState) holds for any Error of type InvalidState;
// errors.Is(err, &Error{Type: InvalidState, Sub: SubStatePZInUse}) also
// requires the subtype to match. An Error may wrap a cause (a context error,
// a system error) that errors.Is and errors.As reach through Unwrap.
type Error struct {
	Type  ReturnType
	Sub   Subtype
	Msg   string // what went wrong, in words; may be empty
	Cause error  // underlying error, if any
}

// Sentinel errors, one per return type, for use with errors.Is. They carry
// no subtype, so they match an Error of their type whatever its subtype.
var (
	ErrAbort                     = &Error{Type: Abort}
	ErrConnQualInUse             = &Error{Type: ConnQualInUse}
	ErrInsufficientResources     = &Error{Type: InsufficientResources}
	ErrInternal                  = &Error{Type: InternalError}
	ErrInvalidHandle             = &Error{Type: InvalidHandle}
	ErrInvalidParameter          = &Error{Type: InvalidParameter}
	ErrInvalidState              = &Error{Type: InvalidState}
	ErrLength                    = &Error{Type: LengthError}
	ErrModelNotSupported         = &Error{Type: ModelNotSupported}
	ErrProviderNotFound          = &Error{Type: ProviderNotFound}
	ErrPrivilegesViolation       = &Error{Type: PrivilegesViolation}
	ErrProtectionViolation       = &Error{Type: ProtectionViolation}
	ErrQueueEmpty                = &Error{Type: QueueEmpty}
	ErrQueueFull                 = &Error{Type: QueueFull}
	ErrTimeoutExpired            = &Error{Type: TimeoutExpired}
	ErrProviderAlreadyRegistered = &Error{Type: ProviderAlreadyRegistered}
	ErrProviderInUse             = &Error{Type: ProviderInUse}
	ErrInvalidAddress            = &Error{Type: InvalidAddress}
	ErrInterruptedCall           = &Error{Type: InterruptedCall}
	ErrConnQualUnavailable       = &Error{Type: ConnQualUnavailable}
	ErrPortInUse                 = &Error{Type: PortInUse}
	ErrCommNotSupported          = &Error{Type: CommNotSupported}
	ErrNotImplemented            = &Error{Type: NotImplemented}
)

// Errorf returns an *Error of type t and subtype sub with a message. It is the
// one constructor providers and the registry use, so that every error carries
// its DAT code.
func Errorf(t ReturnType, sub Subtype, msg string) *Error {
	return &Error{Type: t, Sub: sub, Msg: msg}
}

// Code returns the numeric DAT_RETURN value: the error class bit, the type
// and the subtype, exactly as the C macro DAT_ERROR(type, subtype) builds it.
// A nil *Error has code DAT_SUCCESS (0).
func (e *Error) Code() uint32 {
	if e == nil || e.Type == Success {
		return 0
	}
	return ClassError | uint32(e.Type) | uint32(e.Sub)
}

// Error formats the error as "DAT_TYPE(DAT_SUBTYPE): message: cause".
func (e *Error) Error() string {
	s := e.Type.String()
	if e.Sub != NoSubtype {
		s += "(" + e.Sub.String() + ")"
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Cause }

// Is reports whether target is an *Error of the same type and, when target
// names a subtype, the same subtype.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Type == e.Type && (t.Sub == NoSubtype || t.Sub == e.Sub)
}

// CodeOf returns the DAT_RETURN value for any error: 0 for nil, the code of
// an *Error found in its chain, and DAT_INTERNAL_ERROR for anything else.
func CodeOf(err error) uint32 {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return ClassError | uint32(InternalError)
}

// ContextError converts the end of a wait (ctx.Err()) into the DAT error the
// pages define: a passed deadline is DAT_TIMEOUT_EXPIRED, a cancellation is
// DAT_INTERRUPTED_CALL. The context error stays reachable through errors.Is.
func ContextError(ctx context.Context) *Error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Type: TimeoutExpired, Msg: "wait timed out", Cause: err}
	}
	return &Error{Type: InterruptedCall, Sub: SubInterrupted, Msg: "wait interrupted", Cause: err}
}
