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
// opened shows the reason. The line under the table says which IA
// registry.OpenDefault opens on this host: the first marked default that
// opens, passing over those whose device or address is absent. -v prints
// every IA and provider attribute instead of the table.
//
// "datinfo check FILE..." validates each file and prints each problem as
// "file:line:column: message", one per line, on standard error. Without a
// FILE it checks the configuration the search order above picks. Besides
// the file's form, it checks each IA's ia_params and platform_params as
// far as its provider can without opening the IA (provider.ParamChecker):
// a malformed address or an unknown option is a problem at its position.
// A valid file is reported on standard output, with notes (IAs this build
// cannot open) and warnings ("file:line:column: warning: message"; a file
// that defines no IA), which do not change the exit status.
//
// --json prints machine-readable JSON on standard output instead of text.
// Every key, at every depth, is snake_case (lower-case words joined by
// underscores): the configuration's keys as dat.conf.example spells them,
// and the IA and provider attributes by their api field names in that
// form (api.IAAttr.MaxEPs is "max_eps"). Keys are stable: new ones may be
// added, none is renamed or removed. See listJSON (listing) and checkJSON
// (check) in this package for every key.
//
// Exit status:
//
//	0  success: the listing shows at least one IA that opens; for check,
//	   every file is valid
//	1  a configuration is invalid or cannot be read, or another error
//	   (an IA that fails to close)
//	2  usage error: unknown flag or command
//	3  the listing is complete, but no IA can be opened: every one is
//	   unavailable (a provider missing, a device or address absent) or
//	   none is configured; the table's last line says so
//
// Exit 0 from a listing means this machine can run a DAT program; check
// opens no IA and never exits 3.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/godat/godat/registry"
	_ "github.com/godat/godat/registry/all"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitNoIA    = 3
)

// openTimeout bounds the opening of one IA, beyond the start of a plugin
// process: host.StartTimeout bounds that, and only a plugin that stays
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
  0  success: an IA can be opened (check: every file is valid)
  1  invalid or unreadable configuration, or another error
  2  usage error
  3  no IA can be opened (listing only)
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
