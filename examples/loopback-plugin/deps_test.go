package main

import (
	"os/exec"
	"strings"
	"testing"
)

// A vendor's plugin executable links the vendor's side of the plugin
// machinery and the provider it serves, and nothing of the host's side:
// not the registry (with its guard and configuration readers) and not
// the TOML parser.
func TestPluginLinksNoRegistry(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/godat/godat/registry",
		"github.com/godat/godat/plugin/host",
		"github.com/BurntSushi/toml",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("the plugin executable depends on %s", dep)
			}
		}
	}
}

// The other direction of the split: a program that opens plugin IAs links
// the host's side without the vendor's server.
func TestHostLinksNoServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/godat/godat/plugin/host").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/godat/godat/plugin" {
			t.Errorf("the plugin host depends on %s, the vendor's side", dep)
		}
	}
}
