// Command datinfo lists the DAT interface adapters (IAs) that godat is
// configured with, the provider behind each, whether it can be opened
// (and why not), its device or address and its main limits; it also checks
// configuration files.
//
// Usage:
//
//	datinfo [-v] [--json] [-f FILE]
//	datinfo [--json] check [FILE...]
//
// Without a command, datinfo reads the configuration (FILE given with -f;
// else the file $DAT_OVERRIDE names; else /etc/dat.conf; else the default
// built into godat, so it works on a machine with no configuration at
// all), opens every available IA, queries it and closes it, and prints one
// line per IA: the file's IAs, then godat's built-in IAs (loopback, tcp)
// that the file does not define, each with where it comes from (ORIGIN:
// the file and line of its entry, or "built-in"). An IA that cannot be
// opened shows the reason. -v prints every IA and provider attribute
// instead of the table.
//
// "datinfo check FILE..." validates each file and prints each problem as
// "file:line:column: message", one per line, on standard error. Without a
// FILE it checks the configuration the search order above picks. Besides
// the file's form, it checks each IA's ia_params and platform_params as
// far as its provider can without opening the IA (registry.ParamChecker):
// a malformed address or an unknown option is a problem at its position.
// A valid file is reported on standard output, with notes (IAs this build
// cannot open) and warnings ("file:line:column: warning: message"; a file
// that defines no IA), which do not change the exit status.
//
// --json prints machine-readable JSON on standard output instead of text.
// The field names are stable; see listJSON (listing) and checkJSON (check)
// in this package for every field.
//
// Exit status:
//
//	0  success; for check, every file is valid
//	1  a configuration is invalid or cannot be read, or another error
//	   (an IA that fails to close)
//	2  usage error: unknown flag or command
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin"
	"github.com/godat/godat/registry"
	_ "github.com/godat/godat/registry/all"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// openTimeout bounds the opening of one IA, beyond the start of a plugin
// process: plugin.StartTimeout bounds that, and only a plugin that stays
// silent for all of it is spared another start for its other IAs.
const openTimeout = 10 * time.Second

