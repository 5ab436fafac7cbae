package wire

// The shared-memory data path. The host allocates one region per plugin
// process (api.AllocMemory, shared like LMR memory) holding two rings, and
// two eventfd doorbells; all three travel to the plugin on the control
// socket.
//
//   - The submission ring carries DTO posts from the host to the plugin:
//     fixed 192-byte entries, many producers (host goroutines) and one
//     consumer (a goroutine of the plugin), after D. Vyukov's bounded
//     queue: each entry has a sequence word that says whose turn it is.
//   - The completion ring carries every event from the plugin to the host,
//     in the order the plugin took them off its provider's EVDs:
//     variable-length records (connection events carry private data), one
//     producer and one consumer.
//
// A side that finds its ring empty raises its "sleeping" word, looks once
// more, and blocks reading its eventfd; the other side rings the doorbell
// only when it sees that word, so a busy ring costs no system call.
//
// Control calls still go over gRPC. Each carries the number of submissions
// the host had made (gRPC metadata), and the plugin runs it only after it
// has taken those, so a control call never overtakes a post made before it.

import (
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/godat/godat/api"
)

// Layout of the shared region.
const (
	shmHeader = 4096
	sqEntries = 4096 // a power of two
	sqEntry   = 192
	SQMaxIOV  = 7
	cqBytes   = 1 << 20 // a power of two
	ShmSize   = shmHeader + sqEntries*sqEntry + cqBytes

	offSQTail     = 0
	offSQHead     = 64
	OffSQSleeping = 128
	offCQTail     = 192
	offCQHead     = 256
	OffCQSleeping = 320

	offSQ = shmHeader
	offCQ = shmHeader + sqEntries*sqEntry
)

// Submission kinds.
const (
	SubSend = iota + 1
	SubSendInv
	SubRecv
	SubWrite
	SubRead
	SubReadToRMR
)

// Rings is one side's view of the shared region.
type Rings struct {
	b    []byte
	base unsafe.Pointer
}

func NewRings(b []byte) *Rings { return &Rings{b: b, base: unsafe.Pointer(unsafe.SliceData(b))} }

func (r *Rings) u64(off int) *uint64 { return (*uint64)(unsafe.Add(r.base, off)) }
func (r *Rings) U32(off int) *uint32 { return (*uint32)(unsafe.Add(r.base, off)) }

// SQInit gives every submission entry its first sequence number.
func (r *Rings) SQInit() {
	for i := 0; i < sqEntries; i++ {
		atomic.StoreUint64(r.u64(offSQ+i*sqEntry), uint64(i))
	}
}

// Submission is a post as the ring carries it.
type Submission struct {
	Kind, Flags uint32
	EP, Cookie  uint64
	Remote      api.RMRTriplet
	Local       api.RMRTriplet // PostRDMAReadToRMR
	Invalidate  bool
	InvRMR      api.RMRContext
	IOV         []api.LMRTriplet
}

// Submit puts s on the submission ring and returns the number of
// submissions made so far. It reports false, having submitted nothing, if
// the ring stays full for a while or the plugin died (dead says so): the
// caller then posts by a call, which waits its turn in the plugin.
func (r *Rings) Submit(s *Submission, dead func() bool) (uint64, bool) {
	tail := r.u64(offSQTail)
	for tries := 0; ; {
		pos := atomic.LoadUint64(tail)
		e := offSQ + int(pos%sqEntries)*sqEntry
		seq := atomic.LoadUint64(r.u64(e))
		switch {
		case seq == pos:
			if !atomic.CompareAndSwapUint64(tail, pos, pos+1) {
				continue
			}
			r.writeSub(e, s)
			atomic.StoreUint64(r.u64(e), pos+1)
			return pos + 1, true
		case seq < pos:
			// Full: the plugin is behind.
			if tries++; tries > 1000 || dead() {
				return 0, false
			}
			runtime.Gosched()
		}
	}
}

