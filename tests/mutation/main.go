//go:build mutation

// Command mutation measures what the conformance suite catches: it applies
// one plausible bug at a time (a mutant, mutants.go) to providers/loopback,
// providers/tcp, the provider kit, the registry's guard, the plugin host,
// the plugin server, datnet or the C ABI, runs the suite against it (for
// datnet, its own tests and x/net/nettest; for the C ABI, the C programs
// of its tests), and reports which mutants it killed. The
// build tag keeps it out of ordinary builds and tests; run it from the
// module root:
//
//	go run -tags mutation ./tests/mutation [-root dir] [-only id,id] [-area loopback,tcp,kit,guard,host,server,datnet,cabi] [-timeout d]
//
// The source tree is never changed: each mutant is compiled through the go
// command's -overlay flag, given in GOFLAGS so that it reaches the
// programs a test builds as well (the plugins). A mutant whose edit no
// longer applies (its old text is absent or not unique) is reported as
// such, and one that does not compile is left out of the rate. -root lets
// the same set run against another checkout, for instance an older suite.
// A mutant that makes a stream lose bytes leaves a reader waiting until
// the timeout; datnet's run takes -timeout 2m.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// mutant is one bug: the text old in file is replaced by new.
type mutant struct {
	id, area, file, desc string
	old, new             string
}

// tests are the packages and test names each area's mutants run against,
// and the build tags they need: the conformance suite alone, but for
// datnet and the C ABI.
var tests = map[string]struct {
	run, pkgs []string
	tags      string
}{
	"loopback": {run: []string{"TestConformance"}, pkgs: []string{"./providers/loopback"}},
	"kit":      {run: []string{"TestConformance"}, pkgs: []string{"./providers/loopback"}},
	"tcp":      {run: []string{"TestConformance"}, pkgs: []string{"./providers/tcp"}},
	// The guard's checks are proven through loopback and through the
	// suite's own provider that checks nothing (tests/conformance).
	"guard": {run: []string{"TestConformance", "TestConformanceNoCheck"}, pkgs: []string{"./providers/loopback", "./tests/conformance"}},
	// The host's mutants are compiled into the test binary, the server's
	// into the plugin executables the test builds and starts.
	// Both run the suite twice: posts through the submission ring, then
	// by call.
	"host":   {run: []string{"TestConformance", "TestConformanceByCall"}, pkgs: []string{"./plugin/host"}},
	"server": {run: []string{"TestConformance", "TestConformanceByCall"}, pkgs: []string{"./plugin/host"}},
	// datnet's suite is x/net/nettest with its own stream tests: all of
	// its tests, on loopback, tcp and the plugin host.
	"datnet": {run: []string{"Test.*"}, pkgs: []string{"./datnet"}},
	// The C ABI has no Go caller: its tests run C programs against the
	// library built from the mutant (its own, OFA's dtest, dtestcm,
	// dtestsrq, dtestx and dapltest).
	"cabi": {run: []string{"Test.*"}, pkgs: []string{"./cabi"}, tags: "cabi"},
}

type outcome struct {
	ID, Area, Desc string
	Result         string // killed, killed-by-wait, survived, no-compile, not-applicable
	Failed         []string
	Took           time.Duration
}

func main() {
	root := flag.String("root", ".", "module root of the tree to mutate")
	only := flag.String("only", "", "comma-separated mutant ids to run (default all)")
	areas := flag.String("area", "", "comma-separated areas to run (default all)")
	timeout := flag.Duration("timeout", 5*time.Minute, "go test -timeout for one mutant")
	out := flag.String("json", "", "write the outcomes to this file as JSON")
	flag.Parse()

	abs, err := filepath.Abs(*root)
	if err != nil {
		fatal(err)
	}
	tmp, err := os.MkdirTemp("", "godat-mutation-")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(tmp)

	chosen, err := choose(mutants, *only, *areas)
	if err != nil {
		fatal(err)
	}
	var res []outcome
	for _, m := range chosen {
		o := run(abs, tmp, m, *timeout)
		res = append(res, o)
		fmt.Printf("%-10s %-9s %-16s %6.1fs  %s\n", o.Result, o.Area, o.ID, o.Took.Seconds(), o.Desc)
		for _, f := range o.Failed {
			fmt.Printf("           %s\n", f)
		}
	}
	summary(res)
	if *out != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(*out, b, 0o644); err != nil {
			fatal(err)
		}
	}
}

var failLine = regexp.MustCompile(`--- FAIL: (\S+)`)