const usageText = `usage:
  datinfo [-v] [--json] [-f FILE]     list the configured IAs and their limits
  datinfo [--json] check [FILE...]    validate configuration files

The configuration is FILE (-f), else $DAT_OVERRIDE, else /etc/dat.conf,
else godat's built-in default. See dat.conf.example.

flags:
  -f FILE   read this configuration file
  -v        print every IA and provider attribute
  --json    print JSON instead of text

exit status:
  0  success (check: every file is valid)
  1  invalid or unreadable configuration, or another error
  2  usage error
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the parsed flags.
type options struct {
	file    string
	verbose bool
	json    bool
}

// run is datinfo: it parses args, writes its output to stdout and its
// diagnostics to stderr, and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := newFlagSet("datinfo", stderr, &o, true)
	if code, done := parseFlags(fs, args, stdout); done {
		return code
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return list(o, stdout, stderr)
	}
	switch rest[0] {
	case "check":
		cfs := newFlagSet("datinfo check", stderr, &o, false)
		if code, done := parseFlags(cfs, rest[1:], stdout); done {
			return code
		}
		return check(o, cfs.Args(), stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usageText)
		return exitOK
	}
	fmt.Fprintf(stderr, "datinfo: unknown command %q\n%s", rest[0], usageText)
	return exitUsage
}

func newFlagSet(name string, stderr io.Writer, o *options, all bool) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), usageText) }
	fs.BoolVar(&o.json, "json", o.json, "print JSON")
	if all {
		fs.StringVar(&o.file, "f", "", "configuration `FILE`")
		fs.BoolVar(&o.verbose, "v", false, "print every attribute")
	}
	return fs
}

// parseFlags parses args; done reports that run must return code now
// (help was asked for, or the flags are wrong).
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (code int, done bool) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return exitOK, true
	case err != nil:
		return exitUsage, true // the flag package printed the problem and the usage
	}
	return 0, false
}

// printConfigError prints a configuration error: one line per problem for
// an invalid file, else the error itself.
func printConfigError(w io.Writer, err error) {
	var ce registry.ConfigErrors
	if errors.As(err, &ce) {
		for _, e := range ce {
			fmt.Fprintln(w, e)
		}
		return
	}
	fmt.Fprintln(w, "datinfo:", err)
}

// iaReport is what datinfo learns about one IA.
type iaReport struct {
	info    registry.ProviderInfo
	library string
	opened  bool
	attr    api.IAAttr
	pattr   api.ProviderAttr
	// plugin is the plugin behind the IA, as it was while the IA was open
	// (or as the registry lists it when the IA could not be opened); nil
	// for a built-in provider.
	plugin *registry.PluginStatus
}

// probe opens every available IA of reg, queries and closes it. An IA that
// fails to open becomes unavailable with the error as its reason; a failed
// close is reported on stderr and makes ok false.
func probe(reg *registry.Registry, stderr io.Writer) (reps []iaReport, ok bool) {
	ok = true
	cfg := reg.Config()
	for i, pi := range reg.List() {
		r := iaReport{info: pi, plugin: pi.Plugin}
		if i < len(cfg.IAs) {
			r.library = cfg.IAs[i].Library
		}
		if pi.Available {
			timeout := openTimeout
			if pi.Plugin != nil {
				timeout += plugin.StartTimeout
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			ia, err := reg.Open(ctx, pi.IAName)
			cancel()
			if st, ok := reg.PluginStatus(pi.Provider); ok {
				r.plugin = &st
			}
			if err == nil {
				r.attr, r.pattr, err = ia.Query()
				if cerr := ia.Close(api.CloseAbrupt); cerr != nil {
					fmt.Fprintf(stderr, "datinfo: closing IA %s: %v\n", pi.IAName, cerr)
					ok = false
				}
			}
			if err != nil {
				r.info.Available, r.info.Reason = false, err.Error()
			} else {
				r.opened = true
			}
		}
		reps = append(reps, r)
	}
	return reps, ok
}

func list(o options, stdout, stderr io.Writer) int {
	reg, err := registry.Load(o.file)
	if err != nil {
		printConfigError(stderr, err)
		return exitFailure
	}
	reps, ok := probe(reg, stderr)
	switch {
	case o.json:
		err = writeListJSON(stdout, reg.Config(), reps)
	case o.verbose:
		err = writeVerbose(stdout, reg.Config(), reps)
	default:
		err = writeTable(stdout, reg.Config(), reps)
	}
	if err != nil {
		fmt.Fprintln(stderr, "datinfo:", err)
		return exitFailure
	}
	if !ok {
		return exitFailure
	}
	return exitOK
}

// describeSource says in words where the configuration came from.
func describeSource(cfg *registry.Config) string {
	switch cfg.Source {
	case "argument":
		return cfg.File + " (" + cfg.Format + " form, from -f)"
	case registry.EnvOverride:
		return cfg.File + " (" + cfg.Format + " form, from $" + registry.EnvOverride + ")"
	case "system":
		return cfg.File + " (" + cfg.Format + " form, system file)"
	case "embedded":
		return "godat's built-in default (no configuration file found)"
	}
	return cfg.File + " (" + cfg.Format + " form)"
}

func writeTable(w io.Writer, cfg *registry.Config, reps []iaReport) error {
	fmt.Fprintf(w, "Configuration: %s\n", describeSource(cfg))
	fmt.Fprintf(w, "Providers built in: %s\n\n", strings.Join(registry.Providers(), ", "))
	if len(reps) == 0 {
		_, err := fmt.Fprintln(w, "No IA is configured.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  IA\tORIGIN\tPROVIDER\tDEVICE/ADDRESS\tMAX_EPS\tEVD_QLEN\tMAX_MSG\tMAX_RDMA\tIOV\tPRIV_DATA\tSTATUS")
	firstDefault := ""
	for _, r := range reps {
		mark := " "
		if r.info.Default {
			mark = "*"
			if firstDefault == "" {
				firstDefault = r.info.IAName
			}
		}
		dev := r.info.IAParams
		if r.opened && r.attr.Address != nil {
			dev = r.attr.Address.String()
		}
		if dev == "" {
			dev = "-"
		}
		prov := r.info.Provider
		if prov == "" {
			prov = "-"
		}
		if r.plugin != nil {
			prov += " (plugin)"
		}
		limits := "-\t-\t-\t-\t-\t-"
		status := "available"
		if r.opened {
			a := r.attr
			limits = fmt.Sprintf("%d\t%d\t%s\t%s\t%d\t%s", a.MaxEPs, a.MaxEVDQLen, size(uint64(a.MaxMessageSize)),
				size(uint64(a.MaxRDMASize)), a.MaxIOVSegmentsPerDTO, size(uint64(r.pattr.MaxPrivateDataSize)))
		} else {
			status = "unavailable: " + r.info.Reason
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\t%s\t%s\n", mark, r.info.IAName, shortOrigin(r.info), prov, dev, limits, status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeDevices(w, reps); err != nil {
		return err
	}
	if err := writePlugins(w, reps); err != nil {
		return err
	}
	if firstDefault == "" {
		firstDefault = reps[0].info.IAName
		_, err := fmt.Fprintf(w, "\nNo IA is marked default; OpenDefault opens %s.\n", firstDefault)
		return err
	}
	_, err := fmt.Fprintf(w, "\n* marked default; OpenDefault opens %s.\n", firstDefault)
	return err
}

// shortOrigin is the table's ORIGIN: "built-in", or the base name of the
// file and the line (the Configuration line above the table names the
// file in full).
func shortOrigin(pi registry.ProviderInfo) string {
	if pi.Origin == registry.OriginBuiltIn {
		return pi.Origin
	}
	return filepath.Base(pi.Pos.File) + ":" + strconv.Itoa(pi.Pos.Line)
}

// writeDevices prints one line per opened IA that sits on a device (its
// transport attributes name a "device", as the verbs provider's do): the
// device, port, link layer, GID and MTU, and the IA's limits as the device
// sets them.
func writeDevices(w io.Writer, reps []iaReport) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	header := false
	for _, r := range reps {
		ta := r.attr.TransportAttrs
		if !r.opened || namedAttr(ta, "device") == "" {
			continue
		}
		if !header {
			fmt.Fprintln(tw, "\nDevices:")
			fmt.Fprintln(tw, "  IA\tDEVICE\tPORT\tLINK\tGID\tMTU\tMAX_QP\tCQ_DEPTH\tMAX_MR\tSGE\tRDMA_READS(IN/OUT)")
			header = true
		}
		gid := orDash(namedAttr(ta, "gid"))
		if ix := namedAttr(ta, "gid_index"); ix != "" && gid != "-" {
			gid += " [" + ix
			if ty := namedAttr(ta, "gid_type"); ty != "" {
				gid += ", " + ty
			}
			gid += "]"
		}
		a := r.attr
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%d\t%d/%d\n", r.info.IAName,
			namedAttr(ta, "device"), orDash(namedAttr(ta, "port")), orDash(namedAttr(ta, "link_layer")), gid,
			orDash(namedAttr(ta, "active_mtu")), a.MaxEPs, a.MaxEVDQLen, size(a.MaxLMRBlockSize),
			a.MaxIOVSegmentsPerDTO, a.MaxRDMAReadPerEPIn, a.MaxRDMAReadPerEPOut)
	}
	return tw.Flush()
}

// namedAttr returns the value of the attribute called name, or "".
func namedAttr(l []api.NamedAttr, name string) string {
	for _, a := range l {
		if a.Name == name {
			return a.Value
		}
	}
	return ""
}

// writePlugins prints one line per plugin that serves a listed IA: its
// name, executable, version and state.
func writePlugins(w io.Writer, reps []iaReport) error {
	var seen []string
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, r := range reps {
		p := r.plugin
		if p == nil || slices.Contains(seen, p.Name) {
			continue
		}
		if len(seen) == 0 {
			fmt.Fprintln(tw, "\nPlugins:")
			fmt.Fprintln(tw, "  PLUGIN\tPATH\tVERSION\tSTATE")
		}
		seen = append(seen, p.Name)
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", p.Name, p.Path, pluginVersion(p), pluginState(p, r))
	}
	return tw.Flush()
}

// pluginVersion formats the version a plugin reported and the protocol it
// spoke.
func pluginVersion(p *registry.PluginStatus) string {
	if p.Protocol == 0 {
		return "-"
	}
	v := p.Version
	if v == "" {
		v = "?"
	}
	return fmt.Sprintf("%s (protocol %d)", v, p.Protocol)
}

// pluginState says what became of the plugin while datinfo looked at it.
func pluginState(p *registry.PluginStatus, r iaReport) string {
	switch {
	case p.State == "running" && r.opened:
		return fmt.Sprintf("works (ran as pid %d while its IA was queried)", p.PID)
	case p.State == "running":
		return fmt.Sprintf("running (pid %d, %d IA(s) open)", p.PID, p.IAs)
	case !r.info.Available:
		return "unavailable: " + r.info.Reason
	case p.Reason != "":
		return p.State + ": " + p.Reason
	}
	return p.State
}

// size formats a byte count exactly, with a binary unit when it is a
// whole number of KiB, MiB or GiB.
func size(n uint64) string {
	for _, u := range []struct {
		s string
		b uint64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.b && n%u.b == 0 {
			return strconv.FormatUint(n/u.b, 10) + u.s
		}
	}
	return strconv.FormatUint(n, 10)
}

func writeVerbose(w io.Writer, cfg *registry.Config, reps []iaReport) error {
	fmt.Fprintf(w, "Configuration: %s\n", describeSource(cfg))
	fmt.Fprintf(w, "Providers built in: %s\n", strings.Join(registry.Providers(), ", "))
	if len(reps) == 0 {
		_, err := fmt.Fprintln(w, "\nNo IA is configured.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, r := range reps {
		pi := r.info
		fmt.Fprintf(tw, "\nIA %s\n", pi.IAName)
		row := func(k string, v any) { fmt.Fprintf(tw, "  %s\t%v\n", k, v) }
		row("position", pi.Pos)
		row("origin", pi.Origin)
		if pi.AliasOf != "" {
			row("alias_of", pi.AliasOf)
		}
		row("provider", orDash(pi.Provider))
		row("api_version", pi.APIVersion)
		row("threadsafe", pi.ThreadSafe)
		row("default", pi.Default)
		row("provider_version", strconv.Quote(pi.ProviderVersion))
		row("ia_params", strconv.Quote(pi.IAParams))
		row("platform_params", strconv.Quote(pi.PlatformParams))
		if len(pi.Hooks) > 0 {
			row("hooks", strings.Join(pi.Hooks, ", "))
		}
		if r.library != "" {
			row("library", r.library)
		}
		if p := r.plugin; p != nil {
			row("plugin", p.Name)
			row("plugin_path", p.Path)
			row("plugin_version", pluginVersion(p))
			row("plugin_state", pluginState(p, r))
		}
		if !r.opened {
			row("status", "unavailable: "+pi.Reason)
			continue
		}
		row("status", "available")
		fmt.Fprintf(tw, "  IA attributes:\n")
		writeAttrs(tw, r.attr)
		fmt.Fprintf(tw, "  provider attributes:\n")
		writeAttrs(tw, r.pattr)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeAttrs prints every field of an attribute struct, one per line, in
// declaration order; a list of named attributes gets one line per entry.
func writeAttrs(w io.Writer, attrs any) {
	v := reflect.ValueOf(attrs)
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if named, ok := v.Field(i).Interface().([]api.NamedAttr); ok {
			if len(named) == 0 {
				fmt.Fprintf(w, "    %s\t(none)\n", f.Name)
			}
			for j, a := range named {
				name := f.Name
				if j > 0 {
					name = ""
				}
				fmt.Fprintf(w, "    %s\t%s = %s\n", name, a.Name, strconv.Quote(a.Value))
			}
			continue
		}
		fmt.Fprintf(w, "    %s\t%s\n", f.Name, formatAttr(v.Field(i).Interface()))
	}
}

// formatAttr formats one attribute value for people: flags in hex with
// their names, enumerations by name, addresses as text.
func formatAttr(x any) string {
	switch v := x.(type) {
	case net.Addr:
		return v.Network() + " " + v.String()
	case nil:
		return "-"
	case string:
		return strconv.Quote(v)
	case api.VAddr:
		return fmt.Sprintf("%#x", uint64(v))
	case api.CompletionFlags:
		return flagNames(uint64(v), []string{"SUPPRESS", "SOLICITED_WAIT", "UNSIGNALLED", "BARRIER_FENCE", "EVD_THRESHOLD"}, "DEFAULT")
	case api.QOS:
		return flagNames(uint64(v), []string{"HIGH_THROUGHPUT", "LOW_LATENCY", "ECONOMY", "PREMIUM"}, "BEST_EFFORT")
	case api.MemType:
		return fmt.Sprintf("%#x", uint32(v))
	case api.IOVOwnership:
		return enumName(uint64(v), "CONSUMER", "PROVIDER_NO_MODIFY", "PROVIDER_MAY_MODIFY")
	case api.EPCreatorForPSP:
		return enumName(uint64(v), "NEVER", "IF_ASKED", "ALWAYS")
	case api.PZSupport:
		return enumName(uint64(v), "UNIQUE", "SHAREABLE")
	case api.RMRScope:
		return enumName(uint64(v), "EP", "PZ", "ANY")
	}
	return fmt.Sprint(x)
}

// flagNames formats a bit set as "0x3 (A|B)"; bit i is names[i].
func flagNames(v uint64, names []string, zero string) string {
	if v == 0 {
		return "0x0 (" + zero + ")"
	}
	var set []string
	rest := v
	for i, n := range names {
		if v&(1<<i) != 0 {
			set = append(set, n)
			rest &^= 1 << i
		}
	}
	if rest != 0 {
		set = append(set, fmt.Sprintf("%#x", rest))
	}
	return fmt.Sprintf("%#x (%s)", v, strings.Join(set, "|"))
}

// enumName formats an enumeration as "NAME (n)".
func enumName(v uint64, names ...string) string {
	if v < uint64(len(names)) {
		return fmt.Sprintf("%s (%d)", names[v], v)
	}
	return strconv.FormatUint(v, 10)
}

// listJSON is the output of "datinfo --json".
//
// Every IA object has the configuration keys of dat.conf.example (name,
// provider, api_version, threadsafe, default, provider_version, ia_params,
// platform_params), "library" (classic files only), "alias_of" (a classic
// line for godat's C library: the godat IA it stands for, whose provider
// and parameters it has), "position" (file:line:column of its entry),
// "origin" ("file:line" of its entry, or "built-in" for one of godat's
// built-in IAs), "available" and, when it is false, "reason". An IA that
// was opened also has "ia_attr" and "provider_attr":
// objects whose keys are the Go field names of api.IAAttr and
// api.ProviderAttr, with numbers (flags and enumerations as their DAT
// numeric values; 64-bit limits may exceed 2^53), booleans and strings;
// Address is a string, or null when the provider has none; named-attribute
// lists are arrays of {"name", "value"} objects.
type listJSON struct {
	Config    configJSON `json:"config"`
	Providers []string   `json:"providers"` // the providers built in
	IAs       []iaJSON   `json:"ias"`
}

// configJSON says which configuration was read: file, format ("toml",
// "classic" or "embedded") and source ("argument", "DAT_OVERRIDE",
// "system" or "embedded").
type configJSON struct {
	File   string `json:"file"`
	Format string `json:"format"`
	Source string `json:"source"`
}

// iaJSON is one IA of listJSON.
type iaJSON struct {
	Name            string         `json:"name"`
	Provider        string         `json:"provider"`
	APIVersion      string         `json:"api_version"`
	ThreadSafe      bool           `json:"threadsafe"`
	Default         bool           `json:"default"`
	ProviderVersion string         `json:"provider_version"`
	IAParams        string         `json:"ia_params"`
	PlatformParams  string         `json:"platform_params"`
	Hooks           []string       `json:"hooks,omitempty"`
	Library         string         `json:"library,omitempty"`
	AliasOf         string         `json:"alias_of,omitempty"`
	Plugin          *pluginJSON    `json:"plugin,omitempty"`
	Position        string         `json:"position"`
	Origin          string         `json:"origin"`
	Available       bool           `json:"available"`
	Reason          string         `json:"reason,omitempty"`
	IAAttr          map[string]any `json:"ia_attr,omitempty"`
	ProviderAttr    map[string]any `json:"provider_attr,omitempty"`
}

// pluginJSON is the plugin behind an IA of listJSON.
type pluginJSON struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	Version  string `json:"version,omitempty"`
	Protocol int    `json:"protocol,omitempty"`
	State    string `json:"state"`
	PID      int    `json:"pid,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// namedAttrJSON is one entry of a named-attribute list.
