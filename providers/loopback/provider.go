package loopback

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
	"github.com/godat/godat/provider/kit/connreq"
	"github.com/godat/godat/provider/kit/dispatch"
	"github.com/godat/godat/provider/kit/epattr"
	"github.com/godat/godat/provider/kit/iaattr"
)

func init() { provider.Register("loopback", Provider{}) }

// Provider is the loopback provider. Its Open opens a new loopback IA
// (dat_ia_open(3DAT)); every IA it opens lives in the same process-wide
// fabric, so EPs of any two of them can connect. The zero value is ready
// for use; the package registers one under the name "loopback".
type Provider struct{}

// Open opens a loopback IA named p.Name with an async EVD of
// p.AsyncEVDQLen events (dat_ia_open(3DAT)). Each call opens a new IA with
// an address of its own, even under a name already open. p.Params and
// p.PlatformParams are ignored. It fails only when ctx has ended.
func (Provider) Open(ctx context.Context, p api.OpenParams) (api.IA, error) {
	qlen, err := dispatch.CheckOpen(ctx, p, providerLimits.MaxEVDQLen)
	if err != nil {
		return nil, err
	}
	fabric.mu.Lock()
	defer fabric.mu.Unlock()
	fabric.nextIA++
	i := newIA(Addr{Name: p.Name, Instance: fabric.nextIA})
	i.async = i.evds.OpenAsync(qlen)
	i.InitIA(&fabric.mu, i.async)
	fabric.ias[i.addr] = i
	return i, nil
}

// Addr is the address of a loopback IA (the net.Addr that
// dat_ia_query(3DAT) reports and dat_ep_connect(3DAT) takes). Every open
// IA has a distinct Addr, also when several are opened under one name.
type Addr struct {
	Name     string // the configured IA name
	Instance uint64 // distinguishes IAs opened under the same name
}

// Network returns "loopback", the network of every loopback IA address
// (net.Addr; dat_ia_query(3DAT)).
func (a Addr) Network() string { return "loopback" }

// String formats the address as name#instance, the form ParseAddr reads
// and datinfo prints (dat_ia_query(3DAT)).
func (a Addr) String() string { return a.Name + "#" + strconv.FormatUint(a.Instance, 10) }

// ParseAddr reads an address in the form Addr.String writes, for passing
// to EP.Connect (dat_ep_connect(3DAT)); a malformed string is
// ErrInvalidAddress (SubAddressMalformed). It does not check that the IA is
// open: connecting to a closed one gives UNREACHABLE.
func ParseAddr(s string) (Addr, error) {
	i := strings.LastIndexByte(s, '#')
	if i < 0 {
		return Addr{}, api.Errorf(api.InvalidAddress, api.SubAddressMalformed, fmt.Sprintf("loopback address %q has no #instance", s))
	}
	n, err := strconv.ParseUint(s[i+1:], 10, 64)
	if err != nil {
		return Addr{}, &api.Error{Type: api.InvalidAddress, Sub: api.SubAddressMalformed, Msg: fmt.Sprintf("loopback address %q", s), Cause: err}
	}
	return Addr{Name: s[:i], Instance: n}, nil
}

// addrOf converts a remote address argument to a loopback address: an
// Addr, or any address whose network is "loopback".
func addrOf(a net.Addr) (Addr, error) {
	switch v := a.(type) {
	case Addr:
		return v, nil
	case *Addr:
		if v != nil {
			return *v, nil
		}
	case nil:
	default:
		// Any net.Addr of the loopback network in Addr.String's form:
		// what a program rebuilds from a printed address, or what comes
		// through a plugin host.
		if a.Network() == "loopback" {
			return ParseAddr(a.String())
		}
		return Addr{}, api.Errorf(api.InvalidAddress, api.SubAddressUnsupported,
			fmt.Sprintf("%s address %q is not a loopback address", a.Network(), a.String()))
	}
	return Addr{}, api.Errorf(api.InvalidAddress, api.SubAddressMalformed, "remote address is nil")
}

// firstAnyQual is where CreatePSPAny starts picking qualifiers.
const firstAnyQual = 0xC000

// providerLimits are the limits the provider reports in IA.Query and
// enforces: a software provider's.
var providerLimits = iaattr.Software()

// defaultEPAttr is what an EP gets for a nil attribute pointer, and what
// zero numeric fields of a given one are replaced with.
var defaultEPAttr = epattr.Defaults(providerLimits.EP(), 1024, 16, 16)

// fabricState is the process-wide state of the provider: the fabric every
// IA of the process is on. One mutex serialises every object's state; only
// the event queues (package eventq) have locks of their own, taken after
// fabric.mu when a post delivers an event.
type fabricState struct {
	mu       sync.Mutex
	ias      map[Addr]*ia
	quals    connreq.Quals[servicePoint] // the PSPs and RSPs listening
	nextIA   uint64
	nextPort api.ConnQual // active-side port qualifiers

	// Scratch scatter/gather lists for one DTO at a time (under mu).
	segA, segB [][]byte
}

// fabric is the provider's one fabricState.
var fabric = newFabric()

func newFabric() *fabricState {
	return &fabricState{
		ias:      map[Addr]*ia{},
		quals:    connreq.NewQuals[servicePoint](firstAnyQual),
		nextPort: 1 << 32,
		segA:     make([][]byte, 0, providerLimits.MaxIOV),
		segB:     make([][]byte, 0, providerLimits.MaxIOV),
	}
}
