package api

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"sort"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Memory is a region from AllocMemory: page aligned, never moved by the Go
// runtime, and backed by a memfd so that another process (a plugin) can map
// the same pages. It is the memory to register when a provider moves data
// on its own (an RDMA NIC, a plugin process). Memory owns its mapping and
// its file descriptor until Free.
type Memory struct {
	b    []byte
	fd   int
	once sync.Once
}

var (
	memMu   sync.RWMutex
	memLive []*Memory // sorted by address; the regions AllocMemory handed out
)

// AllocMemory returns size bytes (rounded up to whole pages) of zeroed,
// shareable memory. The caller must Free it once no LMR uses it.
func AllocMemory(size int) (*Memory, error) {
	if size <= 0 {
		return nil, Errorf(InvalidParameter, SubArg1, fmt.Sprintf("AllocMemory: size %d must be positive", size))
	}
	page := os.Getpagesize()
	n := (size + page - 1) / page * page
	fd, err := unix.MemfdCreate("godat-lmr", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, &Error{Type: InsufficientResources, Sub: SubResourceMemory, Msg: "memfd_create", Cause: err}
	}
	if err := unix.Ftruncate(fd, int64(n)); err != nil {
		unix.Close(fd)
		return nil, &Error{Type: InsufficientResources, Sub: SubResourceMemory, Msg: "ftruncate", Cause: err}
	}
	b, err := mapInBand(fd, n)
	if err != nil {
		unix.Close(fd)
		return nil, &Error{Type: InsufficientResources, Sub: SubResourceMemory, Msg: "mmap", Cause: err}
	}
	m := &Memory{b: b, fd: fd}
	addLive(m)
	return m, nil
}

// AllocMemory places its regions in a band of the address space that
// neither the kernel (which maps top-down from just below the stack, at
// 0x7f... on x86-64) nor the Go runtime (heap at 0xc0_0000_0000, the race
// detector's shadow below 0x4000_0000_0000) uses, starting at a random
// page of it in each process. A process that receives a region
// (MapMemory, a plugin) can therefore map it at the same address as its
// owner: addresses in triplets mean the same bytes in both processes.
// When the band is unusable (an old kernel without MAP_FIXED_NOREPLACE, a
// full band), the kernel chooses the address and only sharing at the same
// address may fail.
const (
	bandStart = 0x5000_0000_0000
	bandEnd   = 0x6000_0000_0000
)

var (
	bandMu   sync.Mutex
	bandNext uintptr // next address to try; 0 until the first allocation
)

// mapInBand maps n bytes of fd, shared, in the band when it can.
func mapInBand(fd, n int) ([]byte, error) {
	bandMu.Lock()
	if bandNext == 0 {
		var r [8]byte
		crand.Read(r[:])
		pages := uintptr((bandEnd-bandStart)/os.Getpagesize()) / 2 // start in the lower half
		bandNext = bandStart + uintptr(binary.LittleEndian.Uint64(r[:]))%pages*uintptr(os.Getpagesize())
	}
	for range 64 {
		addr := bandNext
		if addr+uintptr(n) > bandEnd {
			addr = bandStart
		}
		bandNext = addr + uintptr(n)
		r, _, errno := unix.Syscall6(unix.SYS_MMAP, addr, uintptr(n), unix.PROT_READ|unix.PROT_WRITE,
			unix.MAP_SHARED|unix.MAP_FIXED_NOREPLACE, uintptr(fd), 0)
		if errno == unix.EEXIST {
			continue // this process has something there: try further on
		}
		if errno != 0 {
			break
		}
		if r != addr {
			unix.Syscall(unix.SYS_MUNMAP, r, uintptr(n), 0)
			break
		}
		bandMu.Unlock()
		return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&r))), n), nil
	}
	bandMu.Unlock()
	r, _, errno := unix.Syscall6(unix.SYS_MMAP, 0, uintptr(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED, uintptr(fd), 0)
	if errno != 0 {
		return nil, errno
	}
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&r))), n), nil
}