type namedAttrJSON struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func writeListJSON(w io.Writer, cfg *registry.Config, reps []iaReport) error {
	out := listJSON{
		Config:    configJSON{File: cfg.File, Format: cfg.Format, Source: cfg.Source},
		Providers: registry.Providers(),
		IAs:       []iaJSON{},
	}
	for _, r := range reps {
		pi := r.info
		ia := iaJSON{
			Name: pi.IAName, Provider: pi.Provider, APIVersion: pi.APIVersion, ThreadSafe: pi.ThreadSafe,
			Default: pi.Default, ProviderVersion: pi.ProviderVersion, IAParams: pi.IAParams,
			PlatformParams: pi.PlatformParams, Hooks: pi.Hooks, Library: r.library, AliasOf: pi.AliasOf,
			Position: pi.Pos.String(), Origin: pi.Origin, Available: r.opened, Reason: pi.Reason,
		}
		if r.opened {
			ia.IAAttr, ia.ProviderAttr = attrMap(r.attr), attrMap(r.pattr)
		}
		if p := r.plugin; p != nil {
			ia.Plugin = &pluginJSON{Name: p.Name, Path: p.Path, Version: p.Version, Protocol: p.Protocol,
				State: p.State, PID: p.PID, Reason: p.Reason}
		}
		out.IAs = append(out.IAs, ia)
	}
	return writeJSON(w, out)
}

