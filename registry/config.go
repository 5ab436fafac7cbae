package registry

// Configuration files: the types, format detection and the checks that
// both forms share. The TOML reader is in config_toml.go, the classic
// dat.conf(5) reader in config_classic.go, the search order and the
// embedded default in config_load.go.
//
// Decisions written down here (DESIGN §6 is silent on them):
//
//   - The format is detected from the first line that is neither blank nor
//     a comment: a line that starts with "[" or with a (dotted) key followed
//     by "=" is TOML, anything else is the classic form. A file with no such
//     line is an empty TOML file.
//   - api_version is "u<major>.<minor>" in decimal; godat accepts major 2
//     only. In a TOML file anything else is an error. In a classic file a
//     well-formed version of another major (the u1.2 lines that older
//     distributions ship next to their u2.0 lines) makes that IA
//     unavailable instead, like a library godat does not provide, so that a
//     system /etc/dat.conf stays usable as-is.
//   - In the classic form, default|nondefault is dat.conf(5)'s marker of the
//     default library version of an IA and real files mark every line
//     "default"; several defaults are therefore allowed there (OpenDefault
//     takes the first that exists on the host: Registry.DefaultIAs). A
//     TOML file may mark at most one IA default.
//   - Columns are 1-based byte offsets within the line, as the Go tools
//     count them; a UTF-8 byte order mark at the start is skipped.
//   - A file larger than MaxConfigSize is refused as a whole; LoadConfig
//     reports the size the file has, not what it read of it. LoadConfig
//     reads regular files only (a FIFO, a device or a directory is
//     refused after an open that does not block), and a named file that
//     does not exist is DAT_PROVIDER_NOT_FOUND (see LoadConfig).
//   - The ia_params and platform_params of an IA whose provider is built
//     in and implements ParamChecker are checked while the file is read,
//     in both forms: what the provider refuses by form alone is a problem
//     of the file at the position of the value (of the entry, for a key
//     that is absent), as any other. So ParseConfig's answer depends on
//     the providers linked into the program; an IA whose provider is
//     missing, or is a [[plugin]], is not checked (it is unavailable, or
//     its plugin runs only at Open). What the host decides (does the
//     address or the device exist here) is left to Open.
//   - A duplicate IA name is reported where the repeated name is, and
//     names the earlier IA by where its entry starts, as listings do.
//   - godat's built-in IAs (loopback, tcp) are not only the fallback when
//     no file is found: LoadConfig adds each after the file's own IAs
//     unless the file defines that name, in either form, so that a system
//     /etc/dat.conf written by a uDAPL installation, or a TOML file that
//     lists only hardware, does not take them away. A file that wants
//     other settings for one of them defines an IA of that name. Added
//     built-ins are never marked default: the file's choice stands, and
//     OpenDefault opens a built-in one only when the file has no IA.
//     ParseConfig returns the file's IAs alone.
//   - A classic line naming godat's own C library (basename libdat2.so.2,
//     or starting with libdatgodat) is what a uDAPL registry loads godat
//     through; godat reads it as an alias: ia_params names a godat IA (of
//     the same file, else built in) and the line's IA opens what that one
//     opens. An alias of an alias, or of a name nothing defines, is
//     unavailable with the reason.

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/godat/godat/api"
)

// Position is a place in a configuration file, for error messages.
type Position struct {
	File string
	Line int // 1-based; 0 when unknown
	Col  int // 1-based; 0 when unknown
}

// String formats the position as file:line:column.
func (p Position) String() string {
	return p.File + ":" + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col)
}

// IAEntry is one IA of a configuration file: every field of a dat.conf line
// (dat.conf(5)), in either the TOML or the classic form.
type IAEntry struct {
	Name            string // ia_name
	Provider        string // registered provider (or plugin) name
	APIVersion      string // "u2.0"
	ThreadSafe      bool
	Default         bool
	ProviderVersion string
	IAParams        string
	PlatformParams  string
	// Hooks are the guard hooks switched on for the IA (TOML form only):
	// "count" (Counts), "trace" (every call but those of the data path,
	// logged) and "trace-data" (every call logged). See WithTraceLogger.
	Hooks   []string
	Library string   // classic form only: the library the line names
	Pos     Position // where the entry starts
	// Unavailable, when not empty, says why this IA cannot be opened even
	// though the file is valid (e.g. a classic line naming a library godat
	// does not provide).
	Unavailable string
	// BuiltIn marks one of godat's built-in IAs (those of EmbeddedConfig):
	// the whole embedded configuration, or a built-in IA that LoadConfig
	// added after a file's own IAs because the file does not define its
	// name. Pos then points into the embedded default.
	BuiltIn bool
	// AliasOf is set on a classic line that names godat's own C library
	// (libdat2.so.2, libdatgodat*): the name of the godat IA the line
	// stands for, from its ia_params. Provider, ThreadSafe, IAParams,
	// PlatformParams and Hooks are then those of that IA (an IA of the same
	// file, else a built-in one), or Unavailable says why there are none.
	AliasOf string
}

