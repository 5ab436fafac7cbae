// Package registry is godat's static registry (dat.conf(5),
// dat_registry_list_providers(3DAT), dat_ia_open(3DAT)): it reads the
// configuration, maps IA names to registered providers, opens IAs and wraps
// every object a provider returns in the guard layer, which enforces what
// the DAT pages require of every provider (see package api's doc for the
// split of duties).
//
// Providers register themselves from their package init with
// provider.Register, the way database/sql drivers do, so that a provider
// never imports the registry; consumers import registry/all (or single
// providers for their side effect) and call Open with an IA name.
//
// An IA's configuration entry may switch on hooks in its guard: counts
// of its calls (Counts) and a trace of them (WithTraceLogger).
//
// # Configuration
//
// LoadConfig finds the configuration (the caller's path, $DAT_OVERRIDE,
// /etc/dat.conf, else the embedded default) and reads it in either form:
// godat's TOML or a classic dat.conf(5) file (dat.conf.example at the top
// of the repository documents both). godat's built-in IAs, loopback and
// tcp (on 127.0.0.1), stay available next to any file, in either form:
// LoadConfig adds each after the file's IAs unless the file defines an IA
// of that name, and never marks an added one default. A file therefore
// replaces a built-in IA by defining its name, and cannot hide one
// otherwise; IAEntry.Origin and ProviderInfo.Origin tell a built-in IA
// ("built-in") from a file's ("file:line"). A provider that implements
// ParamChecker (tcp) has the ia_params and platform_params of its IAs
// checked while a file is read, so that a value it refuses by its form is
// an error of the file at its position.
//
// A classic file such as the /etc/dat.conf that a uDAPL installation
// (Debian's libdapl2) writes is read as it is. Its ofa-v2-* lines, for
// rdma-core's uDAPL libraries libdaplofa.so.2, libdaploscm.so.2 and
// libdaploucm.so.2, become IAs of the verbs provider with the same name
// and the same ia_params ("mlx5_0 1": device and port; "ib0 0": a netdev;
// an IP address), so that an IA name means the same adapter to godat as to
// uDAPL. Lines for other libraries are listed as unavailable, with the
// reason, and the rest of the file still works. A line naming godat's own
// C library (libdat2.so.2, libdatgodat*), as a uDAPL registry loads godat,
// is an alias: its ia_params names a godat IA, and the line's IA opens
// that one's provider with its parameters.
package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider"
)

// Register makes a provider available under name, as provider.Register
// does; it forwards there and is kept for programs written before
// registration moved below the registry.
//
// Deprecated: call provider.Register, which a provider can import
// without linking the registry.
func Register(name string, p api.Provider) { provider.Register(name, p) }

// Providers returns the names of the registered providers, sorted
// (provider.Names).
func Providers() []string { return provider.Names() }

// lookupProvider finds a built-in provider; a variable so that a test can
// add one for its own duration, which provider.Register cannot undo.
var lookupProvider = provider.Lookup

// Availability is the optional provider interface of the same name in
// package provider, where providers find it; List and Open ask it.
type Availability = provider.Availability

// ParamChecker is the optional provider interface of the same name in
// package provider, where providers find it; ParseConfig asks it.
type ParamChecker = provider.ParamChecker

// ProviderInfo is one row of the registry listing
// (dat_registry_list_providers(3DAT)): a configured IA, the provider behind
// it, and whether it can be opened.
type ProviderInfo struct {
	IAName          string
	Provider        string
	ProviderVersion string
	APIVersion      string
	ThreadSafe      bool
	Default         bool
	Available       bool
	Reason          string // why the IA is unavailable; empty when available
	IAParams        string
	PlatformParams  string
	Hooks           []string // the guard hooks the entry switches on
	Pos             Position // where the IA is configured
	// Origin is where the IA comes from: "file:line", or "built-in" for
	// one of godat's built-in IAs (IAEntry.Origin).
	Origin string
	// AliasOf is the godat IA that a classic line for godat's C library
	// stands for (IAEntry.AliasOf); "" for any other IA.
	AliasOf string
	// Plugin describes the plugin process that serves the IA, when its
	// provider is a [[plugin]]; nil for built-in providers.
	Plugin *PluginStatus
}

// Registry is a loaded configuration bound to the registered providers.
// It is safe for concurrent use.
type Registry struct {
	cfg     *Config
	plugins pluginSet
}

// New returns a registry over cfg.
func New(cfg *Config) *Registry { return &Registry{cfg: cfg} }