// attrMap turns an attribute struct into a JSON object keyed by field name.
func attrMap(attrs any) map[string]any {
	v := reflect.ValueOf(attrs)
	t := v.Type()
	m := make(map[string]any, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		switch x := v.Field(i).Interface().(type) {
		case net.Addr:
			m[f.Name] = x.String()
		case nil:
			m[f.Name] = nil
		case []api.NamedAttr:
			l := make([]namedAttrJSON, 0, len(x))
			for _, a := range x {
				l = append(l, namedAttrJSON(a))
			}
			m[f.Name] = l
		default:
			m[f.Name] = x
		}
	}
	return m
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "<embedded>" reads better than "\u003cembedded\u003e"
	return enc.Encode(v)
}

// checkJSON is the output of "datinfo --json check": an array with one
// object per file checked.
type checkJSON struct {
	File   string `json:"file"`
	Valid  bool   `json:"valid"`
	Format string `json:"format,omitempty"` // "toml" or "classic", when valid
	IAs    int    `json:"ias"`              // IAs in a valid file
	// BuiltIn names the built-in IAs that stay available next to a valid
	// file because it does not define their names; empty for the embedded
	// configuration, whose IAs are all built in.
	BuiltIn []string `json:"built_in"`
	// Problems lists every problem of an invalid file; empty when valid.
	Problems []problemJSON `json:"problems"`
	// Unavailable lists the IAs of a valid file that cannot be opened
	// with this build of godat, and why.
	Unavailable []unavailableJSON `json:"unavailable"`
	// Warnings lists what is suspect in a valid file without making it
	// invalid (a file that defines no IA), in the form of problems.
	Warnings []problemJSON `json:"warnings"`
	// Error is set when the file cannot be read at all.
	Error string `json:"error,omitempty"`
}