// OriginBuiltIn is the Origin of a built-in IA.
const OriginBuiltIn = "built-in"

// Origin says where the IA comes from: "file:line" of its entry, or
// OriginBuiltIn for one of godat's built-in IAs.
func (e IAEntry) Origin() string {
	if e.BuiltIn {
		return OriginBuiltIn
	}
	return e.Pos.File + ":" + strconv.Itoa(e.Pos.Line)
}

// Config is a parsed configuration file.
type Config struct {
	File   string // path, or "<embedded>"
	Format string // "toml", "classic" or "embedded"
	// Source says how LoadConfig chose the file: "argument" (the caller's
	// path), "DAT_OVERRIDE", "system" (SystemConfigPath) or "embedded".
	// ParseConfig leaves it empty.
	Source string
	// IAs are the file's IAs in file order; from LoadConfig, followed by
	// the built-in IAs whose names the file does not define (BuiltIn set).
	IAs     []IAEntry
	Plugins []PluginEntry // the [[plugin]] tables (TOML form only), in file order
}

// ConfigError is one problem found in a configuration file. Pos.Line is
// always at least 1; Msg says what was found and what was expected.
type ConfigError struct {
	Pos Position
	Msg string
}

// Error formats the problem as "file:line:column: message".
func (e ConfigError) Error() string { return e.Pos.String() + ": " + e.Msg }

// ConfigErrors is every problem found in one file, sorted by position. It
// is the Cause of the *api.Error that ParseConfig and LoadConfig return for
// an invalid file, so that a caller can print one line per problem:
//
//	var ce registry.ConfigErrors
//	if errors.As(err, &ce) { for _, e := range ce { fmt.Println(e) } }
type ConfigErrors []ConfigError

// Error returns the first problem and how many more there are.
func (es ConfigErrors) Error() string {
	switch len(es) {
	case 0:
		return "no errors"
	case 1:
		return es[0].Error()
	}
	return fmt.Sprintf("%s (and %d more errors)", es[0].Error(), len(es)-1)
}

// MaxConfigSize is the largest configuration file ParseConfig reads, in
// bytes. A dat.conf is a few kilobytes; the limit keeps a wrong path (a
// log, a device) from being read whole.
const MaxConfigSize = 1 << 20

// maxReported is how many problems ParseConfig reports for one file; the
// rest are summed up in a last message.
const maxReported = 50

// Configuration formats, as Config.Format reports them.
const (
	FormatTOML     = "toml"
	FormatClassic  = "classic"
	FormatEmbedded = "embedded"
)

// ParseConfig parses a configuration file in either form (see
// dat.conf.example and dat.conf(5)); name is used in positions only. The
// form is detected from the first line that is not blank or a comment.
//
// On success it returns a Config whose Format is "toml" or "classic" and
// whose IAs are in file order, each with the position where it starts. An
// IA that the file describes correctly but godat cannot serve (a classic
// line naming a library godat does not provide, or a DAT 1.x version) is
// returned with Unavailable set; it does not make the file invalid. The
// built-in IAs are not added (LoadConfig adds them); a classic alias line
// (IAEntry.AliasOf) is resolved against the file and the built-in IAs.
//
// On failure it returns a nil Config and an *api.Error of type
// InvalidParameter whose Cause is a ConfigErrors listing every problem
// found (a TOML syntax error stops the reading at that point; everything
// else is collected), each with Line >= 1. ParseConfig never panics.
func ParseConfig(name string, data []byte) (*Config, error) {
	var errs errList
	errs.file = name
	var cfg *Config
	switch {
	case len(data) > MaxConfigSize:
		return nil, tooLarge(name, strconv.Itoa(len(data)))
	case looksUTF16(data):
		errs.add(1, 1, "file looks like UTF-16 text; expected UTF-8")
	default:
		data = bytes.TrimPrefix(data, utf8BOM)
		if detectTOML(data) {
			cfg = parseTOML(name, data, &errs)
		} else {
			cfg = parseClassic(name, data, &errs)
		}
	}
	if len(errs.list) > 0 {
		return nil, errs.err()
	}
	return cfg, nil
}

