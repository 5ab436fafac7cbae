package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/units"
	"github.com/godat/godat/plugin/host"
	"github.com/godat/godat/registry"
	_ "github.com/godat/godat/registry/all"
)

// iaReport is what datinfo learns about one IA.
type iaReport struct {
	info    registry.ProviderInfo
	library string
	opened  bool
	// absent: the IA is unavailable in this build, or its Open failed with
	// DAT_PROVIDER_NOT_FOUND, so that OpenDefault passes it over.
	absent bool
	attr   api.IAAttr
	pattr  api.ProviderAttr
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
				timeout += host.StartTimeout
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
				r.absent = errors.Is(err, api.ErrProviderNotFound)
			} else {
				r.opened = true
			}
		}
		if !pi.Available {
			r.absent = true
		}
		reps = append(reps, r)
	}
	return reps, ok
}

// defaultChoice is what OpenDefault does with the IAs of reps: tried is
// the registry's DefaultIAs, opens the IA it opens, skipped how many IAs
// it passes over first as absent from this host, and stops the IA whose
// error ends its search instead.
type defaultChoice struct {
	tried   []string
	opens   string
	skipped int
	stops   string
}

func chooseDefault(reps []iaReport, tried []string) defaultChoice {
	c := defaultChoice{tried: tried}
	for _, name := range tried {
		k := slices.IndexFunc(reps, func(r iaReport) bool { return r.info.IAName == name })
		switch {
		case k >= 0 && reps[k].opened:
			c.opens = name
			return c
		case k >= 0 && !reps[k].absent:
			c.stops = name
			return c
		}
		c.skipped++
	}
	return c
}

// line says it under the table.
func (c defaultChoice) line(marked bool) string {
	head := "No IA is marked default"
	if marked {
		head = "* marked default"
	}
	switch {
	case c.stops != "":
		return fmt.Sprintf("%s; OpenDefault fails here: %s does not open (its STATUS above).", head, c.stops)
	case c.opens == "" && len(c.tried) == 1:
		return fmt.Sprintf("%s; OpenDefault fails here: %s is unavailable.", head, c.tried[0])
	case c.opens == "" && len(c.tried) <= 3:
		return fmt.Sprintf("%s; OpenDefault fails here: none of %s is available.", head, strings.Join(c.tried, ", "))
	case c.opens == "":
		return fmt.Sprintf("%s; OpenDefault fails here: none of the %d IAs it tries is available.", head, len(c.tried))
	case c.skipped > 0:
		return fmt.Sprintf("%s; OpenDefault opens %s, passing over %d unavailable here before it.", head, c.opens, c.skipped)
	}
	return fmt.Sprintf("%s; OpenDefault opens %s.", head, c.opens)
}

func list(o options, stdout, stderr io.Writer) int {
	reg, err := registry.Load(o.file)
	if err != nil {
		printConfigError(stderr, err)
		return exitFailure
	}
	reps, ok := probe(reg, stderr)
	def := chooseDefault(reps, reg.DefaultIAs())
	switch {
	case o.json:
		err = writeListJSON(stdout, reg.Config(), reps, def)
	case o.verbose:
		err = writeVerbose(stdout, reg.Config(), reps)
	default:
		err = writeTable(stdout, reg.Config(), reps, def)
	}
	if err != nil {
		fmt.Fprintln(stderr, "datinfo:", err)
		return exitFailure
	}
	if !ok {
		return exitFailure
	}
	if available(reps) == 0 {
		return exitNoIA
	}
	return exitOK
}

// available counts the IAs of reps that opened.
func available(reps []iaReport) int {
	n := 0
	for _, r := range reps {
		if r.opened {
			n++
		}
	}
	return n
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

func writeTable(w io.Writer, cfg *registry.Config, reps []iaReport, def defaultChoice) error {
	fmt.Fprintf(w, "Configuration: %s\n", describeSource(cfg))
	fmt.Fprintf(w, "Providers built in: %s\n\n", strings.Join(registry.Providers(), ", "))
	if len(reps) == 0 {
		_, err := fmt.Fprintf(w, "No IA is configured (exit status %d).\n", exitNoIA)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  IA\tORIGIN\tPROVIDER\tDEVICE/ADDRESS\tMAX_EPS\tEVD_QLEN\tMAX_MSG\tMAX_RDMA\tIOV\tPRIV_DATA\tSTATUS")
	marked := false
	for _, r := range reps {
		mark := " "
		if r.info.Default {
			mark, marked = "*", true
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
	_, err := fmt.Fprintf(w, "\n%s\n", def.line(marked))
	if err != nil || available(reps) > 0 {
		return err
	}
	_, err = fmt.Fprintf(w, "No IA is available: none of the %d listed can be opened (exit status %d).\n", len(reps), exitNoIA)
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
func size(n uint64) string { return units.Exact(n, "iB") }

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
