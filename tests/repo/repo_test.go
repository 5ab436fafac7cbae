package repo

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/godat/godat/registry"
)

// root is the repository's top directory, from this package's.
const root = "../.."

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The README says what ./.ci/run installs: every package the CI scripts
// install with apt-get, staticcheck, and what the VM harness brings (qemu,
// a kernel image), and how long the run takes.
func TestReadmeSaysWhatCIInstalls(t *testing.T) {
	readme := read(t, "README.md")
	var pkgs []string
	for _, m := range regexp.MustCompile(`need\+=\(([a-z0-9.+-]+)\)`).FindAllStringSubmatch(read(t, ".ci/run"), -1) {
		pkgs = append(pkgs, m[1])
	}
	for _, m := range regexp.MustCompile(`apt-get install -y -qq ([a-z0-9.+ -]+)`).FindAllStringSubmatch(read(t, ".ci/verbs"), -1) {
		pkgs = append(pkgs, strings.Fields(m[1])...)
	}
	if len(pkgs) < 6 {
		t.Fatalf("found only %q installed by the CI scripts: has their form changed?", pkgs)
	}
	for _, p := range append(pkgs, "staticcheck", "qemu", "linux-image", "../shared/tools/rxe-vm/run") {
		if !strings.Contains(readme, p) {
			t.Errorf("the README does not mention %q", p)
		}
	}
	if !regexp.MustCompile("`./.ci/run` is the whole CI, and takes [0-9]+–[0-9]+ minutes").MatchString(readme) {
		t.Error("the README does not say how long ./.ci/run takes")
	}
}

// .ci/verbs looks for the VM harness beside the checkout only (or where
// RXE_VM_RUN says), and without it stops at once with a message that
// says where it looked. bench/verbs.sh looks where .ci/verbs does.
func TestCIVerbsFindsHarnessBesideCheckoutOnly(t *testing.T) {
	for _, name := range []string{".ci/verbs", "bench/verbs.sh"} {
		for _, p := range regexp.MustCompile(`\S*rxe-vm\S*`).FindAllString(read(t, name), -1) {
			if strings.HasPrefix(p, "/") || strings.Contains(p, "/work/") {
				t.Fatalf("%s names the harness at a fixed path: %s", name, p)
			}
		}
	}
	script := read(t, ".ci/verbs")
	// A checkout with nothing beside it. A go command that fails loudly
	// proves the script stops before doing anything.
	dir := t.TempDir()
	co := filepath.Join(dir, "checkout")
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{filepath.Join(co, ".ci"), bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(co, ".ci", "verbs"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte("#!/bin/sh\necho 'go ran' >&2\nexit 97\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env  string
		want string
	}{
		{"", "no rxe-vm harness at ../shared/tools/rxe-vm/run (beside this checkout: " + dir + "/shared/tools/rxe-vm/run)"},
		{"RXE_VM_RUN=" + filepath.Join(dir, "nosuch"), "no rxe-vm harness at " + filepath.Join(dir, "nosuch") + "."},
	} {
		cmd := exec.Command("bash", filepath.Join(co, ".ci", "verbs"))
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + dir}
		if c.env != "" {
			cmd.Env = append(cmd.Env, c.env)
		}
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), c.want) || strings.Contains(string(out), "go ran") {
			t.Errorf(".ci/verbs with %q: %v, output:\n%s\nwant exit 1 saying %q before anything runs", c.env, err, out, c.want)
		}
	}
}

// dat.conf.example names the IAs of the built-in default configuration:
// all of them.
func TestConfExampleNamesBuiltInIAs(t *testing.T) {
	ex := read(t, "dat.conf.example")
	i := strings.Index(ex, "the default built into godat:")
	if i < 0 {
		t.Fatal(`dat.conf.example no longer says "the default built into godat:"`)
	}
	item, _, _ := strings.Cut(ex[i:], "\n# Check")
	for _, ia := range registry.EmbeddedConfig().IAs {
		if !strings.Contains(item, `"`+ia.Name+`"`) {
			t.Errorf("dat.conf.example's built-in default omits IA %q:\n%s", ia.Name, item)
		}
	}
}
