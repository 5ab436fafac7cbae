package tcp

import (
	"testing"
)

// batchFrames runs batch on a connection that owes the ACK of request 7
// and 3 credits, with the given frames queued, and decodes what it would
// write: frame headers in order (payload segments skipped).
func batchFrames(t *testing.T, queued ...frame) []frame {
	t.Helper()
	c := newConn(&ia{})
	c.placed, c.recvPosted = 7, 3
	payload := make([]byte, 8<<10)
	for i := range queued {
		f := &queued[i]
		var segs [][]byte
		if f.Len > 0 {
			segs = [][]byte{payload[:f.Len]}
		}
		c.deferWake++ // (no writer to wake)
		c.enqueue(f, segs)
		if f.Type == frReadResp {
			c.respQueued++
		}
	}
	c.batch()
	lim := limits{maxMsg: 1 << 20, maxRDMA: 1 << 20}
	var out []frame
	for _, b := range c.wvec {
		if len(b) != frameLen {
			continue
		}
		f, err := decodeFrame(b, &lim)
		if err != nil {
			t.Fatalf("batch wrote a malformed header %x: %v", b, err)
		}
		out = append(out, f)
	}
	if c.ackDue() {
		t.Fatalf("the ACK is still owed after a batch of %d frames", len(queued))
	}
	return out
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