func (r *Rings) writeSub(e int, s *Submission) {
	b := r.b[e : e+sqEntry]
	le := binary.LittleEndian
	le.PutUint32(b[8:], s.Kind)
	le.PutUint32(b[12:], s.Flags)
	le.PutUint64(b[16:], s.EP)
	le.PutUint64(b[24:], s.Cookie)
	le.PutUint64(b[32:], uint64(s.Remote.Addr))
	le.PutUint32(b[40:], s.Remote.Length)
	le.PutUint32(b[44:], uint32(s.Remote.RMRContext))
	le.PutUint64(b[48:], uint64(s.Local.Addr))
	le.PutUint32(b[56:], s.Local.Length)
	le.PutUint32(b[60:], uint32(s.Local.RMRContext))
	var inv uint32
	if s.Invalidate {
		inv = 1
	}
	le.PutUint32(b[64:], inv)
	le.PutUint32(b[68:], uint32(s.InvRMR))
	le.PutUint32(b[72:], uint32(len(s.IOV)))
	for i, t := range s.IOV {
		o := 80 + 16*i
		le.PutUint64(b[o:], uint64(t.Addr))
		le.PutUint32(b[o+8:], t.Length)
		le.PutUint32(b[o+12:], uint32(t.LMRContext))
	}
}

// Take reads the next submission into s (reusing s.iov), if there is one.
func (r *Rings) Take(s *Submission) bool {
	head := r.u64(offSQHead)
	pos := atomic.LoadUint64(head)
	e := offSQ + int(pos%sqEntries)*sqEntry
	if atomic.LoadUint64(r.u64(e)) != pos+1 {
		return false
	}
	b := r.b[e : e+sqEntry]
	le := binary.LittleEndian
	s.Kind, s.Flags = le.Uint32(b[8:]), le.Uint32(b[12:])
	s.EP, s.Cookie = le.Uint64(b[16:]), le.Uint64(b[24:])
	s.Remote = api.RMRTriplet{Addr: api.VAddr(le.Uint64(b[32:])), Length: le.Uint32(b[40:]), RMRContext: api.RMRContext(le.Uint32(b[44:]))}
	s.Local = api.RMRTriplet{Addr: api.VAddr(le.Uint64(b[48:])), Length: le.Uint32(b[56:]), RMRContext: api.RMRContext(le.Uint32(b[60:]))}
	s.Invalidate, s.InvRMR = le.Uint32(b[64:]) != 0, api.RMRContext(le.Uint32(b[68:]))
	n := min(int(le.Uint32(b[72:])), SQMaxIOV)
	s.IOV = s.IOV[:0]
	for i := 0; i < n; i++ {
		o := 80 + 16*i
		s.IOV = append(s.IOV, api.LMRTriplet{Addr: api.VAddr(le.Uint64(b[o:])), Length: le.Uint32(b[o+8:]), LMRContext: api.LMRContext(le.Uint32(b[o+12:]))})
	}
	atomic.StoreUint64(r.u64(e), pos+sqEntries)
	atomic.StoreUint64(head, pos+1)
	return true
}

// Taken is how many submissions the plugin has Taken.
func (r *Rings) Taken() uint64 { return atomic.LoadUint64(r.u64(offSQHead)) }

// Submitted is how many submissions the host has made (or is making).
func (r *Rings) Submitted() uint64 { return atomic.LoadUint64(r.u64(offSQTail)) }

// --- the completion ring ---

// Record kinds of the completion ring.
const (
	recPad   = 1
	recEvent = 2
)

const (
	recHeader = 120
	recMax    = 64 << 10 // the largest record: private data beyond this is cut
)

// Event is an Event as the completion ring carries it, objects named by id.
type Event struct {
	Seq, EVD             uint64
	Number               api.EventNumber
	Notify, Truncated    bool
	EP, Object           uint64
	Cookie               uint64
	Status               api.DTOStatus
	Length               uint32
	Op                   api.DTOOp
	RMRContext           api.RMRContext
	RMR, PSP, RSP, CR    uint64
	ConnQual             uint64
	ObjectType           api.HandleType
	Reason               int32
	Network, Addr        string
	PrivateData          []byte
	HasAddr, HasPrivData bool
}

