package main

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
)

// devProvider opens IAs that sit on an RDMA device, reported the way the
// verbs provider reports it.
type devProvider struct{}

func (devProvider) Open(ctx context.Context, p api.OpenParams) (api.IA, error) {
	return &devIA{infoIA: infoIA{params: p.Params}}, nil
}

func init() { provider.Register("datinfo-dev", devProvider{}) }

type devIA struct{ infoIA }

func (ia *devIA) Query() (api.IAAttr, api.ProviderAttr, error) {
	return api.IAAttr{
		Address: &net.IPAddr{IP: net.IPv4(192, 0, 2, 1)},
		MaxEPs:  1000, MaxEVDQLen: 32767, MaxLMRBlockSize: 1 << 40, MaxIOVSegmentsPerDTO: 30,
		MaxRDMAReadPerEPIn: 16, MaxRDMAReadPerEPOut: 8,
		TransportAttrs: []api.NamedAttr{
			{Name: "device", Value: "mlx5_0"}, {Name: "port", Value: "1"}, {Name: "link_layer", Value: "Ethernet"},
			{Name: "gid", Value: "0000:0000:0000:0000:0000:ffff:c000:0201"}, {Name: "gid_index", Value: "3"},
			{Name: "gid_type", Value: "RoCE v2"}, {Name: "active_mtu", Value: "4096"},
		},
	}, api.ProviderAttr{ProviderName: "datinfo-dev"}, nil
}

// TestDevices checks the device section of the table: one line per IA on
// a device with its port, link layer, GID, MTU and limits.
func TestDevices(t *testing.T) {
	isolate(t)
	cfg := writeFile(t, "dat.conf", iaEntry("rdma0", "datinfo-dev", `ia_params = "mlx5_0 1"`)+iaEntry("plain0", "datinfo-test"))
	out := runDatinfoOK(t, "-f", cfg)
	_, devs, ok := strings.Cut(out, "Devices:")
	if !ok {
		t.Fatalf("no device section:\n%s", out)
	}
	want := []string{"rdma0", "mlx5_0", "1", "Ethernet", "0000:0000:0000:0000:0000:ffff:c000:0201", "[3,", "RoCE", "v2]", "4096", "1000", "32767", "1024GiB", "30", "16/8"}
	if got := strings.Fields(row(t, devs, "rdma0")); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("device row %q, want %q", got, want)
	}
	if strings.Contains(devs, "plain0") {
		t.Errorf("an IA without a device is in the device section:\n%s", devs)
	}
}
