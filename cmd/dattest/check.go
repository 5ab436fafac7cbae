package main

import (
	"context"
	"fmt"
	"time"

	"github.com/godat/godat/api"
)

// Step results.
const (
	resPass = "PASS"
	resFail = "FAIL"
	resSkip = "SKIP"
)

// stepResult is one row of the validated sequence.
type stepResult struct {
	Step   string `json:"step"`
	Result string `json:"result"` // PASS, FAIL or SKIP
	Detail string `json:"detail"`
}

// checkReport is the outcome of the validated sequence.
type checkReport struct {
	ClientIA string       `json:"client_ia"`
	Server   string       `json:"server"`
	Steps    []stepResult `json:"steps"`
	Passed   bool         `json:"passed"`
}

// Window offsets the sequence uses; each step has its own range, so a
// misplaced write of one step cannot make another pass.
const (
	offWrite   = 0
	offRead    = 16 << 10
	offBind    = 32 << 10
	offIOVW    = 48 << 10
	offIOVR    = 64 << 10
	lenRDMA    = 8 << 10
	lenBind    = 4 << 10
	lenPing    = 3000
	lenIOVPing = 2500
	wantSegs   = 4
)

// runCheck runs the validated sequence against the server. It returns an
// error only when it cannot start (the IA does not open).
func runCheck(ctx context.Context, cfg clientConfig) (*checkReport, error) {
	n, err := openNode(ctx, cfg.reg, cfg.ia)
	if err != nil {
		return nil, err
	}
	defer n.close()
	rep := &checkReport{ClientIA: n.describe(), Server: fmt.Sprintf("%s port %d", cfg.host, cfg.port)}
	if cfg.target != nil {
		rep.Server = serverName(cfg.target, cfg.port)
	}
	add := func(step string, detail string, err error) bool {
		r := stepResult{Step: step, Result: resPass, Detail: detail}
		if err != nil {
			r.Result, r.Detail = resFail, err.Error()
		}
		rep.Steps = append(rep.Steps, r)
		return err == nil
	}
	skip := func(why string, steps ...string) {
		for _, s := range steps {
			rep.Steps = append(rep.Steps, stepResult{Step: s, Result: resSkip, Detail: why})
		}
	}
	rest := []string{"send/recv", "rdma write", "rdma read", "rmr bind", "iov send/recv", "iov rdma", "disconnect"}
	seed := uint64(time.Now().UnixNano())

	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	c, err := dial(sctx, n, cfg, sessionCheck, 0)
	cancel()
	if !add("connect", "", err) {
		skip("not connected", rest...)
		skip("not connected", "stale rmr context")
		return finish(rep), nil
	}
	rep.Steps[0].Detail = fmt.Sprintf("private data %d B sent, %d B back; nonce %#x echoed; raw TCP port %d",
		c.pdOut, c.pdIn, c.nonce, c.rawPort)
	defer c.free()

	// Each step gets its own deadline; once the connection is lost the
	// remaining steps are skipped.
	var w remoteWindow
	steps := []struct {
		name string
		run  func(ctx context.Context) (string, error)
	}{
		{"send/recv", func(ctx context.Context) (string, error) {
			err := c.ping(ctx, kindPing, lenPing, 1, nil, seed)
			return fmt.Sprintf("%d B each way, verified by both sides", lenPing), err
		}},
		{"rdma write", func(ctx context.Context) (string, error) {
			var err error
			if w, err = c.window(ctx); err != nil {
				return "", err
			}
			err = c.writeVerify(ctx, w, offWrite, offWrite, lenRDMA, 1, seed+10)
			return fmt.Sprintf("%d B into the server's window (RMR %#x), verified by the server after a send", lenRDMA, w.ctx), err
		}},
		{"rdma read", func(ctx context.Context) (string, error) {
			err := c.fillRead(ctx, w, offRead, lenRDMA, 1, seed+20)
			return fmt.Sprintf("%d B filled by the server, read back and verified", lenRDMA), err
		}},
		{"rmr bind", func(ctx context.Context) (string, error) {
			m, err := c.call(ctx, newMsg(kindBind).u64(tagOffset, offBind).u64(tagLength, lenBind), 1, nil)
			if err != nil {
				return "", err
			}
			bw, err := windowOf(m)
			if err != nil {
				return "", err
			}
			if bw.ctx == w.ctx {
				return "", fmt.Errorf("the RMR context %#x equals the LMR's", bw.ctx)
			}
			if err := c.writeVerify(ctx, bw, 0, offBind, lenBind, 1, seed+30); err != nil {
				return "", err
			}
			m, err = c.call(ctx, newMsg(kindUnbind), 1, nil)
			if err != nil {
				return "", err
			}
			if old := api.RMRContext(m.getOr(tagRMR, 0)); old != bw.ctx {
				return "", fmt.Errorf("the server unbound context %#x, want %#x", old, bw.ctx)
			}
			return fmt.Sprintf("RMR %#x over %d B of the window: write through it verified; unbound", bw.ctx, lenBind), nil
		}},
		{"iov send/recv", func(ctx context.Context) (string, error) {
			// The IOV_DATA message the server must take in several segments.
			payload := make([]byte, lenIOVPing)
			size := newMsg(kindIOVData).u64(tagSeed, 0).bytes(tagPayload, payload).size()
			m, err := c.call(ctx, newMsg(kindIOVPrep).u64(tagLength, uint64(size)).u64(tagCount, wantSegs), 1, nil)
			if err != nil {
				return "", err
			}
			srv := int(m.getOr(tagCount, 1))
			k := iovLimit(wantSegs, c.epAttr.MaxRequestIOV, c.epAttr.MaxRecvIOV, n.attr.MaxIOVSegmentsPerDTO)
			// The reply is the server's PING reply.
			rsize := reply(kindIOVData).u64(tagSeed, 0).bytes(tagPayload, payload).size()
			err = c.ping(ctx, kindIOVData, lenIOVPing, k, splitLens(rsize, k), seed+40)
			return fmt.Sprintf("%d B sent from %d segments into a %d-segment receive; reply %d → %d segments; verified",
				size, k, srv, srv, k), err
		}},
		{"iov rdma", func(ctx context.Context) (string, error) {
			kw := iovLimit(wantSegs, c.epAttr.MaxRDMAWriteIOV, n.attr.MaxIOVSegmentsPerRDMAWrite)
			kr := iovLimit(wantSegs, c.epAttr.MaxRDMAReadIOV, n.attr.MaxIOVSegmentsPerRDMARead)
			if err := c.writeVerify(ctx, w, offIOVW, offIOVW, lenRDMA, kw, seed+50); err != nil {
				return "", err
			}
			err := c.fillRead(ctx, w, offIOVR, lenRDMA, kr, seed+60)
			return fmt.Sprintf("RDMA write gathered from %d segments, RDMA read scattered into %d; verified", kw, kr), err
		}},
		{"disconnect", func(ctx context.Context) (string, error) {
			ck := c.nextCookie()
			if err := c.ep.PostRecv([]api.LMRTriplet{c.local.tri(0, 64)}, ck, api.CompletionDefault); err != nil {
				return "", fmt.Errorf("PostRecv: %w", err)
			}
			if err := c.ep.Disconnect(api.CloseGraceful); err != nil {
				return "", fmt.Errorf("EP.Disconnect: %w", err)
			}
			ev, err := c.cmEvent(ctx, connectTimeout)
			if err != nil {
				return "", fmt.Errorf("waiting for DISCONNECTED: %w", err)
			}
			if ev.Number != api.ConnectionDisconnectedEvent {
				return "", fmt.Errorf("got %v, want DISCONNECTED", ev.Number)
			}
			d, err := c.awaitAny(ctx, ck)
			if err != nil {
				return "", fmt.Errorf("the posted receive did not complete: %w", err)
			}
			if d.Status != api.DTOErrFlushed {
				return "", fmt.Errorf("the posted receive completed with %v, want ERR_FLUSHED", d.Status)
			}
			return "graceful; DISCONNECTED event; a posted receive was flushed", nil
		}},
	}
	for i, s := range steps {
		sctx, cancel := context.WithTimeout(ctx, stepTimeout)
		detail, err := s.run(sctx)
		cancel()
		if !add(s.name, detail, err) {
			if st, _, _, serr := c.ep.GetStatus(); serr != nil || st != api.EPConnected {
				for _, r := range steps[i+1:] {
					skip("connection lost", r.name)
				}
				break
			}
		}
	}

	sctx, cancel = context.WithTimeout(ctx, stepTimeout)
	detail, err := staleCheck(sctx, n, cfg, seed+70)
	cancel()
	add("stale rmr context", detail, err)
	return finish(rep), nil
}