// tooLarge is the error of a file of size bytes (a number, or a phrase
// such as "more than 1048576"), over MaxConfigSize.
func tooLarge(name, size string) error {
	errs := errList{file: name}
	errs.add(1, 1, fmt.Sprintf("file is %s bytes; expected a configuration of at most %d bytes", size, MaxConfigSize))
	return errs.err()
}

var utf8BOM = []byte("\xef\xbb\xbf")

// looksUTF16 reports a UTF-16 byte order mark or a NUL byte near the start.
func looksUTF16(data []byte) bool {
	if bytes.HasPrefix(data, []byte("\xff\xfe")) || bytes.HasPrefix(data, []byte("\xfe\xff")) {
		return true
	}
	return bytes.IndexByte(data[:min(len(data), 8)], 0) >= 0
}

// detectTOML reports whether the first significant line of data is TOML:
// a table header, or a (dotted, possibly quoted) key followed by "=".
func detectTOML(data []byte) bool {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimLeft(line, " \t\r\f\v")
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			return true
		}
		return keyThenEquals(line)
	}
	return true
}

// keyThenEquals reports whether line starts with a TOML key (bare, quoted,
// dotted) followed by "=".
func keyThenEquals(line []byte) bool {
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		start := i
		switch {
		case i < len(line) && (line[i] == '"' || line[i] == '\''):
			q := line[i]
			i++
			for i < len(line) && line[i] != q {
				if q == '"' && line[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(line) {
				return false
			}
			i++
		default:
			for i < len(line) && isBareKeyByte(line[i]) {
				i++
			}
		}
		if i == start {
			return false
		}
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i < len(line) && line[i] == '.' {
			i++
			continue
		}
		return i < len(line) && line[i] == '='
	}
}

func isBareKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// errList collects the problems of one file.
type errList struct {
	file string
	list ConfigErrors
}

// add records a problem at line:col; positions below 1 become 1 so that
// every reported problem has a usable position.
func (l *errList) add(line, col int, msg string) {
	l.list = append(l.list, ConfigError{Pos: Position{File: l.file, Line: max(line, 1), Col: max(col, 1)}, Msg: msg})
}

// addAt records a problem at p.
func (l *errList) addAt(p Position, msg string) { l.add(p.Line, p.Col, msg) }

// err returns the *api.Error for the collected problems: sorted by
// position (stable, so problems at one place keep their order) and capped
// at maxReported.
func (l *errList) err() error {
	list := l.list
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i].Pos, list[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	if len(list) > maxReported {
		rest := len(list) - maxReported
		next := list[maxReported]
		list = append(list[:maxReported:maxReported], ConfigError{Pos: next.Pos,
			Msg: fmt.Sprintf("too many errors: %d more not shown", rest)})
	}
	return &api.Error{Type: api.InvalidParameter, Msg: "invalid DAT configuration " + l.file, Cause: list}
}

// The keys of an [[ia]] table, in the order dat.conf(5) gives the fields.
const (
	keyName            = "name"
	keyProvider        = "provider"
	keyAPIVersion      = "api_version"
	keyThreadSafe      = "threadsafe"
	keyDefault         = "default"
	keyProviderVersion = "provider_version"
	keyIAParams        = "ia_params"
	keyPlatformParams  = "platform_params"
	keyHooks           = "hooks" // godat's own: the guard hooks to switch on
)

var iaKeys = []string{keyName, keyProvider, keyAPIVersion, keyThreadSafe, keyDefault,
	keyProviderVersion, keyIAParams, keyPlatformParams, keyHooks}

// maxIANameLen is DAT_NAME_MAX_LENGTH less the terminating NUL.
const maxIANameLen = 255

// checkIAName returns what is wrong with an IA name, or "". A name must be
// writable in either form: 1 to 255 bytes of printable UTF-8 without
// spaces, quotes or '#'.
func checkIAName(s string) string {
	const want = "expected an IA name of 1 to 255 printable characters without spaces, quotes or '#'"
	switch {
	case s == "":
		return "empty IA name; " + want
	case len(s) > maxIANameLen:
		return fmt.Sprintf("IA name is %d bytes long; %s", len(s), want)
	}
	if r, ok := badNameRune(s); !ok {
		return fmt.Sprintf("IA name %q contains %q; %s", s, r, want)
	}
	return ""
}

// checkProviderName returns what is wrong with a provider name, or "".
func checkProviderName(s string) string {
	const want = "expected the name of a built-in provider (such as \"loopback\" or \"tcp\") or of a plugin: printable characters without spaces, quotes or '#'"
	if s == "" {
		return "empty provider name; " + want
	}
	if r, ok := badNameRune(s); !ok {
		return fmt.Sprintf("provider name %q contains %q; %s", s, r, want)
	}
	return ""
}

// badNameRune returns the first rune of s that a name may not contain.
func badNameRune(s string) (rune, bool) {
	if !utf8.ValidString(s) {
		return utf8.RuneError, false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) || r == '"' || r == '\'' || r == '#' {
			return r, false
		}
	}
	return 0, true
}

