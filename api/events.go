package api

import "net"

// EventNumber identifies the kind of an Event (DAT_EVENT_NUMBER).
type EventNumber uint32

// Event numbers, values as in dat.h.
const (
	DTOCompletionEvent                   EventNumber = 0x00001
	RMRBindCompletionEvent               EventNumber = 0x01001
	ConnectionRequestEvent               EventNumber = 0x02001
	ConnectionEstablishedEvent           EventNumber = 0x04001
	ConnectionPeerRejectedEvent          EventNumber = 0x04002
	ConnectionNonPeerRejectedEvent       EventNumber = 0x04003
	ConnectionAcceptCompletionErrorEvent EventNumber = 0x04004
	ConnectionDisconnectedEvent          EventNumber = 0x04005
	ConnectionBrokenEvent                EventNumber = 0x04006
	ConnectionTimedOutEvent              EventNumber = 0x04007
	ConnectionUnreachableEvent           EventNumber = 0x04008
	AsyncEVDOverflowEvent                EventNumber = 0x08001
	AsyncIACatastrophicEvent             EventNumber = 0x08002
	AsyncEPBrokenEvent                   EventNumber = 0x08003
	AsyncTimedOutEvent                   EventNumber = 0x08004
	AsyncProviderInternalErrorEvent      EventNumber = 0x08005
	SoftwareEvent                        EventNumber = 0x10001
)

var eventNames = map[EventNumber]string{
	DTOCompletionEvent:                   "DTO_COMPLETION",
	RMRBindCompletionEvent:               "RMR_BIND_COMPLETION",
	ConnectionRequestEvent:               "CONNECTION_REQUEST",
	ConnectionEstablishedEvent:           "CONNECTION_ESTABLISHED",
	ConnectionPeerRejectedEvent:          "CONNECTION_PEER_REJECTED",
	ConnectionNonPeerRejectedEvent:       "CONNECTION_NON_PEER_REJECTED",
	ConnectionAcceptCompletionErrorEvent: "CONNECTION_ACCEPT_COMPLETION_ERROR",
	ConnectionDisconnectedEvent:          "CONNECTION_DISCONNECTED",
	ConnectionBrokenEvent:                "CONNECTION_BROKEN",
	ConnectionTimedOutEvent:              "CONNECTION_TIMED_OUT",
	ConnectionUnreachableEvent:           "CONNECTION_UNREACHABLE",
	AsyncEVDOverflowEvent:                "ASYNC_ERROR_EVD_OVERFLOW",
	AsyncIACatastrophicEvent:             "ASYNC_ERROR_IA_CATASTROPHIC",
	AsyncEPBrokenEvent:                   "ASYNC_ERROR_EP_BROKEN",
	AsyncTimedOutEvent:                   "ASYNC_ERROR_TIMED_OUT",
	AsyncProviderInternalErrorEvent:      "ASYNC_ERROR_PROVIDER_INTERNAL_ERROR",
	SoftwareEvent:                        "SOFTWARE",
}

// String returns the event name without its DAT_ prefix, e.g.
// "CONNECTION_ESTABLISHED".
func (n EventNumber) String() string { return mappedName(eventNames, n, "EventNumber") }

// Stream returns the EVD flag of the event stream that carries events of
// number n; an EVD accepts an event only if it was created with that flag.
func (n EventNumber) Stream() EVDFlags {
	switch {
	case n == DTOCompletionEvent:
		return EVDDTO
	case n == RMRBindCompletionEvent:
		return EVDRMRBind
	case n == ConnectionRequestEvent:
		return EVDCR
	case n&0xFF000 == 0x04000:
		return EVDConnection
	case n&0xFF000 == 0x08000:
		return EVDAsync
	case n == SoftwareEvent:
		return EVDSoftware
	}
	return 0
}

// DTOStatus is the completion status of a DTO or RMR bind
// (DAT_DTO_COMPLETION_STATUS).
type DTOStatus uint32

// DTO completion statuses, values as in dat.h.
const (
	DTOSuccess             DTOStatus = 0
	DTOErrFlushed          DTOStatus = 1
	DTOErrLocalLength      DTOStatus = 2
	DTOErrLocalEP          DTOStatus = 3
	DTOErrLocalProtection  DTOStatus = 4
	DTOErrBadResponse      DTOStatus = 5
	DTOErrRemoteAccess     DTOStatus = 6
	DTOErrRemoteResponder  DTOStatus = 7
	DTOErrTransport        DTOStatus = 8
	DTOErrReceiverNotReady DTOStatus = 9
	DTOErrPartialPacket    DTOStatus = 10
	RMROperationFailed     DTOStatus = 11
)