func run(root, tmp string, m mutant, timeout time.Duration) outcome {
	o := outcome{ID: m.id, Area: m.area, Desc: m.desc}
	path := filepath.Join(root, m.file)
	src, err := os.ReadFile(path)
	if err != nil || bytes.Count(src, []byte(m.old)) != 1 {
		o.Result = "not-applicable"
		return o
	}
	mut := filepath.Join(tmp, m.id+".go")
	if err := os.WriteFile(mut, bytes.Replace(src, []byte(m.old), []byte(m.new), 1), 0o644); err != nil {
		fatal(err)
	}
	ov := filepath.Join(tmp, m.id+".json")
	b, _ := json.Marshal(map[string]any{"Replace": map[string]string{path: mut}})
	if err := os.WriteFile(ov, b, 0o644); err != nil {
		fatal(err)
	}
	t := tests[m.area]
	args := []string{"test", "-count=1", "-failfast", "-timeout", timeout.String(),
		"-run", "^(" + strings.Join(t.run, "|") + ")$"}
	if t.tags != "" {
		args = append(args, "-tags", t.tags)
	}
	args = append(args, t.pkgs...)
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), strings.TrimSpace("GOFLAGS=-overlay="+ov+" "+os.Getenv("GOFLAGS")))
	start := time.Now()
	outb, err := cmd.CombinedOutput()
	o.Took = time.Since(start)
	switch {
	case bytes.Contains(outb, []byte("[build failed]")) || bytes.Contains(outb, []byte("[setup failed]")):
		o.Result = "no-compile"
	case err == nil:
		o.Result = "survived"
	default:
		o.Result = "killed"
		if bytes.Contains(outb, []byte("no event within")) && !bytes.Contains(outb, []byte(", want ")) {
			// Only through a wait for an event that never came.
			o.Result = "killed-by-wait"
		}
		// Keep the innermost names: a check, not its page or the test.
		seen, depth := map[string]bool{}, 1
		for _, l := range failLine.FindAllStringSubmatch(string(outb), -1) {
			switch d := strings.Count(l[1], "/"); {
			case d > depth:
				depth, o.Failed, seen = d, nil, map[string]bool{}
				fallthrough
			case d == depth && !seen[l[1]]:
				seen[l[1]] = true
				o.Failed = append(o.Failed, l[1])
			}
		}
		if len(o.Failed) == 0 {
			lines := strings.Split(strings.TrimSpace(string(outb)), "\n")
			o.Failed = lines[max(0, len(lines)-3):]
		}
		if len(o.Failed) > 3 {
			o.Failed = append(o.Failed[:3], fmt.Sprintf("(and %d more)", len(o.Failed)-3))
		}
	}
	return o
}

func summary(res []outcome) {
	byArea := map[string][2]int{}
	var survivors []outcome
	for _, o := range res {
		c := byArea[o.Area]
		switch o.Result {
		case "killed", "killed-by-wait":
			c[0]++
			c[1]++
		case "survived":
			c[1]++
			survivors = append(survivors, o)
		}
		byArea[o.Area] = c
	}
	fmt.Println()
	total := [2]int{}
	for _, a := range areaNames() {
		c, ok := byArea[a]
		if !ok {
			continue
		}
		total[0] += c[0]
		total[1] += c[1]
		fmt.Printf("%-9s killed %d of %d (%s)\n", a, c[0], c[1], pct(c))
	}
	fmt.Printf("all       killed %d of %d (%s)\n", total[0], total[1], pct(total))
	for _, o := range survivors {
		fmt.Printf("survived: %s (%s): %s\n", o.ID, o.Area, o.Desc)
	}
}

// areaNames returns the areas of the tests table, sorted.
func areaNames() []string {
	return slices.Sorted(maps.Keys(tests))
}

// choose returns the mutants that -only and -area select, in table order.
// An id or area that names nothing is an error, so that a typo does not
// run an empty set and report it as a clean one.
func choose(all []mutant, only, areas string) ([]mutant, error) {
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	ids, as := split(only), split(areas)
	for _, a := range as {
		if _, ok := tests[a]; !ok {
			return nil, fmt.Errorf("-area: no area %q (the areas: %s)", a, strings.Join(areaNames(), ", "))
		}
	}
	for _, id := range ids {
		if !slices.ContainsFunc(all, func(m mutant) bool { return m.id == id }) {
			return nil, fmt.Errorf("-only: no mutant %q", id)
		}
	}
	var out []mutant
	for _, m := range all {
		if (ids == nil || slices.Contains(ids, m.id)) && (as == nil || slices.Contains(as, m.area)) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-only %q and -area %q select no mutant together", only, areas)
	}
	return out, nil
}

func pct(c [2]int) string {
	if c[1] == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f %%", 100*float64(c[0])/float64(c[1]))
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mutation:", err)
	os.Exit(2)
}
