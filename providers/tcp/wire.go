package tcp

import (
	"encoding/binary"
	"errors"
)

// The wire format; docs/tcp-wire.md is its specification. Every integer is
// big endian.

// Handshake messages: a fixed part of hsLen bytes, then PDLen bytes of
// private data.
const (
	wireVersion = 2
	hsLen       = 48
	frameLen    = 48
)

var hsMagic = [4]byte{'G', 'D', 'A', 'T'}

// Handshake message types.
const (
	hsHello    = 1 // requester -> listener: attributes, port qualifier, private data
	hsAccept   = 2 // listener -> requester: attributes, private data
	hsReject   = 3 // listener -> requester: the consumer rejected; private data
	hsNonPeer  = 4 // listener -> requester: refused without a consumer decision
	hsReady    = 5 // requester -> listener: ESTABLISHED seen, the connection is up
	hsVersion  = 6 // listener -> requester: unsupported version; Version is the listener's
	hsMaxType  = hsVersion
	hsFlagSRQ  = 1 // the sender's receives come from an SRQ: sends need no credits
	hsFlagMask = hsFlagSRQ
)

// hsMsg is a decoded handshake message.
type hsMsg struct {
	Version      uint16
	Type         uint16
	Flags        uint16
	PDLen        uint16
	MaxMsg       uint32 // largest message the sender accepts
	MaxRDMA      uint32 // largest RDMA transfer the sender serves or accepts
	ReadsIn      uint32 // RDMA reads the sender serves at once
	ReadsOut     uint32 // RDMA reads the sender issues at once
	PortQual     uint64 // hsHello: the requester's port qualifier
	QOS          uint32
	MaxMsgIgnore uint32 // reserved, zero
}

var (
	errBadMagic   = errors.New("tcp handshake: bad magic")
	errBadVersion = errors.New("tcp handshake: unsupported version")
	errBadHS      = errors.New("tcp handshake: malformed message")
)

// encodeHS writes the fixed part of m into b (len(b) >= hsLen).
func encodeHS(b []byte, m *hsMsg) {
	_ = b[hsLen-1]
	copy(b[0:4], hsMagic[:])
	binary.BigEndian.PutUint16(b[4:], m.Version)
	binary.BigEndian.PutUint16(b[6:], m.Type)
	binary.BigEndian.PutUint16(b[8:], m.Flags)
	binary.BigEndian.PutUint16(b[10:], m.PDLen)
	binary.BigEndian.PutUint32(b[12:], m.MaxMsg)
	binary.BigEndian.PutUint32(b[16:], m.MaxRDMA)
	binary.BigEndian.PutUint32(b[20:], m.ReadsIn)
	binary.BigEndian.PutUint32(b[24:], m.ReadsOut)
	binary.BigEndian.PutUint64(b[28:], m.PortQual)
	binary.BigEndian.PutUint32(b[36:], m.QOS)
	binary.BigEndian.PutUint32(b[40:], 0)
	binary.BigEndian.PutUint32(b[44:], 0)
}

// decodeHS reads the fixed part of a handshake message and checks it:
// magic, version, type, flags and a private data length of at most maxPD.
// A version other than wireVersion is errBadVersion with the rest of m
// decoded, so that a listener can answer hsVersion.
func decodeHS(b []byte, maxPD int) (hsMsg, error) {
	var m hsMsg
	if len(b) < hsLen {
		return m, errBadHS
	}
	if [4]byte(b[0:4]) != hsMagic {
		return m, errBadMagic
	}
	m.Version = binary.BigEndian.Uint16(b[4:])
	m.Type = binary.BigEndian.Uint16(b[6:])
	m.Flags = binary.BigEndian.Uint16(b[8:])
	m.PDLen = binary.BigEndian.Uint16(b[10:])
	m.MaxMsg = binary.BigEndian.Uint32(b[12:])
	m.MaxRDMA = binary.BigEndian.Uint32(b[16:])
	m.ReadsIn = binary.BigEndian.Uint32(b[20:])
	m.ReadsOut = binary.BigEndian.Uint32(b[24:])
	m.PortQual = binary.BigEndian.Uint64(b[28:])
	m.QOS = binary.BigEndian.Uint32(b[36:])
	if m.Version != wireVersion {
		return m, errBadVersion
	}
	if m.Type < hsHello || m.Type > hsMaxType || m.Flags&^hsFlagMask != 0 || int(m.PDLen) > maxPD ||
		binary.BigEndian.Uint32(b[40:]) != 0 || binary.BigEndian.Uint32(b[44:]) != 0 {
		return m, errBadHS
	}
	if (m.Type == hsReady || m.Type == hsNonPeer || m.Type == hsVersion) && m.PDLen != 0 {
		return m, errBadHS
	}
	return m, nil
}

