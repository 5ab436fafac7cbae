//go:build verbs && cgo

package verbs_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/providers/verbs"
	"github.com/godat/godat/registry"
	"golang.org/x/sys/unix"
)

// needDevice skips a test that needs an RDMA device when rdma-core finds
// none, with rdma-core's reason; inside rxe-vm ($RXE_VM set) a missing
// device is a failure instead.
func needDevice(t *testing.T) {
	t.Helper()
	why := verbs.Provider{}.Unavailable("")
	switch {
	case why == "":
	case os.Getenv("RXE_VM") != "":
		t.Fatalf("inside rxe-vm, but verbs is unavailable: %s", why)
	default:
		t.Skipf("needs an RDMA device (run it in ../../shared/tools/rxe-vm/run): %s", why)
	}
}

func openIA(t *testing.T, name string) api.IA {
	t.Helper()
	ia, err := registry.Open(context.Background(), name)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() {
		// A test may have closed it already (DAT_INVALID_HANDLE then).
		if err := ia.Close(api.CloseAbrupt); err != nil && !errors.Is(err, api.ErrInvalidHandle) {
			t.Errorf("close %s: %v", name, err)
		}
	})
	return ia
}

// TestNoDevice checks that, on a machine without RDMA devices, the IAs are
// unavailable with the reason rdma-core gave.
func TestNoDevice(t *testing.T) {
	why := verbs.Provider{}.Unavailable("")
	if why == "" {
		t.Skip("this machine has an RDMA device; the check is for machines without one")
	}
	if !strings.HasPrefix(why, "rdma-core ") {
		t.Errorf("reason %q does not say it comes from rdma-core", why)
	}
	expectUnavailable(t, why)
}

func named(l []api.NamedAttr, name string) string {
	for _, a := range l {
		if a.Name == name {
			return a.Value
		}
	}
	return ""
}

// TestOpenForms opens rxe0 by address, netdev and "device port", and
// checks what Query reports of the device.
func TestOpenForms(t *testing.T) {
	needDevice(t)
	dev, ip := envOr("RXE_VM_DEV", "rxe0"), envOr("RXE_VM_IP", "192.0.2.1")
	for _, name := range []string{"verbs", "verbs-netdev", "verbs-devport"} {
		t.Run(name, func(t *testing.T) {
			ia := openIA(t, name)
			a, p, err := ia.Query()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("address %v transport %v", a.Address, a.TransportAttrs)
			t.Logf("vendor %v", a.VendorAttrs)
			if got := named(a.TransportAttrs, "device"); got != dev {
				t.Errorf("device %q, want %q", got, dev)
			}
			if got := named(a.TransportAttrs, "port"); got != "1" {
				t.Errorf("port %q, want 1", got)
			}
			if ipa, ok := a.Address.(*net.IPAddr); !ok || ipa.IP.String() != ip {
				t.Errorf("address %v, want %s", a.Address, ip)
			}
			if got := named(a.TransportAttrs, "link_layer"); got != "Ethernet" {
				t.Errorf("link layer %q, want Ethernet (soft-RoCE)", got)
			}
			if got := named(a.TransportAttrs, "gid"); !strings.HasSuffix(got, "ffff:c000:0201") {
				t.Errorf("gid %q, want the IPv4-mapped GID of %s", got, ip)
			}
			if a.MaxEPs <= 0 || a.MaxEVDQLen <= 0 || a.MaxLMRBlockSize == 0 || a.MaxIOVSegmentsPerDTO <= 0 || a.MaxRDMAReadPerEPOut <= 0 {
				t.Errorf("device limits missing: %+v", a)
			}
			if p.ProviderName != "verbs" || p.MaxPrivateDataSize <= 0 {
				t.Errorf("provider attributes %+v", p)
			}
		})
	}
}

