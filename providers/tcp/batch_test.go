package tcp

import (
	"bytes"
	"io"
	"net"
	"slices"
	"testing"
)

// batchFrames runs batch on a connection that owes the ACK of request 7
// and 3 credits, with the given frames queued, and decodes what it would
// write: the frame headers, in order, of the byte stream that wvec holds.
// It checks that each payload is in the stream whole, and that a payload
// longer than inlineMax is a slice of its own memory (not a copy).
func batchFrames(t *testing.T, queued ...frame) []frame {
	t.Helper()
	c := newConn(&ia{})
	c.placed, c.recvPosted = 7, 3
	payloads := make([][]byte, len(queued))
	for i := range queued {
		f := &queued[i]
		var segs [][]byte
		if f.Len > 0 {
			payloads[i] = make([]byte, f.Len)
			for k := range payloads[i] {
				payloads[i][k] = byte(i*31 + k)
			}
			segs = [][]byte{payloads[i]}
		}
		c.deferWake++ // (no writer to wake)
		c.enqueue(f, segs)
		if f.Type == frReadResp {
			c.respQueued++
		}
	}
	c.batch()
	var stream []byte
	for _, b := range c.wvec {
		stream = append(stream, b...)
	}
	lim := limits{maxMsg: 1 << 20, maxRDMA: 1 << 20}
	var out []frame
	for len(stream) > 0 {
		f, err := decodeFrame(stream, &lim)
		if err != nil {
			t.Fatalf("batch wrote a malformed header %x: %v", stream[:min(len(stream), frameLen)], err)
		}
		stream = stream[frameLen:]
		if uint32(len(stream)) < f.Len {
			t.Fatalf("frame %+v: %d payload bytes left in the batch", f, len(stream))
		}
		if f.Type != frAck {
			i := len(out) - countAcks(out)
			if i >= len(queued) || !bytes.Equal(stream[:f.Len], payloads[i]) {
				t.Fatalf("frame %+v: the payload is not the one queued", f)
			}
			if f.Len > inlineMax && !sharesMemory(c.wvec, payloads[i]) {
				t.Fatalf("frame %+v: a %d-byte payload was copied", f, f.Len)
			}
		}
		stream = stream[f.Len:]
		out = append(out, f)
	}
	if c.ackDue() {
		t.Fatalf("the ACK is still owed after a batch of %d frames", len(queued))
	}
	return out
}

func countAcks(fs []frame) (n int) {
	for _, f := range fs {
		if f.Type == frAck {
			n++
		}
	}
	return n
}

// sharesMemory reports whether one of bufs starts where p does.
func sharesMemory(bufs [][]byte, p []byte) bool {
	for _, b := range bufs {
		if len(b) > 0 && &b[0] == &p[0] {
			return true
		}
	}
	return false
}

// TestBatchCarriesAck checks where a batch puts the ACK owed: in the
// first frame's header when that one is short, in an ACK frame ahead of a
// long one, and on the last frame when a READ_RESP is queued.
func TestBatchCarriesAck(t *testing.T) {
	acked := func(f frame) bool { return f.Flags&frFlagAck != 0 && f.Ack == 7 && f.Credits == 3 }
	for _, tc := range []struct {
		name   string
		queued []frame
		want   []uint8 // frame types written
		ackAt  int     // the one that carries the ACK
	}{
		{"nothing queued", nil, []uint8{frAck}, 0},
		{"a short send", []frame{{Type: frSend, Seq: 1, Len: 64}, {Type: frWrite, Seq: 2, Len: 64}}, []uint8{frSend, frWrite}, 0},
		{"a long write first", []frame{{Type: frWrite, Seq: 1, Len: ackRideMax + 1}}, []uint8{frAck, frWrite}, 0},
		{"a read response queued", []frame{{Type: frReadResp, Seq: 6, Len: 64}, {Type: frSend, Seq: 1, Len: 8}}, []uint8{frReadResp, frSend}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := batchFrames(t, tc.queued...)
			if len(got) != len(tc.want) {
				t.Fatalf("batch wrote %d frames (%+v), want %d", len(got), got, len(tc.want))
			}
			for i, f := range got {
				if f.Type != tc.want[i] {
					t.Fatalf("frame %d is type %d, want %d", i, f.Type, tc.want[i])
				}
				if carries := f.Flags&frFlagAck != 0; carries != (i == tc.ackAt) {
					t.Fatalf("frame %d (type %d) carries an ACK: %v; want the ACK on frame %d only", i, f.Type, carries, tc.ackAt)
				}
			}
			if !acked(got[tc.ackAt]) {
				t.Fatalf("frame %d carries %+v, want ACK 7 with 3 credits", tc.ackAt, got[tc.ackAt])
			}
		})
	}
}