// Put appends e to the completion ring, waiting while it is full (wake
// rings the host's doorbell, alive reports whether to keep waiting).
func (r *Rings) Put(e *Event, wake func(), alive func() bool) {
	pd := e.PrivateData
	if len(pd) > recMax-recHeader-len(e.Network)-len(e.Addr)-8 {
		pd = pd[:max(0, recMax-recHeader-len(e.Network)-len(e.Addr)-8)]
	}
	n := (recHeader + len(e.Network) + len(e.Addr) + len(pd) + 7) &^ 7
	tail := r.u64(offCQTail)
	head := r.u64(offCQHead)
	pos := atomic.LoadUint64(tail)
	off := int(pos % cqBytes)
	if off+n > cqBytes { // the record does not fit before the end: pad to it
		pad := cqBytes - off
		r.waitRoom(pos, pad, head, wake, alive)
		binary.LittleEndian.PutUint32(r.b[offCQ+off:], uint32(pad))
		binary.LittleEndian.PutUint32(r.b[offCQ+off+4:], recPad)
		pos += uint64(pad)
		atomic.StoreUint64(tail, pos)
		off = 0
	}
	r.waitRoom(pos, n, head, wake, alive)
	b := r.b[offCQ+off : offCQ+off+n]
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(n))
	le.PutUint32(b[4:], recEvent)
	le.PutUint64(b[8:], e.Seq)
	le.PutUint64(b[16:], e.EVD)
	le.PutUint32(b[24:], uint32(e.Number))
	var fl uint32
	if e.Notify {
		fl |= 1
	}
	if e.Truncated {
		fl |= 2
	}
	if e.HasAddr {
		fl |= 4
	}
	if e.HasPrivData {
		fl |= 8
	}
	le.PutUint32(b[28:], fl)
	le.PutUint64(b[32:], e.EP)
	le.PutUint64(b[40:], e.Cookie)
	le.PutUint32(b[48:], uint32(e.Status))
	le.PutUint32(b[52:], e.Length)
	le.PutUint32(b[56:], uint32(e.Op))
	le.PutUint32(b[60:], uint32(e.RMRContext))
	le.PutUint64(b[64:], e.RMR)
	le.PutUint64(b[72:], e.PSP)
	le.PutUint64(b[80:], e.RSP)
	le.PutUint64(b[88:], e.CR)
	le.PutUint64(b[96:], e.ConnQual)
	le.PutUint32(b[104:], uint32(e.ObjectType))
	le.PutUint32(b[108:], uint32(e.Reason))
	le.PutUint16(b[112:], uint16(len(e.Network)))
	le.PutUint16(b[114:], uint16(len(e.Addr)))
	le.PutUint32(b[116:], uint32(len(pd)))
	copy(b[recHeader:], e.Network)
	copy(b[recHeader+len(e.Network):], e.Addr)
	copy(b[recHeader+len(e.Network)+len(e.Addr):], pd)
	le.PutUint64(b[32:], e.EP)
	if e.Number.Stream() == api.EVDAsync {
		le.PutUint64(b[32:], e.Object)
	}
	atomic.StoreUint64(tail, pos+uint64(n))
}

