package conformance

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
)

// Timeouts. None of them is an assertion about speed: each only bounds how
// long a check waits for something it expects before it reports a failure
// instead of hanging.
const (
	// eventTimeout bounds every wait for an event a check expects.
	eventTimeout = 10 * time.Second
	// connTimeout is the DAT connect timeout of connections that are
	// expected to be established.
	connTimeout = 20 * time.Second
	// checkTimeout bounds one whole check (opening IAs included).
	checkTimeout = 2 * time.Minute
	// cleanupTimeout bounds how long the end of a check waits for the
	// goroutines it started once its IAs are closed.
	cleanupTimeout = 10 * time.Second
)

// Check describes one check of the suite: the DAT manual page and the
// section of it that the check verifies, and the behaviour in words.
type Check struct {
	Page      string // the manual page (or header) the rule comes from, e.g. "dat_evd_wait"
	Section   string // the section of the page, e.g. "DESCRIPTION"
	Behaviour string // what a conforming provider does
}

// String formats the check as the subtest path Run gives it.
func (c Check) String() string { return c.Page + "/" + c.Section + ": " + c.Behaviour }

// Checks returns every check of the suite, in the order Run runs them.
func Checks() []Check {
	var out []Check
	for _, g := range groups() {
		for _, c := range g.checks {
			out = append(out, Check{Page: g.page, Section: c.section, Behaviour: c.what})
		}
	}
	return out
}

// Run runs the whole suite against the IA called iaName, opening each IA it
// needs with registry.Open(ctx, iaName). The provider behind the IA must be
// registered (imported for its side effect) by the calling test.
func Run(t *testing.T, iaName string) {
	t.Helper()
	runWith(t, &suite{
		open:   func(ctx context.Context) (api.IA, error) { return registry.Open(ctx, iaName) },
		iaName: iaName,
	})
}

// RunWith runs the whole suite with IAs that open returns. open is called
// once per IA the suite needs (often twice per check) and must return a new,
// independent open IA each time; the suite closes every IA it opened.
func RunWith(t *testing.T, open func(ctx context.Context) (api.IA, error)) {
	t.Helper()
	runWith(t, &suite{open: open})
}

// RunSplit runs the whole suite with the server of every connected pair
// the checks make in an IA from openServer, and every other IA from
// openClient: for instance an in-process IA and one served by another
// process, so that the two ends of each connection live in two
// processes. Both must open IAs of the same provider that can reach each
// other.
func RunSplit(t *testing.T, openClient, openServer func(ctx context.Context) (api.IA, error)) {
	t.Helper()
	runWith(t, &suite{open: openClient, openServer: openServer})
}

type suite struct {
	open       func(ctx context.Context) (api.IA, error)
	openServer func(ctx context.Context) (api.IA, error) // RunSplit: the servers' IAs
	iaName     string                                    // known only through Run
}

// check is one behaviour of one page.
type check struct {
	section string
	what    string
	run     func(t *checkT)
}

// group is the checks of one page.
type group struct {
	page   string
	checks []check
}

// groups returns every group, in run order.
func groups() []group {
	return slices.Concat(iaGroups, connGroups, dtoGroups, memGroups, srqGroups, evdGroups, miscGroups())
}

func runWith(t *testing.T, s *suite) {
	t.Helper()
	// One IA up front: if the IA cannot even be opened, say so once
	// instead of failing every check the same way.
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	ia, err := s.open(ctx)
	cancel()
	if err != nil {
		t.Fatalf("conformance: cannot open the IA under test: %v", err)
	}
	if err := ia.Close(api.CloseAbrupt); err != nil {
		t.Fatalf("conformance: cannot close the IA under test: %v", err)
	}
	for _, g := range groups() {
		t.Run(g.page, func(t *testing.T) {
			for _, c := range g.checks {
				t.Run(c.section+": "+c.what, func(tt *testing.T) { s.runCheck(tt, g.page, c) })
			}
			if err := goleak.Find(); err != nil {
				t.Errorf("%s: goroutines are left behind after the checks of this page: %v", g.page, err)
			}
		})
	}
	goleak.VerifyNone(t)
}

func (s *suite) runCheck(tt *testing.T, page string, c check) {
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	t := &checkT{T: tt, ref: ref(page, c.section), ctx: ctx, s: s}
	defer t.cleanup()
	defer func() {
		// A provider that panics fails this check, not the whole suite.
		if r := recover(); r != nil {
			tt.Errorf("%s: panic: %v\n%s", t.ref, r, debug.Stack())
		}
	}()
	c.run(t)
}