// Load reads the configuration by the search order of LoadConfig (path,
// then $DAT_OVERRIDE, then /etc/dat.conf, then the embedded default) and
// returns a registry over it.
func Load(path string) (*Registry, error) {
	cfg, err := LoadConfig(path)
	if err != nil {
		return nil, err
	}
	return New(cfg), nil
}

var (
	defOnce sync.Once
	defReg  *Registry
	defErr  error
)

// Default returns the registry of the default search order, loaded once
// per process.
func Default() (*Registry, error) {
	defOnce.Do(func() { defReg, defErr = Load("") })
	return defReg, defErr
}

// Config returns the configuration the registry was built from.
func (r *Registry) Config() *Config { return r.cfg }

// List returns every configured IA, in file order, with its availability.
func (r *Registry) List() []ProviderInfo {
	out := make([]ProviderInfo, 0, len(r.cfg.IAs))
	for _, e := range r.cfg.IAs {
		pi := ProviderInfo{
			IAName: e.Name, Provider: e.Provider, ProviderVersion: e.ProviderVersion,
			APIVersion: e.APIVersion, ThreadSafe: e.ThreadSafe, Default: e.Default,
			IAParams: e.IAParams, PlatformParams: e.PlatformParams, Hooks: e.Hooks, Pos: e.Pos,
			Origin: e.Origin(), AliasOf: e.AliasOf,
		}
		pi.Reason = r.unavailable(e)
		pi.Available = pi.Reason == ""
		if pp, _, ok := r.pluginProvider(e.Provider); ok && pp != nil {
			st := pp.Status()
			pi.Plugin = &st
		}
		out = append(out, pi)
	}
	return out
}

// unavailable says why entry e cannot be opened, or "" if it can be tried.
func (r *Registry) unavailable(e IAEntry) string {
	if e.Unavailable != "" {
		return e.Unavailable
	}
	if why, isPlugin := r.pluginUnavailable(e.Provider); isPlugin {
		return why
	}
	p, ok := lookupProvider(e.Provider)
	if !ok {
		known := strings.Join(Providers(), ", ")
		if known == "" {
			known = "none"
		}
		return fmt.Sprintf("no provider named %q is built in (have: %s) and no [[plugin]] has that name", e.Provider, known)
	}
	if a, ok := p.(Availability); ok {
		return a.Unavailable(e.IAParams)
	}
	return ""
}

// OpenOption adjusts how Open opens an IA.
type OpenOption func(*openOptions)

type openOptions struct {
	asyncQLen int
	log       *slog.Logger
}

// DefaultAsyncEVDQLen is the async EVD queue length Open asks for unless
// WithAsyncEVDQLen says otherwise.
const DefaultAsyncEVDQLen = 64

// WithAsyncEVDQLen sets the minimum queue length of the IA's async EVD
// (the async_evd_min_qlen argument of dat_ia_open(3DAT)).
func WithAsyncEVDQLen(n int) OpenOption { return func(o *openOptions) { o.asyncQLen = n } }

// WithTraceLogger sends the IA's trace to l instead of standard error,
// if its configuration entry switches tracing on (hooks = ["trace"] or
// ["trace-data"]). Each call is one record at level Info whose message
// is the operation ("EP.PostSend"), with the IA, the handle ("EP#3"), the
// DAT result, the error if any and the time the call took.
func WithTraceLogger(l *slog.Logger) OpenOption { return func(o *openOptions) { o.log = l } }

// Open opens the IA called name (dat_ia_open(3DAT)) and returns it wrapped
// in the guard layer. An unknown name is ErrProviderNotFound
// (DAT_NAME_NOT_REGISTERED); an unavailable IA is ErrProviderNotFound with
// the reason.
func (r *Registry) Open(ctx context.Context, name string, opts ...OpenOption) (api.IA, error) {
	i := slices.IndexFunc(r.cfg.IAs, func(e IAEntry) bool { return e.Name == name })
	if i < 0 {
		where := r.cfg.File
		if r.cfg.Format != FormatEmbedded && slices.ContainsFunc(r.cfg.IAs, func(e IAEntry) bool { return e.BuiltIn }) {
			where += " nor among godat's built-in IAs"
		}
		return nil, api.Errorf(api.ProviderNotFound, api.SubNameNotRegistered,
			fmt.Sprintf("no IA named %q in %s", name, where))
	}
	return r.open(ctx, r.cfg.IAs[i], opts)
}

// DefaultIAs lists, in order, the IAs OpenDefault tries: those marked
// default; when none is, the file's own IAs (not the built-in ones
// LoadConfig adds); when the file has none, the built-in ones.
func (r *Registry) DefaultIAs() []string {
	names, _ := r.defaultIAs()
	return names
}

