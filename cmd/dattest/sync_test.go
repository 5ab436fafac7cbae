package main

import (
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

// syncCalls returns how often ia's consumer called SyncRDMARead and
// SyncRDMAWrite (ia counts its calls).
func syncCalls(t *testing.T, ia api.IA) (read, write uint64) {
	t.Helper()
	counts, err := registry.Counts(ia)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range counts {
		switch c.Op {
		case "IA.SyncRDMARead":
			read = c.Calls
		case "IA.SyncRDMAWrite":
			write = c.Calls
		}
	}
	return read, write
}

// TestServerSyncCalls: the server makes the sync calls the DAT pages ask
// for. Before it checks bytes that the client's RDMA write placed in its
// window it calls SyncRDMAWrite (dat_lmr_sync_rdma_write(3DAT) makes an
// incoming write visible to the consumer), not SyncRDMARead; after it
// fills a range that the client then RDMA-reads it calls SyncRDMARead
// (dat_lmr_sync_rdma_read(3DAT) makes the consumer's writes visible to
// an incoming read).
func TestServerSyncCalls(t *testing.T) {
	reg := registry.New(&registry.Config{File: "inline", IAs: []registry.IAEntry{
		{Name: "srv", Provider: "loopback", APIVersion: "u2.0", ThreadSafe: true, Hooks: []string{"count"}},
		{Name: "cli", Provider: "loopback", APIVersion: "u2.0", ThreadSafe: true},
	}})
	ctx := testCtx(t)
	var srv api.IA
	cfg, stop, err := startInProcess(ctx, serverConfig{reg: reg, ia: "srv", idle: defaultIdleTimeout,
		ready: func(si serverInfo) { srv = si.ia }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("server: %v", err)
		}
	})
	cfg.reg, cfg.ia = reg, "cli"
	const size = 256
	_, c, w := benchSession(t, ctx, "cli", cfg, size)

	r0, w0 := syncCalls(t, srv)
	if err := c.writeVerify(ctx, w, 0, 0, size, 1, 7); err != nil {
		t.Fatal(err)
	}
	r1, w1 := syncCalls(t, srv)
	if w1 == w0 || r1 != r0 {
		t.Errorf("verifying an RDMA write: %d SyncRDMAWrite and %d SyncRDMARead calls, want at least 1 and 0", w1-w0, r1-r0)
	}

	if err := c.fillRead(ctx, w, 0, size, 1, 8); err != nil {
		t.Fatal(err)
	}
	if r2, _ := syncCalls(t, srv); r2 == r1 {
		t.Error("filling the window for an RDMA read: no SyncRDMARead call")
	}
}
