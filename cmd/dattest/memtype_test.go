package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
	"github.com/godat/godat/providers/loopback"
	"github.com/godat/godat/registry"
)

// virtualOnly is the loopback provider registering only
// DAT_MEM_TYPE_VIRTUAL memory, the one type every provider takes
// (LMRMemTypesSupported cannot even say it lacks it, its value being 0).
type virtualOnly struct{ loopback.Provider }

func (p virtualOnly) Open(ctx context.Context, op api.OpenParams) (api.IA, error) {
	ia, err := p.Provider.Open(ctx, op)
	if err != nil {
		return nil, err
	}
	return virtualOnlyIA{ia}, nil
}

type virtualOnlyIA struct{ api.IA }

func (ia virtualOnlyIA) Query() (api.IAAttr, api.ProviderAttr, error) {
	a, p, err := ia.IA.Query()
	p.LMRMemTypesSupported = api.MemTypeVirtual
	return a, p, err
}

func (ia virtualOnlyIA) CreateLMR(pz api.PZ, r api.Region, priv api.MemPriv, va api.VAType) (api.LMR, error) {
	if r.Type != api.MemTypeVirtual {
		return nil, api.Errorf(api.ModelNotSupported, api.NoSubtype, "only DAT_MEM_TYPE_VIRTUAL memory is supported")
	}
	return ia.IA.CreateLMR(pz, r, priv, va)
}

func init() { provider.Register("dattest-virtual-only", virtualOnly{}) }

// dattest registers its buffers as the README tells every program to:
// memory from api.AllocMemory, as MemTypeVirtual. So its validated
// sequence and its benchmarks run on a provider that registers no other
// type.
func TestVirtualMemoryOnly(t *testing.T) {
	ctx := testCtx(t)
	reg := registry.New(&registry.Config{File: "test", IAs: []registry.IAEntry{
		{Name: "v", Provider: "dattest-virtual-only", APIVersion: "u2.0", ThreadSafe: true}}})
	cfg, stop, err := startInProcess(ctx, serverConfig{reg: reg, ia: "v", idle: defaultIdleTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("server: %v", err)
		}
	}()
	cfg.reg, cfg.ia, cfg.stderr = reg, "v", &bytes.Buffer{}
	rep, err := runCheck(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkAllPass(t, rep)
	if _, err := runBench(ctx, cfg, benchParams{ops: []string{"bw", "read"}, sizes: []int{4096}, iters: 10}); err != nil {
		t.Fatal(err)
	}
}
