package api

import (
	"fmt"
	"os"
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
	b, err := unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, &Error{Type: InsufficientResources, Sub: SubResourceMemory, Msg: "mmap", Cause: err}
	}
	m := &Memory{b: b, fd: fd}
	memMu.Lock()
	i := sort.Search(len(memLive), func(i int) bool { return AddrOf(memLive[i].b) > AddrOf(b) })
	memLive = append(memLive, nil)
	copy(memLive[i+1:], memLive[i:])
	memLive[i] = m
	memMu.Unlock()
	return m, nil
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
		err = unix.Munmap(m.b)
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
