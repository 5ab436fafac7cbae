package api

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/godat/godat/internal/openfds"
)

// The numeric values below were printed by a C program compiled against
// the reference headers (/usr/include/dat2, libdapl-dev); they pin the Go
// enumerations to the C ABI.
func TestNumericValuesMatchTheCHeaders(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint32
	}{
		{"DAT_INVALID_HANDLE_EP", uint32(SubHandleEP), 12},
		{"DAT_INVALID_ARG1", uint32(SubArg1), 37},
		{"DAT_INVALID_STATE_EP_UNCONNECTED", uint32(SubStateEPUnconnected), 47},
		{"DAT_INVALID_STATE_PZ_IN_USE", uint32(SubStatePZInUse), 83},
		{"DAT_PROTECTION_RDMA_WRITE", uint32(SubProtectionRDMAWrite), 96},
		{"DAT_INVALID_ADDRESS_MALFORMED", uint32(SubAddressMalformed), 99},
		{"DAT_THREAD_SAFETY_NOT_FOUND", uint32(SubThreadSafetyNotFound), 103},
		{"DAT_HANDLE_TYPE_SRQ", uint32(HandleSRQ), 10},
		{"DAT_EP_STATE_COMPLETION_PENDING", uint32(EPCompletionPending), 12},
		{"DAT_DTO_BIND_MW", uint32(OpBindMW), 5},
		{"DAT_CONNECTION_EVENT_BROKEN", uint32(ConnectionBrokenEvent), 0x04006},
		{"DAT_MEM_PRIV_ALL_FLAG", uint32(MemPrivAll), 0x33},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, the C header says %d", c.name, c.got, c.want)
		}
	}
	if n := len(subtypeNames); n != int(SubThreadSafetyNotFound)+1 {
		t.Errorf("%d subtype names for %d subtypes", n, SubThreadSafetyNotFound+1)
	}
}

func TestErrorCodeAndMatching(t *testing.T) {
	err := error(Errorf(InvalidState, SubStatePZInUse, "PZ has 2 LMRs"))
	if got, want := CodeOf(err), uint32(0x80000000|0x00070000|83); got != want {
		t.Fatalf("code %#x, want %#x", got, want)
	}
	if !errors.Is(err, ErrInvalidState) {
		t.Fatal("an InvalidState error does not match ErrInvalidState")
	}
	if !errors.Is(err, &Error{Type: InvalidState, Sub: SubStatePZInUse}) {
		t.Fatal("does not match its own type and subtype")
	}
	if errors.Is(err, &Error{Type: InvalidState, Sub: SubStateLMRInUse}) || errors.Is(err, ErrInvalidParameter) {
		t.Fatal("matches another subtype or type")
	}
	if got := err.Error(); got != "DAT_INVALID_STATE(DAT_INVALID_STATE_PZ_IN_USE): PZ has 2 LMRs" {
		t.Fatalf("message %q", got)
	}
	if CodeOf(nil) != 0 || CodeOf(errors.New("x")) != 0x80040000 {
		t.Fatal("CodeOf of nil or a foreign error")
	}
	if (*Error)(nil).Code() != 0 {
		t.Fatal("nil *Error code")
	}
}

func TestContextError(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	err := ContextError(ctx)
	if !errors.Is(err, ErrTimeoutExpired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	err = ContextError(ctx)
	if !errors.Is(err, ErrInterruptedCall) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: %v", err)
	}
}

func TestEventStreams(t *testing.T) {
	for n, want := range map[EventNumber]EVDFlags{
		DTOCompletionEvent: EVDDTO, RMRBindCompletionEvent: EVDRMRBind, ConnectionRequestEvent: EVDCR,
		ConnectionEstablishedEvent: EVDConnection, ConnectionUnreachableEvent: EVDConnection,
		AsyncEVDOverflowEvent: EVDAsync, AsyncProviderInternalErrorEvent: EVDAsync, SoftwareEvent: EVDSoftware,
	} {
		if got := n.Stream(); got != want {
			t.Errorf("%v.Stream() = %#x, want %#x", n, got, want)
		}
	}
}

func TestAllocMemory(t *testing.T) {
	fds := openfds.Count(t)
	m, err := AllocMemory(5000)
	if err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize()
	if m.Len() != (5000+page-1)/page*page || uint64(AddrOf(m.Bytes()))%uint64(page) != 0 {
		t.Fatalf("length %d at %#x is not whole aligned pages", m.Len(), AddrOf(m.Bytes()))
	}
	b := m.Bytes()
	b[0], b[len(b)-1] = 1, 2
	if got, off, ok := MemoryOf(b[10:20]); !ok || got != m || off != 10 {
		t.Fatalf("MemoryOf inside: %v %d %v", got, off, ok)
	}
	if _, _, ok := MemoryOf(make([]byte, 10)); ok {
		t.Fatal("MemoryOf claims Go heap memory")
	}
	if m.FD() < 0 {
		t.Fatal("no descriptor")
	}
	if err := m.Free(); err != nil {
		t.Fatal(err)
	}
	if err := m.Free(); err != nil {
		t.Fatalf("second Free: %v", err)
	}
	if _, _, ok := MemoryOf(b[10:20]); ok {
		t.Fatal("MemoryOf finds freed memory")
	}
	if n := openfds.Count(t); n != fds {
		t.Fatalf("%d descriptors open after Free, %d before", n, fds)
	}
	if _, err := AllocMemory(0); !errors.Is(err, ErrInvalidParameter) {
		t.Fatalf("AllocMemory(0): %v", err)
	}
}