// Data frame types.
const (
	frSend     = 1 // a message for the peer's next receive
	frSendInv  = 2 // a message that also invalidates the peer's RMR RKey
	frWrite    = 3 // RDMA write of Len bytes at Addr of window RKey
	frReadReq  = 4 // RDMA read request of RLen bytes at Addr of window RKey
	frReadResp = 5 // the RLen bytes of read request Seq
	frAck      = 6 // nothing but the ACK its header carries (frFlagAck)
	frNak      = 7 // request Seq failed with DTO status Status; the connection ends
	frDisc     = 8 // the sender disconnects
	frMaxType  = frDisc

	frFlagSolicited = 1 // SEND, SEND_INV: the message is solicited
	frFlagAck       = 2 // Ack and Credits hold the sender's acknowledgement
	frFlagMask      = frFlagSolicited | frFlagAck
)

// frame is a decoded frame header.
type frame struct {
	Type   uint8
	Flags  uint8
	Status uint16
	Len    uint32 // payload bytes that follow the header
	Seq    uint64
	Addr   uint64
	RKey   uint32
	RLen   uint32
	// With frFlagAck: every request up to Ack is placed at the sender,
	// which has posted Credits receives on the connection; applied once
	// the frame itself is processed. Zero without the flag.
	Ack     uint64
	Credits uint64
}

// encodeFrame writes f into b (len(b) >= frameLen).
func encodeFrame(b []byte, f *frame) {
	_ = b[frameLen-1]
	b[0] = f.Type
	b[1] = f.Flags
	binary.BigEndian.PutUint16(b[2:], f.Status)
	binary.BigEndian.PutUint32(b[4:], f.Len)
	binary.BigEndian.PutUint64(b[8:], f.Seq)
	binary.BigEndian.PutUint64(b[16:], f.Addr)
	binary.BigEndian.PutUint32(b[24:], f.RKey)
	binary.BigEndian.PutUint32(b[28:], f.RLen)
	putAck(b, f.Flags&frFlagAck != 0, f.Ack, f.Credits)
}

// putAck writes an acknowledgement into the encoded header b (len(b) >=
// frameLen): the ACK flag and fields when on, zero fields when off.
func putAck(b []byte, on bool, ack, credits uint64) {
	_ = b[frameLen-1]
	if on {
		b[1] |= frFlagAck
	} else {
		b[1] &^= frFlagAck
		ack, credits = 0, 0
	}
	binary.BigEndian.PutUint64(b[32:], ack)
	binary.BigEndian.PutUint64(b[40:], credits)
}

// limits bounds what a decoded frame may ask of the receiver.
type limits struct {
	maxMsg  uint32 // SEND payload
	maxRDMA uint32 // WRITE payload, READ_REQ length
}

var errBadFrame = errors.New("tcp: malformed frame")

// decodeFrame reads a frame header and checks it against lim: a known
// type, known flags, and a payload length the type allows and the limits
// admit. Nothing is read or allocated on the strength of a length that
// fails these checks.
func decodeFrame(b []byte, lim *limits) (frame, error) {
	var f frame
	if len(b) < frameLen {
		return f, errBadFrame
	}
	f.Type = b[0]
	f.Flags = b[1]
	f.Status = binary.BigEndian.Uint16(b[2:])
	f.Len = binary.BigEndian.Uint32(b[4:])
	f.Seq = binary.BigEndian.Uint64(b[8:])
	f.Addr = binary.BigEndian.Uint64(b[16:])
	f.RKey = binary.BigEndian.Uint32(b[24:])
	f.RLen = binary.BigEndian.Uint32(b[28:])
	f.Ack = binary.BigEndian.Uint64(b[32:])
	f.Credits = binary.BigEndian.Uint64(b[40:])
	if f.Type < frSend || f.Type > frMaxType || f.Flags&^frFlagMask != 0 {
		return f, errBadFrame
	}
	if f.Flags&frFlagAck == 0 {
		if f.Ack != 0 || f.Credits != 0 || f.Type == frAck {
			return f, errBadFrame
		}
	} else if f.Type == frNak || f.Type == frDisc {
		return f, errBadFrame
	}
	ok := true
	switch f.Type {
	case frSend, frSendInv:
		ok = f.Len <= lim.maxMsg && f.Status == 0
	case frWrite:
		ok = f.Len <= lim.maxRDMA && f.Status == 0
	case frReadReq:
		ok = f.Len == 0 && f.RLen <= lim.maxRDMA && f.Status == 0
	case frReadResp:
		ok = f.Len <= lim.maxRDMA && f.Status == 0
	case frAck, frDisc:
		ok = f.Len == 0 && f.Status == 0
	case frNak:
		ok = f.Len == 0 && f.Status != 0 && f.Status <= maxDTOStatus
	}
	if !ok {
		return f, errBadFrame
	}
	return f, nil
}

// maxDTOStatus is the largest DTO status a NAK may carry (RMR_OPERATION_FAILED).
const maxDTOStatus = 11
