package plugin

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
	sqMaxIOV  = 7
	cqBytes   = 1 << 20 // a power of two
	shmSize   = shmHeader + sqEntries*sqEntry + cqBytes

	offSQTail     = 0
	offSQHead     = 64
	offSQSleeping = 128
	offCQTail     = 192
	offCQHead     = 256
	offCQSleeping = 320

	offSQ = shmHeader
	offCQ = shmHeader + sqEntries*sqEntry
)

// Submission kinds.
const (
	subSend = iota + 1
	subSendInv
	subRecv
	subWrite
	subRead
	subReadToRMR
)

// rings is one side's view of the shared region.
type rings struct {
	b    []byte
	base unsafe.Pointer
}

func newRings(b []byte) *rings { return &rings{b: b, base: unsafe.Pointer(unsafe.SliceData(b))} }

func (r *rings) u64(off int) *uint64 { return (*uint64)(unsafe.Add(r.base, off)) }
func (r *rings) u32(off int) *uint32 { return (*uint32)(unsafe.Add(r.base, off)) }

// sqInit gives every submission entry its first sequence number.
func (r *rings) sqInit() {
	for i := 0; i < sqEntries; i++ {
		atomic.StoreUint64(r.u64(offSQ+i*sqEntry), uint64(i))
	}
}

// submission is a post as the ring carries it.
type submission struct {
	kind, flags uint32
	ep, cookie  uint64
	remote      api.RMRTriplet
	local       api.RMRTriplet // PostRDMAReadToRMR
	invalidate  bool
	invRMR      api.RMRContext
	iov         []api.LMRTriplet
}