// apiVersion is a parsed api_version.
type apiVersion struct {
	kernel       bool // "k" prefix: kDAPL
	major, minor uint64
}

// parseAPIVersion parses "u<major>.<minor>" (or "k<major>.<minor>", kDAPL)
// with decimal numbers of 1 to 4 digits. ok is false when s does not have
// that shape.
func parseAPIVersion(s string) (v apiVersion, ok bool) {
	if len(s) < 4 || (s[0] != 'u' && s[0] != 'k') {
		return v, false
	}
	v.kernel = s[0] == 'k'
	maj, mnr, found := strings.Cut(s[1:], ".")
	if !found || !isDigits(maj) || !isDigits(mnr) {
		return v, false
	}
	v.major, _ = strconv.ParseUint(maj, 10, 32)
	v.minor, _ = strconv.ParseUint(mnr, 10, 32)
	return v, true
}

func isDigits(s string) bool {
	if s == "" || len(s) > 4 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// checkAPIVersion classifies an api_version: bad is a malformed version
// (always an error); other is a well-formed version godat does not
// implement (an error in TOML, an unavailable IA in the classic form).
func checkAPIVersion(s string) (bad, other string) {
	const want = `expected "u2.<minor>" such as "u2.0" (godat implements the uDAPL 2.x API)`
	v, ok := parseAPIVersion(s)
	switch {
	case !ok:
		return fmt.Sprintf("api_version %q is malformed; %s", s, want), ""
	case v.kernel:
		return "", fmt.Sprintf("api_version %q is the kernel kDAPL API; %s", s, want)
	case v.major != 2:
		return "", fmt.Sprintf("api_version %q is DAT %d.x; %s", s, v.major, want)
	}
	return "", ""
}

// suggest returns " (did you mean X?)" when one of the known words is
// within two edits of w, else "".
func suggest(w string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(w), k, bestD); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// editDistance is the Levenshtein distance of a and b, or limit when it is
// at least limit (long inputs give up early).
func editDistance(a, b string, limit int) int {
	if len(a) > 64 || len(b) > 64 {
		return limit
	}
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}

// duplicateChecker finds repeated IA names.
type duplicateChecker map[string]Position

// check records the name of the IA whose entry starts at entry, and
// returns an error message if an earlier IA has the name. The message
// names the earlier IA by where its entry starts (IAEntry.Pos, as
// listings show it); the caller reports the message where the repeated
// name is.
func (d duplicateChecker) check(name string, entry Position) string {
	if first, dup := d[name]; dup {
		return fmt.Sprintf("duplicate IA name %q: the IA at %s already has it; expected each IA name once", name, first)
	}
	d[name] = entry
	return ""
}

// checkParams asks e's provider, when it is built in and a ParamChecker,
// what is wrong with e's ia_params and platform_params, and records each
// problem at iaAt or platformAt. An IA whose provider is one of plugins
// is not checked: a plugin runs only when its IA is opened.
func checkParams(plugins []PluginEntry, e IAEntry, iaAt, platformAt Position, errs *errList) {
	if e.Provider == "" || slices.ContainsFunc(plugins, func(p PluginEntry) bool { return p.Name == e.Provider }) {
		return
	}
	p, _ := lookupProvider(e.Provider)
	c, ok := p.(ParamChecker)
	if !ok {
		return
	}
	iaErr, platformErr := c.CheckParams(api.OpenParams{Name: e.Name, Params: e.IAParams, PlatformParams: e.PlatformParams, ThreadSafe: e.ThreadSafe})
	if iaErr != nil {
		errs.addAt(iaAt, errorText(iaErr))
	}
	if platformErr != nil {
		errs.addAt(platformAt, errorText(platformErr))
	}
}

// errorText is err's message without the DAT return code in front.
func errorText(err error) string {
	var de *api.Error
	if errors.As(err, &de) && de.Msg != "" {
		return de.Msg
	}
	return err.Error()
}
