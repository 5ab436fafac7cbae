package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// The control messages of dattest (see the package documentation for the
// layout): a header of magic, kind and field count, then tag-length-value
// fields. Integers are little endian; integer fields are 8 bytes.

// msgMagic opens every control message and private-data block: "GDT" and
// the protocol version '1'.
var msgMagic = [4]byte{'G', 'D', 'T', '1'}

const (
	msgHeaderLen = 8
	fieldHdrLen  = 4
	// ctrlSize bounds a control message; every control receive buffer has
	// at least this size.
	ctrlSize = 64 << 10
	// replyBit marks a reply: the kind of the request with this bit set.
	replyBit = 0x8000
)

// Message kinds.
const (
	kindHello   uint16 = 1  // client → server, connect private data
	kindWelcome uint16 = 2  // server → client, accept private data
	kindReject  uint16 = 3  // server → client, reject private data
	kindPing    uint16 = 10 // payload check, both directions
	kindWindow  uint16 = 11 // ask for the server's RDMA window
	kindVerify  uint16 = 12 // server: check window bytes against a pattern
	kindFill    uint16 = 13 // server: fill window bytes with a pattern
	kindBind    uint16 = 14 // server: bind an RMR over part of the window
	kindUnbind  uint16 = 15 // server: unbind that RMR
	kindIOVPrep uint16 = 16 // server: post the next receive as several segments
	kindIOVData uint16 = 17 // payload check through multi-segment IOVs
	kindLat     uint16 = 20 // server: the next count messages are pings
	kindWLat    uint16 = 21 // server: answer count RDMA-write pings with RDMA-write pongs
	kindSync    uint16 = 22 // round trip; all earlier RDMA writes are placed
)

var kindNames = map[uint16]string{
	kindHello: "HELLO", kindWelcome: "WELCOME", kindReject: "REJECT", kindPing: "PING",
	kindWindow: "WINDOW", kindVerify: "VERIFY", kindFill: "FILL", kindBind: "BIND",
	kindUnbind: "UNBIND", kindIOVPrep: "IOV_PREP", kindIOVData: "IOV_DATA", kindLat: "BENCH_LAT",
	kindWLat: "BENCH_WLAT", kindSync: "SYNC",
}

func kindName(k uint16) string {
	s, ok := kindNames[k&^replyBit]
	if !ok {
		s = fmt.Sprintf("kind(%d)", k&^replyBit)
	}
	if k&replyBit != 0 {
		s += " reply"
	}
	return s
}

// Field tags.
const (
	tagNonce    uint16 = 1  // u64: the client's session nonce
	tagSession  uint16 = 2  // u64: sessionCheck, sessionBench, sessionStale
	tagStatus   uint16 = 3  // u64: 0 success, else failure (tagText says why)
	tagText     uint16 = 4  // bytes: a message for people
	tagAddr     uint16 = 5  // u64: a DAT virtual address
	tagLength   uint16 = 6  // u64: a length in bytes
	tagRMR      uint16 = 7  // u64: an RMR context
	tagSeed     uint16 = 8  // u64: the seed of a byte pattern
	tagOffset   uint16 = 9  // u64: an offset into the server's window
	tagCount    uint16 = 11 // u64: a number of iterations or segments
	tagRawPort  uint16 = 12 // u64: the server's raw TCP baseline port
	tagPayload  uint16 = 13 // bytes: pattern bytes to verify
	tagPoll     uint16 = 15 // u64: 1 = busy-poll, 0 = wait
	tagMaxSize  uint16 = 16 // u64: the largest benchmark message the client will use
	tagReadsIn  uint16 = 17 // u64: RDMA reads the server's EP serves at once (its MaxRDMAReadIn)
	tagWLatMode uint16 = 18 // u64: an RDMA-write ping-pong's wlatMode (0 when absent)
	tagIdle     uint16 = 19 // u64: the server's idle timeout in milliseconds (0: none)
)

// Session kinds (the tagSession field of HELLO).
const (
	sessionCheck = 1 // the validated sequence
	sessionBench = 2 // benchmarks
	sessionStale = 3 // the stale RMR context check, which breaks its connection
)

// msg is a decoded control message.
type msg struct {
	kind   uint16
	fields []field
}

type field struct {
	tag uint16
	val []byte
}

func newMsg(kind uint16) *msg { return &msg{kind: kind} }

// u64 appends an integer field.
func (m *msg) u64(tag uint16, v uint64) *msg {
	m.fields = append(m.fields, field{tag, binary.LittleEndian.AppendUint64(nil, v)})
	return m
}

