package datnet

import (
	"encoding/binary"
	"fmt"
)

// The stream's wire format, inside DAT messages. Every message starts with
// an 8-byte header; the connection's private data carries a hello.
//
//	header: credits uint32 (receive buffers the sender has posted again since
//	        its last header), flags uint8, 3 bytes zero, then the payload
//	hello:  magic "gdn1", version uint16, 2 bytes zero, buffers uint32,
//	        buffer size uint32 (the receive side the sender posted)
//
// All integers are little-endian.
const (
	headerLen = 8
	helloLen  = 16

	flagFIN = 0x01 // no more payload follows from the sender (CloseWrite)

	wireVersion = 1
)

var helloMagic = [4]byte{'g', 'd', 'n', '1'}

func putHeader(b []byte, credits uint32, flags uint8) {
	binary.LittleEndian.PutUint32(b[0:4], credits)
	b[4], b[5], b[6], b[7] = flags, 0, 0, 0
}

func parseHeader(b []byte) (credits uint32, flags uint8) {
	return binary.LittleEndian.Uint32(b[0:4]), b[4]
}

// hello is what each side tells the other about its receive buffers.
type hello struct {
	buffers int
	size    int
}

func (h hello) marshal() []byte {
	b := make([]byte, helloLen)
	copy(b, helloMagic[:])
	binary.LittleEndian.PutUint16(b[4:6], wireVersion)
	binary.LittleEndian.PutUint32(b[8:12], uint32(h.buffers))
	binary.LittleEndian.PutUint32(b[12:16], uint32(h.size))
	return b
}

// parseHello checks a peer's hello: a stream needs at least minBuffers
// receive buffers on each side and room for a header and one byte of
// payload in each.
func parseHello(b []byte) (hello, error) {
	if len(b) < helloLen || [4]byte(b[0:4]) != helloMagic {
		return hello{}, fmt.Errorf("the peer is not a datnet stream (private data %q)", b)
	}
	if v := binary.LittleEndian.Uint16(b[4:6]); v != wireVersion {
		return hello{}, fmt.Errorf("the peer speaks datnet version %d, this side %d", v, wireVersion)
	}
	h := hello{
		buffers: int(binary.LittleEndian.Uint32(b[8:12])),
		size:    int(binary.LittleEndian.Uint32(b[12:16])),
	}
	if h.buffers < minBuffers || h.buffers > maxBuffers || h.size <= headerLen || h.size > maxBufferSize {
		return hello{}, fmt.Errorf("the peer's receive buffers (%d of %d bytes) are out of range", h.buffers, h.size)
	}
	return h, nil
}