// MapMemory maps memory that another process shared: fd is the memfd of
// its Memory (Memory.FD, passed over a Unix socket). The whole file is
// mapped, shared, at address addr when addr is not 0 (failing if anything
// is mapped there already), else where the kernel chooses. The returned
// Memory is like one from AllocMemory: MemoryOf knows it, and it owns a
// duplicate of fd, so the caller may close fd. It is how a plugin process
// sees the pages of its host at the same addresses as the host.
func MapMemory(fd int, addr VAddr) (*Memory, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &Error{Type: InvalidParameter, Sub: SubArg1, Msg: "MapMemory: fstat of the descriptor", Cause: err}
	}
	n := int(st.Size)
	if n <= 0 || n%os.Getpagesize() != 0 {
		return nil, Errorf(InvalidParameter, SubArg1, fmt.Sprintf("MapMemory: the descriptor's file has %d bytes, not a positive number of pages", n))
	}
	if addr%VAddr(os.Getpagesize()) != 0 {
		return nil, Errorf(InvalidParameter, SubArg2, fmt.Sprintf("MapMemory: address %#x is not page aligned", uint64(addr)))
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, &Error{Type: InsufficientResources, Sub: SubResourceMemory, Msg: "MapMemory: dup", Cause: err}
	}
	flags := unix.MAP_SHARED
	if addr != 0 {
		flags |= unix.MAP_FIXED_NOREPLACE
	}
	r, _, errno := unix.Syscall6(unix.SYS_MMAP, uintptr(addr), uintptr(n), unix.PROT_READ|unix.PROT_WRITE, uintptr(flags), uintptr(dup), 0)
	if errno != 0 {
		unix.Close(dup)
		if errno == unix.EEXIST {
			return nil, &Error{Type: InsufficientResources, Sub: SubResourceMemory,
				Msg: fmt.Sprintf("MapMemory: this process already uses addresses in %#x..%#x", uint64(addr), uint64(addr)+uint64(n)), Cause: errno}
		}
		return nil, &Error{Type: InsufficientResources, Sub: SubResourceMemory, Msg: "MapMemory: mmap", Cause: errno}
	}
	b := unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&r))), n)
	if addr != 0 && VAddr(r) != addr {
		// A kernel without MAP_FIXED_NOREPLACE takes the address as a hint.
		unix.Syscall(unix.SYS_MUNMAP, r, uintptr(n), 0)
		unix.Close(dup)
		return nil, Errorf(InsufficientResources, SubResourceMemory, fmt.Sprintf("MapMemory: the kernel chose %#x instead of %#x", r, uint64(addr)))
	}
	m := &Memory{b: b, fd: dup}
	addLive(m)
	return m, nil
}

// addLive records m among the live regions, in address order, so that
// MemoryOf finds it.
func addLive(m *Memory) {
	memMu.Lock()
	defer memMu.Unlock()
	i := sort.Search(len(memLive), func(i int) bool { return AddrOf(memLive[i].b) > AddrOf(m.b) })
	memLive = slices.Insert(memLive, i, m)
}

// Bytes returns the whole region. The slice is invalid after Free.
func (m *Memory) Bytes() []byte { return m.b }

// Len returns the size of the region in bytes.
func (m *Memory) Len() int { return len(m.b) }

// FD returns the memfd behind the region, for sharing it with another
// process. It stays owned by m.
func (m *Memory) FD() int { return m.fd }

// Free unmaps the region and closes its descriptor. Further calls do
// nothing. Memory must not be freed while an LMR registers it.
func (m *Memory) Free() error {
	var err error
	m.once.Do(func() {
		memMu.Lock()
		for i, x := range memLive {
			if x == m {
				memLive = append(memLive[:i], memLive[i+1:]...)
				break
			}
		}
		memMu.Unlock()
		if _, _, errno := unix.Syscall(unix.SYS_MUNMAP, uintptr(unsafe.Pointer(unsafe.SliceData(m.b))), uintptr(len(m.b)), 0); errno != 0 {
			err = errno
		}
		if cerr := unix.Close(m.fd); err == nil {
			err = cerr
		}
		m.b = nil
	})
	return err
}

// MemoryOf reports whether b lies entirely inside memory from AllocMemory
// that has not been freed, and if so which region and at what offset.
// Providers that cannot use Go heap memory call it at LMR creation.
func MemoryOf(b []byte) (m *Memory, off uint64, ok bool) {
	if len(b) == 0 {
		return nil, 0, false
	}
	a := AddrOf(b)
	memMu.RLock()
	defer memMu.RUnlock()
	i := sort.Search(len(memLive), func(i int) bool { return AddrOf(memLive[i].b) > a }) - 1
	if i < 0 {
		return nil, 0, false
	}
	m = memLive[i]
	base := AddrOf(m.b)
	if a+VAddr(len(b)) > base+VAddr(len(m.b)) {
		return nil, 0, false
	}
	return m, uint64(a - base), true
}

// AddrOf returns the virtual address of the first byte of b, the value DAT
// triplets carry; 0 for an empty slice.
func AddrOf(b []byte) VAddr {
	if len(b) == 0 {
		return 0
	}
	return VAddr(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}