// bytes appends a byte-string field.
func (m *msg) bytes(tag uint16, b []byte) *msg {
	m.fields = append(m.fields, field{tag, slices.Clone(b)})
	return m
}

// text appends a text field.
func (m *msg) text(tag uint16, s string) *msg { return m.bytes(tag, []byte(s)) }

// size is the encoded length of m.
func (m *msg) size() int {
	n := msgHeaderLen
	for _, f := range m.fields {
		n += fieldHdrLen + len(f.val)
	}
	return n
}

// encode writes m into b and returns its length; b must hold m.size() bytes.
func (m *msg) encode(b []byte) (int, error) {
	n := m.size()
	if n > len(b) {
		return 0, fmt.Errorf("%s message of %d bytes does not fit a %d-byte buffer", kindName(m.kind), n, len(b))
	}
	copy(b, msgMagic[:])
	binary.LittleEndian.PutUint16(b[4:], m.kind)
	binary.LittleEndian.PutUint16(b[6:], uint16(len(m.fields)))
	off := msgHeaderLen
	for _, f := range m.fields {
		binary.LittleEndian.PutUint16(b[off:], f.tag)
		binary.LittleEndian.PutUint16(b[off+2:], uint16(len(f.val)))
		off += fieldHdrLen + copy(b[off+fieldHdrLen:], f.val)
	}
	return off, nil
}

// marshal returns m encoded in a new slice.
func (m *msg) marshal() []byte {
	b := make([]byte, m.size())
	m.encode(b)
	return b
}

var errNotMsg = errors.New("not a dattest message")

// decode parses b, copying the field values (b may be reused afterwards).
func decode(b []byte) (*msg, error) {
	if len(b) < msgHeaderLen || [4]byte(b[:4]) != msgMagic {
		return nil, errNotMsg
	}
	m := &msg{kind: binary.LittleEndian.Uint16(b[4:])}
	n := int(binary.LittleEndian.Uint16(b[6:]))
	off := msgHeaderLen
	for i := 0; i < n; i++ {
		if off+fieldHdrLen > len(b) {
			return nil, fmt.Errorf("%s message truncated in field %d", kindName(m.kind), i)
		}
		tag := binary.LittleEndian.Uint16(b[off:])
		l := int(binary.LittleEndian.Uint16(b[off+2:]))
		off += fieldHdrLen
		if off+l > len(b) {
			return nil, fmt.Errorf("%s message truncated in field %d (tag %d)", kindName(m.kind), i, tag)
		}
		m.fields = append(m.fields, field{tag, slices.Clone(b[off : off+l])})
		off += l
	}
	return m, nil
}

func (m *msg) find(tag uint16) ([]byte, bool) {
	for _, f := range m.fields {
		if f.tag == tag {
			return f.val, true
		}
	}
	return nil, false
}

// get returns an integer field, or an error naming what is missing.
func (m *msg) get(tag uint16) (uint64, error) {
	v, ok := m.find(tag)
	if !ok || len(v) != 8 {
		return 0, fmt.Errorf("%s message lacks integer field %d", kindName(m.kind), tag)
	}
	return binary.LittleEndian.Uint64(v), nil
}

// getOr returns an integer field, or def when it is absent or malformed.
func (m *msg) getOr(tag uint16, def uint64) uint64 {
	v, err := m.get(tag)
	if err != nil {
		return def
	}
	return v
}

// status returns nil for a successful reply and the peer's explanation
// otherwise.
func (m *msg) status() error {
	st, err := m.get(tagStatus)
	if err != nil {
		return err
	}
	if st == 0 {
		return nil
	}
	t, _ := m.find(tagText)
	return fmt.Errorf("server: %s", t)
}

// reply returns a successful reply to a request of kind k.
func reply(k uint16) *msg { return newMsg(k|replyBit).u64(tagStatus, 0) }

// failure returns a failed reply to a request of kind k.
func failure(k uint16, format string, a ...any) *msg {
	return newMsg(k|replyBit).u64(tagStatus, 1).text(tagText, fmt.Sprintf(format, a...))
}

// fillPattern fills b with the byte pattern of seed: a cheap generator
// whose bytes depend on both the seed and the position, so misplaced or
// shifted data shows.
func fillPattern(b []byte, seed uint64) {
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x >> 24)
	}
}

// checkPattern returns -1 if b holds the pattern of seed, else the offset
// of the first wrong byte.
func checkPattern(b []byte, seed uint64) int {
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		if b[i] != byte(x>>24) {
			return i
		}
	}
	return -1
}
