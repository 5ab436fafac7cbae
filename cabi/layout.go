//go:build cabi

package main

/*
#include "cabi.h"
#include <stddef.h>
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/godat/godat/api"
)

// layoutProblems compares the C structures this library reads and writes
// with the sizes OFA's programs were built with (x86-64, libdapl-dev
// 2.1), and the triplets it passes to godat without copying with their Go
// twins. It returns one line per difference.
func layoutProblems() []string {
	var p []string
	want := func(what string, got, exp uintptr) {
		if got != exp {
			p = append(p, fmt.Sprintf("%s is %d, want %d", what, got, exp))
		}
	}
	want("sizeof(DAT_EVENT)", unsafe.Sizeof(C.DAT_EVENT{}), 120)
	want("offsetof(DAT_EVENT, event_data)", unsafe.Offsetof(C.DAT_EVENT{}.event_data), 16)
	want("sizeof(DAT_IA_ATTR)", unsafe.Sizeof(C.DAT_IA_ATTR{}), 688)
	want("offsetof(DAT_IA_ATTR, ia_address_ptr)", unsafe.Offsetof(C.DAT_IA_ATTR{}.ia_address_ptr), 528)
	want("sizeof(DAT_PROVIDER_ATTR)", unsafe.Sizeof(C.DAT_PROVIDER_ATTR{}), 520)
	want("sizeof(DAT_EP_ATTR)", unsafe.Sizeof(C.DAT_EP_ATTR{}), 88)
	want("sizeof(DAT_EP_PARAM)", unsafe.Sizeof(C.DAT_EP_PARAM{}), 184)
	want("sizeof(DAT_CR_PARAM)", unsafe.Sizeof(C.DAT_CR_PARAM{}), 40)
	want("sizeof(struct dat_provider)", unsafe.Sizeof(C.DAT_PROVIDER{}), 648)
	want("offsetof(struct dat_provider, ia_query_func)", unsafe.Offsetof(C.DAT_PROVIDER{}.ia_query_func), 24)
	want("offsetof(struct dat_provider, ep_post_recv_func)", unsafe.Offsetof(C.DAT_PROVIDER{}.ep_post_recv_func), 272)
	want("offsetof(struct dat_provider, handle_extendedop_func)", unsafe.Offsetof(C.DAT_PROVIDER{}.handle_extendedop_func), 640)
	want("sizeof(gd_slot)", slotSize, 16)
	want("offsetof(gd_slot, provider)", unsafe.Offsetof(C.gd_slot{}.provider), 0)

	var ct C.DAT_LMR_TRIPLET
	var gt api.LMRTriplet
	want("sizeof(DAT_LMR_TRIPLET) against api.LMRTriplet", unsafe.Sizeof(ct), unsafe.Sizeof(gt))
	want("DAT_LMR_TRIPLET.segment_length", unsafe.Offsetof(ct.segment_length), unsafe.Offsetof(gt.Length))
	want("DAT_LMR_TRIPLET.lmr_context", unsafe.Offsetof(ct.lmr_context), unsafe.Offsetof(gt.LMRContext))
	var cr C.DAT_RMR_TRIPLET
	var gr api.RMRTriplet
	want("sizeof(DAT_RMR_TRIPLET) against api.RMRTriplet", unsafe.Sizeof(cr), unsafe.Sizeof(gr))
	want("DAT_RMR_TRIPLET.segment_length", unsafe.Offsetof(cr.segment_length), unsafe.Offsetof(gr.Length))
	want("DAT_RMR_TRIPLET.rmr_context", unsafe.Offsetof(cr.rmr_context), unsafe.Offsetof(gr.RMRContext))
	return p
}