func finish(rep *checkReport) *checkReport {
	rep.Passed = true
	for _, s := range rep.Steps {
		if s.Result != resPass {
			rep.Passed = false
		}
	}
	return rep
}

// staleCheck runs on a connection of its own, because it ends it: the
// server binds an RMR, the client writes through it, the server unbinds
// it, and a write through the old context must fail with a remote access
// error and break the connection.
func staleCheck(ctx context.Context, n *node, cfg clientConfig, seed uint64) (string, error) {
	c, err := dial(ctx, n, cfg, sessionStale, 0)
	if err != nil {
		return "", err
	}
	defer c.free()
	m, err := c.call(ctx, newMsg(kindBind).u64(tagOffset, 0).u64(tagLength, lenBind), 1, nil)
	if err != nil {
		return "", err
	}
	bw, err := windowOf(m)
	if err != nil {
		return "", err
	}
	if err := c.writeVerify(ctx, bw, 0, 0, lenBind, 1, seed); err != nil {
		return "", fmt.Errorf("before unbind: %w", err)
	}
	if _, err := c.call(ctx, newMsg(kindUnbind), 1, nil); err != nil {
		return "", err
	}
	ck := c.nextCookie()
	if err := c.ep.PostRDMAWrite([]api.LMRTriplet{c.local.tri(c.slot, 64)}, ck, bw.at(0, 64), api.CompletionDefault); err != nil {
		return "", fmt.Errorf("PostRDMAWrite: %w", err)
	}
	d, err := c.awaitAny(ctx, ck)
	if err != nil {
		return "", fmt.Errorf("waiting for the write through the old context: %w", err)
	}
	if d.Status != api.DTOErrRemoteAccess {
		return "", fmt.Errorf("the write through the old context %#x completed with %v, want ERR_REMOTE_ACCESS", bw.ctx, d.Status)
	}
	ev, err := c.cmEvent(ctx, connectTimeout)
	if err != nil {
		return "", fmt.Errorf("waiting for BROKEN: %w", err)
	}
	if ev.Number != api.ConnectionBrokenEvent {
		return "", fmt.Errorf("connection event %v after the refused write, want BROKEN", ev.Number)
	}
	return fmt.Sprintf("write through unbound RMR %#x: ERR_REMOTE_ACCESS, connection BROKEN (on a separate connection)", bw.ctx), nil
}