// waitRoom waits until n bytes from pos are free.
func (r *Rings) waitRoom(pos uint64, n int, head *uint64, wake func(), alive func() bool) {
	for pos+uint64(n)-atomic.LoadUint64(head) > cqBytes {
		wake()
		if !alive() {
			return
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// CQPending reports whether the completion ring has records to read.
func (r *Rings) CQPending() bool {
	return atomic.LoadUint64(r.u64(offCQHead)) != atomic.LoadUint64(r.u64(offCQTail))
}

// errCorrupt is what get reports when the plugin wrote something that is
// not a record: the host then treats the plugin as failed. Nothing the
// plugin writes may make the host read outside the ring.
var errCorrupt = errors.New("the plugin wrote an invalid record on the completion ring")

// Get reads the next record into e, if there is one. The strings and the
// private data are copied only when the record has them.
func (r *Rings) Get(e *Event) (bool, error) {
	head := r.u64(offCQHead)
	for {
		pos := atomic.LoadUint64(head)
		tail := atomic.LoadUint64(r.u64(offCQTail))
		if pos == tail {
			return false, nil
		}
		if tail-pos > cqBytes || pos%8 != 0 {
			return false, errCorrupt // records are 8-byte aligned, so a header fits before the end
		}
		off := int(pos % cqBytes)
		le := binary.LittleEndian
		n := int(le.Uint32(r.b[offCQ+off:]))
		kind := le.Uint32(r.b[offCQ+off+4:])
		if n < 8 || n%8 != 0 || off+n > cqBytes || uint64(n) > tail-pos {
			return false, errCorrupt
		}
		if kind == recPad {
			atomic.StoreUint64(head, pos+uint64(n))
			continue
		}
		if kind != recEvent || n < recHeader {
			return false, errCorrupt
		}
		b := r.b[offCQ+off : offCQ+off+n]
		if nn, na, np := int(le.Uint16(b[112:])), int(le.Uint16(b[114:])), int(le.Uint32(b[116:])); recHeader+nn+na+np > n {
			return false, errCorrupt
		}
		fl := le.Uint32(b[28:])
		*e = Event{
			Seq: le.Uint64(b[8:]), EVD: le.Uint64(b[16:]), Number: api.EventNumber(le.Uint32(b[24:])),
			Notify: fl&1 != 0, Truncated: fl&2 != 0, HasAddr: fl&4 != 0, HasPrivData: fl&8 != 0,
			EP: le.Uint64(b[32:]), Object: le.Uint64(b[32:]), Cookie: le.Uint64(b[40:]),
			Status: api.DTOStatus(le.Uint32(b[48:])), Length: le.Uint32(b[52:]), Op: api.DTOOp(le.Uint32(b[56:])),
			RMRContext: api.RMRContext(le.Uint32(b[60:])), RMR: le.Uint64(b[64:]), PSP: le.Uint64(b[72:]),
			RSP: le.Uint64(b[80:]), CR: le.Uint64(b[88:]), ConnQual: le.Uint64(b[96:]),
			ObjectType: api.HandleType(le.Uint32(b[104:])), Reason: int32(le.Uint32(b[108:])),
		}
		nn, na, np := int(le.Uint16(b[112:])), int(le.Uint16(b[114:])), int(le.Uint32(b[116:]))
		if e.HasAddr {
			e.Network = string(b[recHeader : recHeader+nn])
			e.Addr = string(b[recHeader+nn : recHeader+nn+na])
		}
		if e.HasPrivData {
			e.PrivateData = append([]byte(nil), b[recHeader+nn+na:recHeader+nn+na+np]...)
		}
		atomic.StoreUint64(head, pos+uint64(n))
		return true, nil
	}
}

// --- doorbells ---

// Bell is an eventfd one side blocks on and the other rings. Each Bell
// has one waiter (the host's completion pump, the plugin's submission
// loop), so wait reads into the Bell's own buffer: a buffer on wait's
// stack escapes through os.File.Read in a race build, and the pump would
// allocate on every sleep.
type Bell struct {
	f   *os.File
	fd  int
	buf [8]byte
}

func NewBell() (*Bell, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, err
	}
	return &Bell{f: os.NewFile(uintptr(fd), "godat-plugin-bell"), fd: fd}, nil
}

// BellFromFD adopts a received eventfd.
func BellFromFD(fd int) (*Bell, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, err
	}
	return &Bell{f: os.NewFile(uintptr(fd), "godat-plugin-bell"), fd: fd}, nil
}

var one = [8]byte{1}

// Ring wakes the side blocked in wait.
func (b *Bell) Ring() { unix.Write(b.fd, one[:]) }

// Wait blocks until the bell rings; it fails once the bell is closed.
func (b *Bell) Wait() error {
	_, err := b.f.Read(b.buf[:])
	return err
}

func (b *Bell) Close() error { return b.f.Close() }

// FD is the bell's eventfd, to send to the other side.
func (b *Bell) FD() int { return b.fd }

// SleepOn is the consumer's side of a ring: raise the sleeping word, look
// once more (pending), then block on the bell until the producer rings.
func SleepOn(word *uint32, pending func() bool, b *Bell) error {
	atomic.StoreUint32(word, 1)
	if pending() {
		atomic.StoreUint32(word, 0)
		return nil
	}
	err := b.Wait()
	atomic.StoreUint32(word, 0)
	return err
}

// WakeIf is the producer's side: ring the bell if the consumer sleeps.
func WakeIf(word *uint32, b *Bell) {
	if atomic.LoadUint32(word) != 0 && atomic.CompareAndSwapUint32(word, 1, 0) {
		b.Ring()
	}
}