// TestBatchStagesSmallFrames checks that a batch of short SENDs and RDMA
// WRITEs is one buffer (one write system call), and that a read
// response's payload is never copied, however short.
func TestBatchStagesSmallFrames(t *testing.T) {
	c := newConn(&ia{})
	small := make([]byte, inlineMax)
	for i, typ := range []uint8{frSend, frWrite, frSend} {
		c.deferWake++
		c.enqueue(&frame{Type: typ, Seq: uint64(i + 1), Len: uint32(len(small))}, [][]byte{small})
	}
	c.batch()
	if len(c.wvec) != 1 || len(c.wvec[0]) != 3*(frameLen+inlineMax) {
		t.Fatalf("three short frames make %d buffers, want one of %d bytes", len(c.wvec), 3*(frameLen+inlineMax))
	}
	c = newConn(&ia{})
	resp := make([]byte, 8)
	c.deferWake++
	c.enqueue(&frame{Type: frReadResp, Seq: 1, Len: uint32(len(resp))}, [][]byte{resp})
	c.respQueued++
	c.batch()
	if len(c.wvec) != 2 || !sharesMemory(c.wvec, resp) {
		t.Fatalf("a read response's payload was copied: %d buffers", len(c.wvec))
	}
}

// TestDisconnectSendsOwedAck checks what a disconnecting connection's
// writer writes last: the ACK it owes, then DISCONNECT, with the ACK
// stopping short of a read whose response it discarded (the peer would
// take an ACK of that read for a protocol violation), and DISCONNECT alone
// when nothing is owed.
func TestDisconnectSendsOwedAck(t *testing.T) {
	for _, tc := range []struct {
		name            string
		placed, ackSent uint64
		resp            uint64 // the request of a READ_RESP queued; 0: none
		want            []frame
	}{
		{"an ACK owed", 6, 2, 0, []frame{{Type: frAck, Flags: frFlagAck, Ack: 6, Credits: 3}, {Type: frDisc}}},
		{"a read response discarded", 6, 2, 5, []frame{{Type: frAck, Flags: frFlagAck, Ack: 4, Credits: 3}, {Type: frDisc}}},
		{"nothing new to acknowledge before the read", 6, 4, 5, []frame{{Type: frDisc}}},
		{"nothing owed", 2, 2, 0, []frame{{Type: frDisc}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			local, remote := net.Pipe()
			defer remote.Close()
			c := newConn(&ia{})
			c.nc = local
			c.placed, c.ackSent, c.recvPosted = tc.placed, tc.ackSent, 3
			c.deferWake++ // (the writer is not running yet)
			if tc.resp != 0 {
				c.enqueue(&frame{Type: frReadResp, Seq: tc.resp, Len: 8}, [][]byte{make([]byte, 8)})
				c.respQueued++
			}
			c.enqueue(&frame{Type: frSend, Seq: 9, Len: 8}, [][]byte{make([]byte, 8)})
			c.closing, c.discardQueued, c.sendDisconnect = true, true, true // (as shutdown for Disconnect)
			c.up = true
			done := make(chan struct{})
			go func() {
				defer close(done)
				c.writeLoop()
			}()
			stream, err := io.ReadAll(remote)
			<-done
			if err != nil {
				t.Fatalf("reading what the writer wrote: %v", err)
			}
			lim := limits{maxMsg: 1 << 20, maxRDMA: 1 << 20}
			var got []frame
			for len(stream) >= frameLen {
				f, err := decodeFrame(stream, &lim)
				if err != nil {
					t.Fatalf("malformed header %x: %v", stream[:frameLen], err)
				}
				got = append(got, f)
				stream = stream[frameLen+int(f.Len):]
			}
			if !slices.Equal(got, tc.want) || len(stream) != 0 {
				t.Fatalf("the closing writer wrote %+v (and %d bytes more), want %+v", got, len(stream), tc.want)
			}
		})
	}
}