// MapMemory maps the memfd of a Memory again: at a chosen address it
// shares the pages, MemoryOf knows it, and Free releases the mapping and
// the duplicated descriptor.
func TestMapMemory(t *testing.T) {
	fds := openfds.Count(t)
	m, err := AllocMemory(3 * os.Getpagesize())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	// Reserve an address range, release it, and map there.
	probe, err := AllocMemory(m.Len())
	if err != nil {
		t.Fatal(err)
	}
	at := AddrOf(probe.Bytes())
	probe.Free()
	m2, err := MapMemory(m.FD(), at)
	if err != nil {
		t.Fatal(err)
	}
	if AddrOf(m2.Bytes()) != at || m2.Len() != m.Len() {
		t.Fatalf("mapped %d bytes at %#x, want %d at %#x", m2.Len(), AddrOf(m2.Bytes()), m.Len(), at)
	}
	m.Bytes()[7] = 42
	if m2.Bytes()[7] != 42 {
		t.Fatal("the second mapping does not share the pages")
	}
	if got, off, ok := MemoryOf(m2.Bytes()[100:200]); !ok || got != m2 || off != 100 {
		t.Fatalf("MemoryOf on the mapped region: %v %d %v", got, off, ok)
	}
	// The range is taken now: mapping there again fails.
	if _, err := MapMemory(m.FD(), at); !errors.Is(err, ErrInsufficientResources) {
		t.Fatalf("MapMemory over a used range: %v", err)
	}
	if _, err := MapMemory(m.FD(), at+1); !errors.Is(err, ErrInvalidParameter) {
		t.Fatalf("MapMemory at an unaligned address: %v", err)
	}
	b2 := m2.Bytes()
	if err := m2.Free(); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := MemoryOf(b2[:1]); ok {
		t.Fatal("MemoryOf finds the freed mapping")
	}
	m.Free()
	if n := openfds.Count(t); n != fds {
		t.Fatalf("%d descriptors open after Free, %d before", n, fds)
	}
}

// The remote triplets of an LMR and of an RMR window name the same bytes
// as the local triplet over them, with the context that grants access.
func TestRemoteTriplets(t *testing.T) {
	lmr := LMRParam{RegisteredAddress: 0x7000_1000, LMRContext: 3, RMRContext: 0xBEEF}
	if got, want := lmr.RemoteTriplet(0x20, 64), (RMRTriplet{Addr: 0x7000_1020, Length: 64, RMRContext: 0xBEEF}); got != want {
		t.Errorf("LMRParam.RemoteTriplet = %+v, want %+v", got, want)
	}
	if l, r := lmr.Triplet(0x20, 64), lmr.RemoteTriplet(0x20, 64); l.Addr != r.Addr || l.Length != r.Length {
		t.Errorf("local %+v and remote %+v triplets name different bytes", l, r)
	}
	win := LMRTriplet{Addr: 0x7000_1400, Length: 256, LMRContext: 3}
	va := RMRParam{LMRTriplet: win, RMRContext: 0xCAFE, VAType: VATypeVA}
	if got, want := va.Triplet(8, 16), (RMRTriplet{Addr: 0x7000_1408, Length: 16, RMRContext: 0xCAFE}); got != want {
		t.Errorf("RMRParam.Triplet of a VA window = %+v, want %+v", got, want)
	}
	zb := RMRParam{LMRTriplet: win, RMRContext: 0xCAFE, VAType: VATypeZB}
	if got, want := zb.Triplet(8, 16), (RMRTriplet{Addr: 8, Length: 16, RMRContext: 0xCAFE}); got != want {
		t.Errorf("RMRParam.Triplet of a zero-based window = %+v, want %+v", got, want)
	}
}

func TestRMRTripletBinary(t *testing.T) {
	in := RMRTriplet{Addr: 0x0102_0304_0506_0708, Length: 0x1122_3344, RMRContext: 0xA1B2_C3D4}
	b, err := in.MarshalBinary()
	if err != nil || len(b) != RMRTripletSize {
		t.Fatalf("MarshalBinary = %x, %v", b, err)
	}
	if want := "0807060504030201" + "44332211" + "d4c3b2a1"; fmt.Sprintf("%x", b) != want {
		t.Errorf("binary form %x, want %s", b, want)
	}
	if ab, _ := in.AppendBinary([]byte("pd:")); string(ab[:3]) != "pd:" || string(ab[3:]) != string(b) {
		t.Errorf("AppendBinary = %x", ab)
	}
	var out RMRTriplet
	if err := out.UnmarshalBinary(b); err != nil || out != in {
		t.Errorf("UnmarshalBinary = %+v, %v; want %+v", out, err, in)
	}
	for _, bad := range [][]byte{nil, b[:15], append(b, 0)} {
		if err := out.UnmarshalBinary(bad); !errors.Is(err, ErrInvalidParameter) || out != in {
			t.Errorf("UnmarshalBinary of %d bytes: %v, triplet %+v", len(bad), err, out)
		}
	}
}

// CheckPrivVA accepts every defined privilege with either VA type and
// names the argument at fault otherwise.
func TestCheckPrivVA(t *testing.T) {
	if err := CheckPrivVA(MemPrivAll, VATypeZB, SubArg4, SubArg5); err != nil {
		t.Fatalf("all privileges, ZB: %v", err)
	}
	if err := CheckPrivVA(0x40, VATypeVA, SubArg4, SubArg5); !errors.Is(err, &Error{Type: InvalidParameter, Sub: SubArg4}) || !strings.Contains(err.Error(), "0x40") {
		t.Fatalf("an unknown privilege bit: %v", err)
	}
	if err := CheckPrivVA(MemPrivLocalRead, 7, SubArg6, SubArg7); !errors.Is(err, &Error{Type: InvalidParameter, Sub: SubArg7}) {
		t.Fatalf("an unknown VA type: %v", err)
	}
}