// defaultIAs is DefaultIAs, with what the list is in words.
func (r *Registry) defaultIAs() (names []string, what string) {
	var marked, own, all []string
	for _, e := range r.cfg.IAs {
		all = append(all, e.Name)
		if e.Default {
			marked = append(marked, e.Name)
		}
		if !e.BuiltIn {
			own = append(own, e.Name)
		}
	}
	switch {
	case len(marked) > 0:
		return marked, "IAs marked default in " + r.cfg.File
	case len(own) > 0:
		return own, "IAs of " + r.cfg.File
	}
	return all, "built-in IAs"
}

// OpenDefault opens the first IA of DefaultIAs that exists on this host
// (OpenFirst): a system dat.conf marks default every adapter it knows of.
func (r *Registry) OpenDefault(ctx context.Context, opts ...OpenOption) (api.IA, error) {
	names, what := r.defaultIAs()
	if len(names) == 0 {
		return nil, api.Errorf(api.ProviderNotFound, api.SubNameNotRegistered, "no IA configured in "+r.cfg.File)
	}
	return r.openFirst(ctx, names, what, opts)
}

// OpenFirst opens the first of the IAs called names that exists on this
// host. One whose Open fails with DAT_PROVIDER_NOT_FOUND (unavailable in
// this build, its device or address absent) is passed over for the next;
// any other error ends the search and is returned. When none opens, the
// error is DAT_PROVIDER_NOT_FOUND and carries the first IA's.
func (r *Registry) OpenFirst(ctx context.Context, names []string, opts ...OpenOption) (api.IA, error) {
	return r.openFirst(ctx, names, "IAs tried", opts)
}

// openFirst is OpenFirst; what says in words which IAs names are.
func (r *Registry) openFirst(ctx context.Context, names []string, what string, opts []OpenOption) (api.IA, error) {
	var first error
	for _, name := range names {
		ia, err := r.Open(ctx, name, opts...)
		if err == nil || !errors.Is(err, api.ErrProviderNotFound) {
			return ia, err
		}
		if first == nil {
			first = err
		}
	}
	if len(names) <= 1 {
		if first == nil {
			first = api.Errorf(api.ProviderNotFound, api.SubNameNotRegistered, "no IA to open")
		}
		return nil, first
	}
	return nil, &api.Error{Type: api.ProviderNotFound, Sub: api.SubNameNotRegistered,
		Msg: fmt.Sprintf("none of the %d %s opens on this host; the first", len(names), what), Cause: first}
}

func (r *Registry) open(ctx context.Context, e IAEntry, opts []OpenOption) (api.IA, error) {
	if why := r.unavailable(e); why != "" {
		return nil, api.Errorf(api.ProviderNotFound, api.SubNameNotRegistered,
			fmt.Sprintf("IA %q (%s) is unavailable: %s", e.Name, e.Pos, why))
	}
	o := openOptions{asyncQLen: DefaultAsyncEVDQLen}
	for _, f := range opts {
		f(&o)
	}
	if o.asyncQLen <= 0 {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("async EVD queue length %d must be positive", o.asyncQLen))
	}
	var p api.Provider
	if pp, _, ok := r.pluginProvider(e.Provider); ok {
		p = pp
	} else {
		p, _ = lookupProvider(e.Provider)
	}
	ia, err := p.Open(ctx, api.OpenParams{
		Name: e.Name, Params: e.IAParams, PlatformParams: e.PlatformParams,
		AsyncEVDQLen: o.asyncQLen, ThreadSafe: e.ThreadSafe,
	})
	if err != nil {
		return nil, err
	}
	return wrapIA(ia, e, newHooks(e, o.log))
}

// ListProviders lists the IAs of the default registry
// (dat_registry_list_providers(3DAT)).
func ListProviders() ([]ProviderInfo, error) {
	r, err := Default()
	if err != nil {
		return nil, err
	}
	return r.List(), nil
}

// Open opens the IA called name from the default registry.
func Open(ctx context.Context, name string, opts ...OpenOption) (api.IA, error) {
	r, err := Default()
	if err != nil {
		return nil, err
	}
	return r.Open(ctx, name, opts...)
}

// OpenDefault opens the default IA of the default registry.
func OpenDefault(ctx context.Context, opts ...OpenOption) (api.IA, error) {
	r, err := Default()
	if err != nil {
		return nil, err
	}
	return r.OpenDefault(ctx, opts...)
}
