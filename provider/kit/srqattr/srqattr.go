// Package srqattr holds what godat's software providers share of a shared
// receive queue: the argument and state checks of dat_srq_create(3DAT),
// dat_srq_resize(3DAT) and dat_srq_set_lw(3DAT), and Queue, the posted
// receives with the size and low-watermark rules. How receives reach the
// EPs that use the SRQ stays in the provider.
package srqattr

import (
	"fmt"

	"github.com/godat/godat/api"
)

// LowWatermarkEvent is the event number of the SRQ low-watermark
// notification: DAT 2.0 defines the reason (DAT_SRQ_LOW_WATERMARK_EVENT)
// but no event number of its own, so every provider posts it as this
// asynchronous event, whose AsyncErrorData names the SRQ with reason
// api.ReasonSRQLowWatermark.
const LowWatermarkEvent = api.AsyncProviderInternalErrorEvent

// CheckCreate checks the attributes of dat_srq_create(3DAT): MaxRecvDTOs
// in 1..maxRecv, MaxRecvIOV in 1..maxIOV, LowWatermark in
// 0..MaxRecvDTOs (ErrInvalidParameter otherwise).
func CheckCreate(a api.SRQAttr, maxRecv, maxIOV int) error {
	switch {
	case a.MaxRecvDTOs < 1 || a.MaxRecvDTOs > maxRecv:
		return api.Errorf(api.InvalidParameter, api.SubArg3, fmt.Sprintf("SRQ MaxRecvDTOs %d outside 1..%d", a.MaxRecvDTOs, maxRecv))
	case a.MaxRecvIOV < 1 || a.MaxRecvIOV > maxIOV:
		return api.Errorf(api.InvalidParameter, api.SubArg3, fmt.Sprintf("SRQ MaxRecvIOV %d outside 1..%d", a.MaxRecvIOV, maxIOV))
	case a.LowWatermark < 0 || a.LowWatermark > a.MaxRecvDTOs:
		return api.Errorf(api.InvalidParameter, api.SubArg3, fmt.Sprintf("SRQ low watermark %d outside 0..%d", a.LowWatermark, a.MaxRecvDTOs))
	}
	return nil
}

// CheckSize checks the new size n of dat_srq_resize(3DAT) for the
// arguments alone: 1..maxRecv (ErrInvalidParameter otherwise).
func CheckSize(n, maxRecv int) error {
	if n < 1 || n > maxRecv {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("SRQ size %d outside 1..%d", n, maxRecv))
	}
	return nil
}

// CheckResize checks the new size n against an SRQ holding posted
// receives with low watermark lw: below either is ErrInvalidState.
func CheckResize(n, posted, lw int) error {
	switch {
	case n < posted:
		return api.Errorf(api.InvalidState, api.NoSubtype, fmt.Sprintf("%d receives are posted, more than %d", posted, n))
	case n < lw:
		return api.Errorf(api.InvalidState, api.NoSubtype, fmt.Sprintf("size %d is below the low watermark %d", n, lw))
	}
	return nil
}

// CheckLW checks the low watermark of dat_srq_set_lw(3DAT) for an SRQ of
// size max: 0..max (ErrInvalidParameter otherwise).
func CheckLW(lw, max int) error {
	if lw < 0 || lw > max {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("low watermark %d outside 0..%d", lw, max))
	}
	return nil
}

// CheckFree is the check of dat_srq_free(3DAT): ErrInvalidState
// (SubStateSRQInUse), saying how many, while eps EPs use the SRQ.
func CheckFree(eps int) error {
	if eps > 0 {
		return api.Errorf(api.InvalidState, api.SubStateSRQInUse, fmt.Sprintf("%d EP(s) use the SRQ", eps))
	}
	return nil
}