func ref(page, section string) string {
	switch page {
	case "dat_error.h", "DESIGN":
		return page + " " + section
	}
	return page + "(3DAT) " + section
}

// checkT is the testing.T of one check. Its failure methods prefix every message
// with the page and section the check verifies. It owns the IAs, memory and
// goroutines the check creates and releases them when the check ends.
type checkT struct {
	*testing.T
	ref string
	ctx context.Context
	s   *suite

	mu   sync.Mutex
	ias  []api.IA
	mems []*api.Memory
	wg   sync.WaitGroup
}

// Fatalf fails the check with the page reference and stops it.
func (t *checkT) Fatalf(format string, args ...any) {
	t.T.Helper()
	t.T.Fatalf("%s: %s", t.ref, fmt.Sprintf(format, args...))
}

// Errorf fails the check with the page reference and goes on.
func (t *checkT) Errorf(format string, args ...any) {
	t.T.Helper()
	t.T.Errorf("%s: %s", t.ref, fmt.Sprintf(format, args...))
}

// Skipf skips the check, saying why.
func (t *checkT) Skipf(format string, args ...any) {
	t.T.Helper()
	t.T.Skipf("%s: %s", t.ref, fmt.Sprintf(format, args...))
}

// openIA opens a new IA that the check owns.
func (t *checkT) openIA() api.IA {
	t.T.Helper()
	return t.openFrom(t.s.open)
}

// openServerIA opens a new IA for the server end of a connection: from
// the suite's server source under RunSplit, like openIA otherwise.
func (t *checkT) openServerIA() api.IA {
	t.T.Helper()
	if t.s.openServer != nil {
		return t.openFrom(t.s.openServer)
	}
	return t.openIA()
}

func (t *checkT) openFrom(open func(ctx context.Context) (api.IA, error)) api.IA {
	t.T.Helper()
	ia, err := open(t.ctx)
	if err != nil {
		t.Fatalf("opening an IA: %v", err)
	}
	t.mu.Lock()
	t.ias = append(t.ias, ia)
	t.mu.Unlock()
	return ia
}

// alloc returns n bytes of api.AllocMemory memory that the check owns; it
// is freed after the check's IAs are closed.
func (t *checkT) alloc(n int) *api.Memory {
	t.T.Helper()
	m, err := api.AllocMemory(n)
	if err != nil {
		t.Fatalf("api.AllocMemory(%d): %v", n, err)
	}
	t.mu.Lock()
	t.mems = append(t.mems, m)
	t.mu.Unlock()
	return m
}

// spawn runs f on a goroutine that the end of the check waits for.
func (t *checkT) spawn(f func()) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		f()
	}()
}

func (t *checkT) cleanup() {
	t.mu.Lock()
	ias, mems := t.ias, t.mems
	t.ias, t.mems = nil, nil
	t.mu.Unlock()
	for i := len(ias) - 1; i >= 0; i-- {
		// A check that closed an IA itself leaves it closed: a second
		// Close is DAT_INVALID_HANDLE, which is fine here. A Close that
		// does not return is reported, not waited for: the suite must
		// end even on a provider that hangs (its memory stays mapped,
		// as below).
		closed := make(chan error, 1)
		go func() { closed <- ias[i].Close(api.CloseAbrupt) }()
		select {
		case err := <-closed:
			if err != nil && !errors.Is(err, api.ErrInvalidHandle) {
				t.T.Errorf("%s: closing an IA (abrupt) at the end of the check: %v", t.ref, err)
			}
		case <-time.After(cleanupTimeout):
			t.T.Errorf("%s: an abrupt IA.Close at the end of the check did not return within %v (dat_ia_close(3DAT): the abrupt close destroys every object)", t.ref, cleanupTimeout)
			return
		}
	}
	done := make(chan struct{})
	go func() {
		t.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(cleanupTimeout):
		// Some call into the provider is still blocked although every IA
		// is closed (dat_ia_close(3DAT): abrupt close unblocks all
		// waiters). Its memory stays mapped, so the stuck call cannot
		// fault; goleak will name the goroutine.
		t.T.Errorf("%s: a call into the provider did not return after the IAs were closed (dat_ia_close(3DAT) DESCRIPTION: abrupt close unblocks every waiter)", t.ref)
		return
	}
	for _, m := range mems {
		if err := m.Free(); err != nil {
			t.T.Errorf("%s: freeing memory: %v", t.ref, err)
		}
	}
}