var dtoStatusNames = [...]string{
	"SUCCESS", "ERR_FLUSHED", "ERR_LOCAL_LENGTH", "ERR_LOCAL_EP", "ERR_LOCAL_PROTECTION",
	"ERR_BAD_RESPONSE", "ERR_REMOTE_ACCESS", "ERR_REMOTE_RESPONDER", "ERR_TRANSPORT",
	"ERR_RECEIVER_NOT_READY", "ERR_PARTIAL_PACKET", "RMR_OPERATION_FAILED",
}

// String returns the status name without its DAT_DTO_ prefix, e.g.
// "ERR_FLUSHED".
func (s DTOStatus) String() string { return listedName(dtoStatusNames[:], s, "DTOStatus") }

// Asynchronous error reasons (the reason field of AsyncErrorData), as in
// dat.h; their meaning depends on the kind of object the event names.
const (
	ReasonIACatastrophic     = 0 // IA: DAT_IA_CATASTROPHIC_ERROR
	ReasonIAOther            = 1 // IA: DAT_IA_OTHER_ERROR
	ReasonEPTransferToError  = 0 // EP: DAT_EP_TRANSFER_TO_ERROR
	ReasonEPOther            = 1 // EP: DAT_EP_OTHER_ERROR
	ReasonEPSoftHighWater    = 2 // EP: DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT
	ReasonEVDOverflow        = 0 // EVD: DAT_EVD_OVERFLOW_ERROR
	ReasonEVDOther           = 1 // EVD: DAT_EVD_OTHER_ERROR
	ReasonSRQTransferToError = 0 // SRQ: DAT_SRQ_TRANSFER_TO_ERROR
	ReasonSRQOther           = 1 // SRQ: DAT_SRQ_OTHER_ERROR
	ReasonSRQLowWatermark    = 2 // SRQ: DAT_SRQ_LOW_WATERMARK_EVENT
)

// DTOCompletionData describes a completed DTO
// (DAT_DTO_COMPLETION_EVENT_DATA). Length and RMRContext are defined only
// when Status is DTOSuccess.
type DTOCompletionData struct {
	EP         EP
	Cookie     Cookie
	Status     DTOStatus
	Length     uint32 // bytes transferred
	Op         DTOOp
	RMRContext RMRContext // the RMR invalidated by a receive-with-invalidate
}

// RMRBindCompletionData describes a completed RMR bind
// (DAT_RMR_BIND_COMPLETION_EVENT_DATA).
type RMRBindCompletionData struct {
	RMR    RMR
	Cookie Cookie
	Status DTOStatus
}

// CRArrivalData describes a connection request arriving on a service point
// (DAT_CR_ARRIVAL_EVENT_DATA). Exactly one of PSP and RSP is set; the RSP is
// set even though the RSP itself is consumed by the arrival.
type CRArrivalData struct {
	PSP       PSP
	RSP       RSP
	LocalAddr net.Addr
	ConnQual  ConnQual
	CR        CR
	Truncated bool // the private data was truncated
}

// ConnectionData accompanies connection events (DAT_CONNECTION_EVENT_DATA).
// PrivateData is the peer's private data on the active side's ESTABLISHED
// event and on PEER_REJECTED; it is owned by the provider and valid until the
// EP is reset or freed.
type ConnectionData struct {
	EP          EP
	PrivateData []byte
}

// AsyncErrorData accompanies asynchronous error events
// (DAT_ASYNCH_ERROR_EVENT_DATA). Object is the IA, EP, EVD, SRQ, LMR, RMR or
// PZ concerned; Reason is one of the Reason constants for its kind.
type AsyncErrorData struct {
	Object Object
	Reason int
}

// Event is one DAT event (DAT_EVENT). Number says which of the data fields
// is meaningful; the others are zero. EVD is the EVD it was dequeued from.
// Events are plain values: dequeuing one allocates nothing.
type Event struct {
	Number   EventNumber
	EVD      EVD
	DTO      DTOCompletionData
	RMRBind  RMRBindCompletionData
	CR       CRArrivalData
	Conn     ConnectionData
	Async    AsyncErrorData
	Software any // the consumer's value of a software event
}
