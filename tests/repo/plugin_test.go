package repo

import (
	"regexp"
	"strings"
	"testing"
)

// The plugin example builds where a user can write without root and
// configures that same file by an absolute path (TOML expands no ~).
func TestPluginReadmePaths(t *testing.T) {
	readme := read(t, "examples/loopback-plugin/README.md")
	build := regexp.MustCompile(`go build -o (\S+) \./examples/loopback-plugin`).FindStringSubmatch(readme)
	path := regexp.MustCompile(`(?m)^path\s*=\s*"([^"]+)"`).FindStringSubmatch(readme)
	if build == nil || path == nil {
		t.Fatalf("the README has no go build -o line (%q) or no path key (%q)", build, path)
	}
	out, conf := build[1], path[1]
	if !strings.HasPrefix(out, "~/") {
		t.Errorf("the plugin is built into %s, not under the user's home directory (~/...)", out)
	}
	home, rest, ok := strings.Cut(strings.TrimPrefix(conf, "/home/"), "/")
	if !strings.HasPrefix(conf, "/home/") || !ok || home == "" || "~/"+rest != out {
		t.Errorf("the configuration's path %s is not the absolute form of %s (/home/<user>/...)", conf, out)
	}
}
