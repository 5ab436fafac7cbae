package tcp

import (
	"bytes"
	"testing"
)

// FuzzDecodeFrame feeds arbitrary bytes to the frame decoder: it must not
// panic, must accept only frames within the limits, and what it accepts
// must encode back to the same header.
func FuzzDecodeFrame(f *testing.F) {
	for _, fr := range []frame{
		{Type: frSend, Len: 100, Seq: 1, Flags: frFlagSolicited},
		{Type: frSendInv, Len: 0, Seq: 2, RKey: 0xdead},
		{Type: frWrite, Len: 4096, Seq: 3, Addr: 0x7f00_0000_1000, RKey: 7},
		{Type: frReadReq, Seq: 4, Addr: 1, RKey: 2, RLen: 64},
		{Type: frReadResp, Seq: 4, Len: 64},
		{Type: frAck, Flags: frFlagAck, Ack: 4, Credits: 16},
		{Type: frSend, Len: 64, Seq: 5, Flags: frFlagSolicited | frFlagAck, Ack: 3, Credits: 9},
		{Type: frReadResp, Seq: 6, Len: 8, Flags: frFlagAck, Ack: 7, Credits: 9},
		{Type: frNak, Seq: 5, Status: 6},
		{Type: frDisc},
	} {
		b := make([]byte, frameLen)
		encodeFrame(b, &fr)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, frameLen))
	lim := limits{maxMsg: 1 << 20, maxRDMA: 1 << 16}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := decodeFrame(b, &lim)
		if err != nil {
			return
		}
		switch fr.Type {
		case frSend, frSendInv:
			if fr.Len > lim.maxMsg {
				t.Fatalf("accepted a message of %d bytes", fr.Len)
			}
		case frWrite, frReadResp:
			if fr.Len > lim.maxRDMA {
				t.Fatalf("accepted an RDMA payload of %d bytes", fr.Len)
			}
		case frReadReq:
			if fr.RLen > lim.maxRDMA || fr.Len != 0 {
				t.Fatalf("accepted a read of %d bytes with %d payload bytes", fr.RLen, fr.Len)
			}
		default:
			if fr.Len != 0 {
				t.Fatalf("accepted a %d-byte payload on frame type %d", fr.Len, fr.Type)
			}
		}
		out := make([]byte, frameLen)
		encodeFrame(out, &fr)
		if !bytes.Equal(out, b[:frameLen]) {
			t.Fatalf("re-encoding gives %x, input %x", out, b[:frameLen])
		}
	})
}

// FuzzDecodeHandshake feeds arbitrary bytes to the handshake decoder: it
// must not panic, must bound the private data length, and what it accepts
// must encode back to the same fixed part.
func FuzzDecodeHandshake(f *testing.F) {
	for _, m := range []hsMsg{
		{Version: wireVersion, Type: hsHello, PDLen: 10, MaxMsg: 1 << 30, MaxRDMA: 1 << 30, ReadsIn: 16, ReadsOut: 16, PortQual: 1<<32 + 1},
		{Version: wireVersion, Type: hsAccept, Flags: hsFlagSRQ, PDLen: 1024, MaxMsg: 64, MaxRDMA: 64, ReadsIn: 1, ReadsOut: 1, PortQual: 4791},
		{Version: wireVersion, Type: hsReject, PDLen: 3},
		{Version: wireVersion, Type: hsReady},
		{Version: 2, Type: hsHello},
	} {
		b := make([]byte, hsLen)
		encodeHS(b, &m)
		f.Add(b)
	}
	f.Add([]byte("GDAT"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeHS(b, maxPrivateData)
		if err != nil {
			return
		}
		if int(m.PDLen) > providerLimits.MaxPrivateData || m.Version != wireVersion || m.Type < hsHello || m.Type > hsMaxType {
			t.Fatalf("accepted %+v", m)
		}
		out := make([]byte, hsLen)
		encodeHS(out, &m)
		if !bytes.Equal(out, b[:hsLen]) {
			t.Fatalf("re-encoding gives %x, input %x", out, b[:hsLen])
		}
	})
}
