// Package conformance is the DAT semantic test suite that every godat
// provider runs, ours or a third party's, in the way golang.org/x/net/nettest
// tests any net.Conn. A provider is done when it passes the whole suite under
// go test -race.
//
// # Running the suite for a provider
//
// A provider that registers itself with the registry runs the suite against
// one configured IA name from an ordinary test file of its own package (or of
// any package that imports it for its side effect):
//
//	package acme_test
//
//	import (
//		"testing"
//
//		_ "example.com/acme/godat-provider" // registers "acme"
//		"github.com/godat/godat/tests/conformance"
//	)
//
//	func TestConformance(t *testing.T) { conformance.Run(t, "acme0") }
//
// Run opens every IA with registry.Open, so the IA name must be in the
// configuration the registry reads (the DAT_OVERRIDE variable names a
// dat.conf-style file; see the registry package). A provider that is not
// configured that way, for instance one under development that builds its
// IAs directly, calls RunWith with a function that opens a fresh IA on each
// call:
//
//	conformance.RunWith(t, func(ctx context.Context) (api.IA, error) {
//		return registry.Open(ctx, "acme0", registry.WithAsyncEVDQLen(128))
//	})
//
// Every check opens its own IAs (two of them, a "server" and a "client",
// for anything that connects) and closes them when it ends, so checks are
// independent and a failing one does not disturb the next. The suite uses
// only package api: it never looks at provider internals, so it works the
// same for the in-process loopback provider and for providers that move data
// between processes or hosts.
//
// # What is checked
//
// The suite is grouped by DAT manual page (dat_ep_connect, dat_evd_wait, ...;
// see reference/man3dat in the project's shared material). Each subtest is
// named after the page section it checks and the behaviour, for example
//
//	TestConformance/dat_evd_wait/DESCRIPTION:_threshold_larger_than_the_queue_length_is_DAT_INVALID_PARAMETER
//
// and every failure message starts with the page and section, so a failure
// says which rule the provider broke. Checks lists them all. Checks whose
// feature the provider reports as unsupported (SRQ, zero-based addresses, a
// PSP that creates EPs, ...) are skipped, except the check that the
// unsupported call fails the way the page says.
//
// A rule that cannot hold on a provider's device or wire protocol (not a
// missing feature) is declared by the provider in its provider attributes,
// as a ProviderSpecific entry named DeviationPrefix plus the rule's key,
// with the reason as value (see the Deviation constants). The checks of
// that rule then say so by key and reason, in a skip message or a log
// line, instead of failing; nothing is skipped silently.
//
// The suite contains no timed assertion: deadlines only stop a check from
// hanging when an expected event never comes (a wait for an event gives up
// after 10 seconds and fails the check, saying what it waited for). The
// few checks that something does not happen (no CNO trigger, no
// low-watermark event) look for a bounded time, 20 or 100 ms, and say so
// in their names: a slow provider could pass them, a correct one cannot
// fail them. Some checks poll an EVD from a goroutine of their own while
// a transfer of a few megabytes runs, to see that its data is in place the
// moment its completion is visible (DESIGN §4); they use a CPU each while
// they run. After the checks of each page, and at the end, it
// verifies with go.uber.org/goleak that no goroutine was left behind, so
// the test that calls Run or RunWith must not itself leave goroutines
// running, nor run in parallel with other tests.
//
// # The registry's guard
//
// Run opens IAs through the registry, whose guard checks handles (freed,
// of another IA, missing), objects freed while in use, and much of the
// argument checking the pages define, before a provider is called. A
// provider therefore passes those checks of the suite whether or not it
// makes them itself. The package's own test runs the suite over a
// provider that leaves them to the guard (a wrapper of loopback that accepts
// every call on or with a freed, foreign or missing handle, and frees
// objects in use), so that the guard's checks are proven for the
// providers that rely on them.
package conformance
