package memreg

import (
	"errors"
	"sync"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit"
)

// The sync calls pass segments inside an LMR, refuse others, and refuse
// everything once the IA is closed.
func TestCoherent(t *testing.T) {
	var mu sync.Mutex
	var ia kit.IA
	ia.InitIA(&mu, nil)
	tab := New[*pz, *ep]()
	var l LMR[*pz]
	tab.Register(&l, make([]byte, 32), api.MemTypeVirtual, api.MemPrivLocalRead, api.VATypeZB, &pz{1})
	c := NewCoherent(&ia, tab)
	in := []api.LMRTriplet{{LMRContext: l.LMRContext, Addr: 0, Length: 32}, {}}
	out := []api.LMRTriplet{{LMRContext: l.LMRContext, Addr: 16, Length: 32}}
	for name, sync := range map[string]func([]api.LMRTriplet) error{"SyncRDMARead": c.SyncRDMARead, "SyncRDMAWrite": c.SyncRDMAWrite} {
		if err := sync(in); err != nil {
			t.Errorf("%s inside the LMR: %v", name, err)
		}
		if err := sync(out); !errors.Is(err, api.ErrInvalidParameter) {
			t.Errorf("%s outside the LMR: %v", name, err)
		}
	}
	mu.Lock()
	_ = ia.BeginClose(api.CloseAbrupt)
	mu.Unlock()
	if err := c.SyncRDMARead(in); !errors.Is(err, api.ErrInvalidHandle) {
		t.Errorf("SyncRDMARead on a closed IA: %v", err)
	}
}
