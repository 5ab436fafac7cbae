package registry

import (
	"fmt"
	"sync"

	"github.com/godat/godat/api"
)

// PluginHost runs providers that are separate executables (the [[plugin]]
// tables of the configuration). Package plugin/host implements it and
// registers it from its init with RegisterPluginHost, so that the registry
// never imports it; registry/all imports it for that side effect.
type PluginHost interface {
	// Provider returns the provider that serves the IAs of plugin e. It
	// must not start anything: the plugin process starts on the first Open
	// of one of its IAs. The registry calls it once per plugin and
	// Registry.
	Provider(e PluginEntry) PluginProvider
}

// PluginProvider is a provider served by a plugin process.
type PluginProvider interface {
	api.Provider
	// Check reports, without starting the plugin, why it cannot be started
	// now: the executable is missing, not executable, or fails its sha256
	// check. nil means an Open may be tried.
	Check() error
	// Status describes the plugin and its process for listings.
	Status() PluginStatus
}

// PluginStatus is what datinfo shows of a plugin.
type PluginStatus struct {
	Name    string // the [[plugin]] name
	Path    string // the executable
	Version string // the version the plugin reported, "" until it has run
	// Protocol is the plugin protocol version negotiated at the last
	// start, 0 until the plugin has run.
	Protocol int
	State    string // "stopped", "running" or "failed"
	PID      int    // the process while running
	IAs      int    // open IAs the process serves
	Reason   string // why the last start failed or the process ended, if it did
}

var (
	hostMu     sync.RWMutex
	pluginHost PluginHost
)

// RegisterPluginHost installs the plugin host. Package plugin/host calls it
// from its init; a second registration panics, as a programming error.
func RegisterPluginHost(h PluginHost) {
	hostMu.Lock()
	defer hostMu.Unlock()
	if h == nil || pluginHost != nil {
		panic("registry: RegisterPluginHost called twice or with nil")
	}
	pluginHost = h
}

func currentPluginHost() PluginHost {
	hostMu.RLock()
	defer hostMu.RUnlock()
	return pluginHost
}

// pluginSet is the plugin providers of one Registry, made on first use.
type pluginSet struct {
	once  sync.Once
	provs map[string]PluginProvider
}

func (r *Registry) pluginProvider(name string) (PluginProvider, PluginEntry, bool) {
	e, ok := r.cfg.Plugin(name)
	if !ok {
		return nil, e, false
	}
	r.plugins.once.Do(func() {
		r.plugins.provs = map[string]PluginProvider{}
		if h := currentPluginHost(); h != nil {
			for _, pe := range r.cfg.Plugins {
				r.plugins.provs[pe.Name] = h.Provider(pe)
			}
		}
	})
	return r.plugins.provs[name], e, true
}

// pluginUnavailable says why an IA served by plugin name cannot be opened,
// or "". isPlugin reports whether name is a plugin at all.
func (r *Registry) pluginUnavailable(name string) (why string, isPlugin bool) {
	pp, pe, ok := r.pluginProvider(name)
	if !ok {
		return "", false
	}
	if _, builtin := lookupProvider(name); builtin {
		return fmt.Sprintf("provider %q is both built in and a [[plugin]] (%s); rename the plugin", name, pe.Pos), true
	}
	if pp == nil {
		return fmt.Sprintf("plugin %q (%s) needs plugin support, which this program lacks: import github.com/godat/godat/registry/all or github.com/godat/godat/plugin/host", name, pe.Pos), true
	}
	if err := pp.Check(); err != nil {
		return fmt.Sprintf("plugin %q: %v", name, err), true
	}
	return "", true
}

// PluginStatus returns the status of the plugin called name, if the
// configuration has such a [[plugin]] and plugin support is built in.
func (r *Registry) PluginStatus(name string) (PluginStatus, bool) {
	pp, _, ok := r.pluginProvider(name)
	if !ok || pp == nil {
		return PluginStatus{}, false
	}
	return pp.Status(), true
}