// TestUnknownDevice checks that ia_params naming nothing gives
// ErrProviderNotFound that lists the devices there are.
func TestUnknownDevice(t *testing.T) {
	needDevice(t)
	_, err := registry.Open(context.Background(), "verbs-nodev")
	if !errors.Is(err, api.ErrProviderNotFound) || !strings.Contains(err.Error(), envOr("RXE_VM_DEV", "rxe0")) {
		t.Fatalf("Open = %v, want ErrProviderNotFound listing the devices", err)
	}
}

// TestPZAndLMR registers AllocMemory memory and pinned foreign memory,
// and refuses Go heap memory.
func TestPZAndLMR(t *testing.T) {
	needDevice(t)
	ia := openIA(t, "verbs")
	pz, err := ia.CreatePZ()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := api.AllocMemory(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Free()
	heap := make([]byte, 4096)
	if _, err := ia.CreateLMR(pz, api.Region{Type: api.MemTypeVirtual, Bytes: heap}, api.MemPrivAll, api.VATypeVA); !errors.Is(err, api.ErrInvalidParameter) || !strings.Contains(err.Error(), "AllocMemory") {
		t.Errorf("LMR over Go heap memory: %v, want ErrInvalidParameter naming AllocMemory", err)
	}
	// Memory outside the Go heap that the caller pins (a C program's,
	// through the C ABI) is accepted; unpinned, it is refused like heap.
	foreign, err := unix.Mmap(-1, 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(foreign)
	if _, err := ia.CreateLMR(pz, api.Region{Type: api.MemTypeVirtual, Bytes: foreign}, api.MemPrivAll, api.VATypeVA); !errors.Is(err, api.ErrInvalidParameter) {
		t.Errorf("LMR over unpinned foreign memory: %v, want ErrInvalidParameter", err)
	}
	if l, err := ia.CreateLMR(pz, api.Region{Type: api.MemTypeVirtual, Bytes: foreign, Pinned: true}, api.MemPrivAll, api.VATypeVA); err != nil {
		t.Errorf("LMR over pinned foreign memory: %v", err)
	} else if err := l.Free(); err != nil {
		t.Fatal(err)
	}
	for _, va := range []api.VAType{api.VATypeVA, api.VATypeZB} {
		l, err := ia.CreateLMR(pz, api.Region{Type: api.MemTypeVirtual, Bytes: mem.Bytes()}, api.MemPrivAll, va)
		if err != nil {
			t.Fatalf("VA type %d: %v", va, err)
		}
		p, err := l.Query()
		if err != nil {
			t.Fatal(err)
		}
		wantAddr := api.AddrOf(mem.Bytes())
		if va == api.VATypeZB {
			wantAddr = 0
		}
		if p.LMRContext == 0 || p.RMRContext == 0 || p.RegisteredSize != uint64(mem.Len()) || p.RegisteredAddress != wantAddr {
			t.Errorf("VA type %d: LMR parameters %+v", va, p)
		}
		if err := l.Free(); err != nil {
			t.Fatal(err)
		}
	}
	if err := pz.Free(); err != nil {
		t.Fatal(err)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// TestErrnoText checks how an errno from rdma-core reads in an error:
// the system's message and the errno's name for any errno the system
// names, EHOSTUNREACH among them (rdma_cm's answer for an unreachable
// peer, which a list of common errnos once left as a number), and the
// number for one it does not.
func TestErrnoText(t *testing.T) {
	for e, want := range map[unix.Errno]string{
		unix.ENODEV:       "(ENODEV)",
		unix.EHOSTUNREACH: "(EHOSTUNREACH)",
		unix.Errno(4000):  "(errno 4000)",
	} {
		if got := verbs.ErrnoText(e); !strings.HasSuffix(got, want) {
			t.Errorf("errnoText(%d) = %q, want it to end in %q", int(e), got, want)
		}
	}
	if got := verbs.ErrnoText(unix.Errno(0)); got != "failed without an errno" {
		t.Errorf("errnoText(0) = %q", got)
	}
}