// problemJSON is one problem of an invalid file.
type problemJSON struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

// unavailableJSON is one IA that a valid file describes but godat cannot
// open.
type unavailableJSON struct {
	Name     string `json:"name"`
	Position string `json:"position"`
	Reason   string `json:"reason"`
}

func check(o options, files []string, stdout, stderr io.Writer) int {
	if len(files) == 0 {
		files = []string{o.file}
	}
	code := exitOK
	results := []checkJSON{}
	for _, f := range files {
		res := checkJSON{File: f, BuiltIn: []string{}, Problems: []problemJSON{}, Unavailable: []unavailableJSON{}, Warnings: []problemJSON{}}
		cfg, err := registry.LoadConfig(f)
		if err != nil {
			code = exitFailure
			var ce registry.ConfigErrors
			if errors.As(err, &ce) {
				if len(ce) > 0 {
					res.File = ce[0].Pos.File
				}
				for _, e := range ce {
					res.Problems = append(res.Problems, problemJSON{File: e.Pos.File, Line: e.Pos.Line, Column: e.Pos.Col, Message: e.Msg})
				}
			} else {
				res.Error = err.Error()
			}
			if !o.json {
				printConfigError(stderr, err)
			}
			results = append(results, res)
			continue
		}
		res.File, res.Valid, res.Format = cfg.File, true, cfg.Format
		for _, e := range cfg.IAs {
			if e.BuiltIn && cfg.Format != registry.FormatEmbedded {
				res.BuiltIn = append(res.BuiltIn, e.Name)
			} else {
				res.IAs++
			}
		}
		for _, pi := range registry.New(cfg).List() {
			if !pi.Available {
				res.Unavailable = append(res.Unavailable, unavailableJSON{Name: pi.IAName, Position: pi.Pos.String(), Reason: pi.Reason})
			}
		}
		if res.IAs == 0 {
			// Valid, and the built-in IAs work next to it, but a file
			// that configures nothing is most likely the wrong file.
			res.Warnings = append(res.Warnings, problemJSON{File: cfg.File, Line: 1, Column: 1,
				Message: "the file defines no IA; expected at least one [[ia]] table, or a line of the classic dat.conf form"})
		}
		if !o.json {
			verdict := "ok"
			if len(res.Warnings) > 0 {
				verdict = "valid, " + plural(len(res.Warnings), "warning")
			}
			fmt.Fprintf(stdout, "%s: %s: %s form, %s\n", describeFile(cfg), verdict, cfg.Format, plural(res.IAs, "IA"))
			for _, w := range res.Warnings {
				fmt.Fprintf(stdout, "%s:%d:%d: warning: %s\n", w.File, w.Line, w.Column, w.Message)
			}
			switch len(res.BuiltIn) {
			case 0:
			case 1:
				fmt.Fprintf(stdout, "%s: note: godat's built-in IA %s is available too (the file does not define it)\n", cfg.File, res.BuiltIn[0])
			default:
				fmt.Fprintf(stdout, "%s: note: godat's built-in IAs %s are available too (the file does not define them)\n",
					cfg.File, strings.Join(res.BuiltIn, ", "))
			}
			for _, u := range res.Unavailable {
				fmt.Fprintf(stdout, "%s: note: IA %s is unavailable: %s\n", u.Position, u.Name, u.Reason)
			}
		}
		results = append(results, res)
	}
	if o.json {
		if err := writeJSON(stdout, results); err != nil {
			fmt.Fprintln(stderr, "datinfo:", err)
			return exitFailure
		}
	}
	return code
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func describeFile(cfg *registry.Config) string {
	if cfg.Source == "embedded" {
		return cfg.File + " (no configuration file found; godat's built-in default)"
	}
	return cfg.File
}