// submit puts s on the submission ring and returns the number of
// submissions made so far. It reports false, having submitted nothing, if
// the ring stays full for a while or the plugin died (dead says so): the
// caller then posts by a call, which waits its turn in the plugin.
func (r *rings) submit(s *submission, dead func() bool) (uint64, bool) {
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

func (r *rings) writeSub(e int, s *submission) {
	b := r.b[e : e+sqEntry]
	le := binary.LittleEndian
	le.PutUint32(b[8:], s.kind)
	le.PutUint32(b[12:], s.flags)
	le.PutUint64(b[16:], s.ep)
	le.PutUint64(b[24:], s.cookie)
	le.PutUint64(b[32:], uint64(s.remote.Addr))
	le.PutUint32(b[40:], s.remote.Length)
	le.PutUint32(b[44:], uint32(s.remote.RMRContext))
	le.PutUint64(b[48:], uint64(s.local.Addr))
	le.PutUint32(b[56:], s.local.Length)
	le.PutUint32(b[60:], uint32(s.local.RMRContext))
	var inv uint32
	if s.invalidate {
		inv = 1
	}
	le.PutUint32(b[64:], inv)
	le.PutUint32(b[68:], uint32(s.invRMR))
	le.PutUint32(b[72:], uint32(len(s.iov)))
	for i, t := range s.iov {
		o := 80 + 16*i
		le.PutUint64(b[o:], uint64(t.Addr))
		le.PutUint32(b[o+8:], t.Length)
		le.PutUint32(b[o+12:], uint32(t.LMRContext))
	}
}

// take reads the next submission into s (reusing s.iov), if there is one.
func (r *rings) take(s *submission) bool {
	head := r.u64(offSQHead)
	pos := atomic.LoadUint64(head)
	e := offSQ + int(pos%sqEntries)*sqEntry
	if atomic.LoadUint64(r.u64(e)) != pos+1 {
		return false
	}
	b := r.b[e : e+sqEntry]
	le := binary.LittleEndian
	s.kind, s.flags = le.Uint32(b[8:]), le.Uint32(b[12:])
	s.ep, s.cookie = le.Uint64(b[16:]), le.Uint64(b[24:])
	s.remote = api.RMRTriplet{Addr: api.VAddr(le.Uint64(b[32:])), Length: le.Uint32(b[40:]), RMRContext: api.RMRContext(le.Uint32(b[44:]))}
	s.local = api.RMRTriplet{Addr: api.VAddr(le.Uint64(b[48:])), Length: le.Uint32(b[56:]), RMRContext: api.RMRContext(le.Uint32(b[60:]))}
	s.invalidate, s.invRMR = le.Uint32(b[64:]) != 0, api.RMRContext(le.Uint32(b[68:]))
	n := min(int(le.Uint32(b[72:])), sqMaxIOV)
	s.iov = s.iov[:0]
	for i := 0; i < n; i++ {
		o := 80 + 16*i
		s.iov = append(s.iov, api.LMRTriplet{Addr: api.VAddr(le.Uint64(b[o:])), Length: le.Uint32(b[o+8:]), LMRContext: api.LMRContext(le.Uint32(b[o+12:]))})
	}
	atomic.StoreUint64(r.u64(e), pos+sqEntries)
	atomic.StoreUint64(head, pos+1)
	return true
}

// taken is how many submissions the plugin has taken.
func (r *rings) taken() uint64 { return atomic.LoadUint64(r.u64(offSQHead)) }

// submitted is how many submissions the host has made (or is making).
func (r *rings) submitted() uint64 { return atomic.LoadUint64(r.u64(offSQTail)) }

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

// event is an event as the completion ring carries it, objects named by id.
type event struct {
	seq, evd             uint64
	number               api.EventNumber
	notify, truncated    bool
	ep, object           uint64
	cookie               uint64
	status               api.DTOStatus
	length               uint32
	op                   api.DTOOp
	rmrContext           api.RMRContext
	rmr, psp, rsp, cr    uint64
	connQual             uint64
	objectType           api.HandleType
	reason               int32
	network, addr        string
	privateData          []byte
	hasAddr, hasPrivData bool
}

// put appends e to the completion ring, waiting while it is full (wake
// rings the host's doorbell, alive reports whether to keep waiting).
func (r *rings) put(e *event, wake func(), alive func() bool) {
	pd := e.privateData
	if len(pd) > recMax-recHeader-len(e.network)-len(e.addr)-8 {
		pd = pd[:max(0, recMax-recHeader-len(e.network)-len(e.addr)-8)]
	}
	n := (recHeader + len(e.network) + len(e.addr) + len(pd) + 7) &^ 7
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
	le.PutUint64(b[8:], e.seq)
	le.PutUint64(b[16:], e.evd)
	le.PutUint32(b[24:], uint32(e.number))
	var fl uint32
	if e.notify {
		fl |= 1
	}
	if e.truncated {
		fl |= 2
	}
	if e.hasAddr {
		fl |= 4
	}
	if e.hasPrivData {
		fl |= 8
	}
	le.PutUint32(b[28:], fl)
	le.PutUint64(b[32:], e.ep)
	le.PutUint64(b[40:], e.cookie)
	le.PutUint32(b[48:], uint32(e.status))
	le.PutUint32(b[52:], e.length)
	le.PutUint32(b[56:], uint32(e.op))
	le.PutUint32(b[60:], uint32(e.rmrContext))
	le.PutUint64(b[64:], e.rmr)
	le.PutUint64(b[72:], e.psp)
	le.PutUint64(b[80:], e.rsp)
	le.PutUint64(b[88:], e.cr)
	le.PutUint64(b[96:], e.connQual)
	le.PutUint32(b[104:], uint32(e.objectType))
	le.PutUint32(b[108:], uint32(e.reason))
	le.PutUint16(b[112:], uint16(len(e.network)))
	le.PutUint16(b[114:], uint16(len(e.addr)))
	le.PutUint32(b[116:], uint32(len(pd)))
	copy(b[recHeader:], e.network)
	copy(b[recHeader+len(e.network):], e.addr)
	copy(b[recHeader+len(e.network)+len(e.addr):], pd)
	le.PutUint64(b[32:], e.ep)
	if e.number.Stream() == api.EVDAsync {
		le.PutUint64(b[32:], e.object)
	}
	atomic.StoreUint64(tail, pos+uint64(n))
}

// waitRoom waits until n bytes from pos are free.
func (r *rings) waitRoom(pos uint64, n int, head *uint64, wake func(), alive func() bool) {
	for pos+uint64(n)-atomic.LoadUint64(head) > cqBytes {
		wake()
		if !alive() {
			return
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// cqPending reports whether the completion ring has records to read.
func (r *rings) cqPending() bool {
	return atomic.LoadUint64(r.u64(offCQHead)) != atomic.LoadUint64(r.u64(offCQTail))
}

// errCorrupt is what get reports when the plugin wrote something that is
// not a record: the host then treats the plugin as failed. Nothing the
// plugin writes may make the host read outside the ring.
var errCorrupt = errors.New("the plugin wrote an invalid record on the completion ring")

// get reads the next record into e, if there is one. The strings and the
// private data are copied only when the record has them.
func (r *rings) get(e *event) (bool, error) {
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
		*e = event{
			seq: le.Uint64(b[8:]), evd: le.Uint64(b[16:]), number: api.EventNumber(le.Uint32(b[24:])),
			notify: fl&1 != 0, truncated: fl&2 != 0, hasAddr: fl&4 != 0, hasPrivData: fl&8 != 0,
			ep: le.Uint64(b[32:]), object: le.Uint64(b[32:]), cookie: le.Uint64(b[40:]),
			status: api.DTOStatus(le.Uint32(b[48:])), length: le.Uint32(b[52:]), op: api.DTOOp(le.Uint32(b[56:])),
			rmrContext: api.RMRContext(le.Uint32(b[60:])), rmr: le.Uint64(b[64:]), psp: le.Uint64(b[72:]),
			rsp: le.Uint64(b[80:]), cr: le.Uint64(b[88:]), connQual: le.Uint64(b[96:]),
			objectType: api.HandleType(le.Uint32(b[104:])), reason: int32(le.Uint32(b[108:])),
		}
		nn, na, np := int(le.Uint16(b[112:])), int(le.Uint16(b[114:])), int(le.Uint32(b[116:]))
		if e.hasAddr {
			e.network = string(b[recHeader : recHeader+nn])
			e.addr = string(b[recHeader+nn : recHeader+nn+na])
		}
		if e.hasPrivData {
			e.privateData = append([]byte(nil), b[recHeader+nn+na:recHeader+nn+na+np]...)
		}
		atomic.StoreUint64(head, pos+uint64(n))
		return true, nil
	}
}

// --- doorbells ---

// bell is an eventfd one side blocks on and the other rings. Each bell
// has one waiter (the host's completion pump, the plugin's submission
// loop), so wait reads into the bell's own buffer: a buffer on wait's
// stack escapes through os.File.Read in a race build, and the pump would
// allocate on every sleep.
type bell struct {
	f   *os.File
	fd  int
	buf [8]byte
}

func newBell() (*bell, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, err
	}
	return &bell{f: os.NewFile(uintptr(fd), "godat-plugin-bell"), fd: fd}, nil
}

// bellFromFD adopts a received eventfd.
func bellFromFD(fd int) (*bell, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, err
	}
	return &bell{f: os.NewFile(uintptr(fd), "godat-plugin-bell"), fd: fd}, nil
}

var one = [8]byte{1}

// ring wakes the side blocked in wait.
func (b *bell) ring() { unix.Write(b.fd, one[:]) }

// wait blocks until the bell rings; it fails once the bell is closed.
func (b *bell) wait() error {
	_, err := b.f.Read(b.buf[:])
	return err
}

func (b *bell) close() error { return b.f.Close() }

// sleepOn is the consumer's side of a ring: raise the sleeping word, look
// once more (pending), then block on the bell until the producer rings.
func sleepOn(word *uint32, pending func() bool, b *bell) error {
	atomic.StoreUint32(word, 1)
	if pending() {
		atomic.StoreUint32(word, 0)
		return nil
	}
	err := b.wait()
	atomic.StoreUint32(word, 0)
	return err
}

// wakeIf is the producer's side: ring the bell if the consumer sleeps.
func wakeIf(word *uint32, b *bell) {
	if atomic.LoadUint32(word) != 0 && atomic.CompareAndSwapUint32(word, 1, 0) {
		b.ring()
	}
}
