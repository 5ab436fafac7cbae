package registry

// The classic form of dat.conf(5): one IA per line, eight fields separated
// by blanks,
//
//	ia_name api_version threadsafety default lib_path provider_version ia_params platform_params
//
// e.g. `ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "ib0 0" ""`.
//
// The grammar godat reads: a field is a run of non-blank bytes, or a text
// in double quotes (no escapes; it may be empty and may hold spaces, tabs
// and '#'). Blanks are spaces, tabs, CR, FF and VT. Outside quotes, '#' starts a
// comment that runs to the end of the line. A line holds exactly eight
// fields or none. A closing quote must be followed by a blank, a comment
// or the end of the line, and a quote may not appear inside a bare field.
// Control characters and invalid UTF-8 are errors.
//
// lib_path says which provider serves the IA: libgodat-<provider>.so (any
// version suffix, any directory) is godat's built-in <provider>; the uDAPL
// libraries of rdma-core, libdaplofa.so, libdaploscm.so and libdaploucm.so
// (with or without the .2 suffix) are served by "verbs", with the line's
// ia_params unchanged: the verbs provider reads OFA's forms ("mlx5_0 1",
// a device and port; "ib0 0", a netdev; an IP address), so that the IA of
// an ofa-v2-* line is the same adapter through godat as through uDAPL.
// godat's own C library (libdat2.so.2, libdatgodat*) makes the line an
// alias of the godat IA its ia_params names (IAEntry.AliasOf). Any other
// library leaves the file valid and the IA unavailable, with the reason.

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// classicFields names the eight fields of a classic line, in order.
var classicFields = [...]string{"ia_name", "api_version", "threadsafety", "default",
	"lib_path", "provider_version", "ia_params", "platform_params"}

// verbsLibraries are the uDAPL libraries that godat's verbs provider
// replaces.
var verbsLibraries = []string{"libdaplofa.so", "libdaploscm.so", "libdaploucm.so"}

// classicField is one field of a line and where it starts.
type classicField struct {
	text string
	col  int
}

func parseClassic(name string, data []byte, errs *errList) *Config {
	cfg := &Config{File: name, Format: FormatClassic}
	names := duplicateChecker{}
	for lineNo := 1; len(data) > 0; lineNo++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		fields, ok := splitClassicLine(line, lineNo, errs)
		if !ok || len(fields) == 0 {
			continue
		}
		pos := func(f int) Position { return Position{File: name, Line: lineNo, Col: fields[f].col} }
		if len(fields) != len(classicFields) {
			if looksLikeTOML(line) {
				errs.add(lineNo, fields[0].col, "this line looks like TOML, but the file was read in the classic dat.conf form "+
					"because its first entry is classic; expected one form per file")
				continue
			}
			if len(fields) < len(classicFields) {
				n := "1 field"
				if len(fields) > 1 {
					n = fmt.Sprintf("%d fields", len(fields))
				}
				errs.add(lineNo, len(line)+1, fmt.Sprintf("line has %s, missing %s; expected 8 fields: %s",
					n, strings.Join(classicFields[len(fields):], ", "), strings.Join(classicFields[:], " ")))
			} else {
				errs.addAt(pos(len(classicFields)), fmt.Sprintf("unexpected field %q: line has %d fields; expected 8: %s",
					fields[len(classicFields)].text, len(fields), strings.Join(classicFields[:], " ")))
			}
			continue
		}

		e := IAEntry{
			Name:            fields[0].text,
			APIVersion:      fields[1].text,
			Library:         fields[4].text,
			ProviderVersion: fields[5].text,
			IAParams:        fields[6].text,
			PlatformParams:  fields[7].text,
			Pos:             pos(0),
		}
		bad := false
		if msg := checkIAName(e.Name); msg != "" {
			errs.addAt(pos(0), msg)
			bad = true
		} else if msg := names.check(e.Name, pos(0)); msg != "" {
			errs.addAt(pos(0), msg)
			bad = true
		}
		badVersion, otherVersion := checkAPIVersion(e.APIVersion)
		if badVersion != "" {
			errs.addAt(pos(1), badVersion)
			bad = true
		}
		// either reports whether field f, which must be yes or no, is yes.
		either := func(f int, what, yes, no string) bool {
			switch fields[f].text {
			case yes:
				return true
			case no:
				return false
			}
			errs.addAt(pos(f), fmt.Sprintf("%s is %q; expected %s or %s", what, fields[f].text, yes, no))
			bad = true
			return false
		}
		e.ThreadSafe = either(2, "threadsafety", "threadsafe", "nonthreadsafe")
		e.Default = either(3, "default", "default", "nondefault")
		if e.Library == "" {
			errs.addAt(pos(4), "lib_path is empty; expected the provider library, e.g. libgodat-tcp.so or libdaplofa.so.2")
			bad = true
		}
		if bad {
			continue
		}
		var why string
		if isGodatCLibrary(e.Library) {
			e.AliasOf, why = aliasTarget(e.IAParams)
		} else {
			e.Provider, why = libraryProvider(e.Library)
		}
		switch {
		case otherVersion != "":
			e.Unavailable = otherVersion
		case why != "":
			e.Unavailable = why
		default:
			checkParams(nil, e, pos(6), pos(7), errs)
		}
		cfg.IAs = append(cfg.IAs, e)
	}
	resolveAliases(cfg.IAs)
	return cfg
}

// isGodatCLibrary reports whether lib is godat's own C library, the one a
// uDAPL registry loads to reach godat: libdat2.so.2, or a name starting
// with libdatgodat.
func isGodatCLibrary(lib string) bool {
	base := path.Base(lib)
	return base == "libdat2.so.2" || strings.HasPrefix(base, "libdatgodat")
}

// aliasTarget returns the IA name that the ia_params of a godat C library
// line gives, or why it gives none.
func aliasTarget(iaParams string) (name, why string) {
	name = strings.TrimSpace(iaParams)
	if msg := checkIAName(name); msg != "" {
		return "", fmt.Sprintf("ia_params %q of a line for godat's C library must name the godat IA it serves, such as \"tcp\": %s", iaParams, msg)
	}
	return name, ""
}

// resolveAliases gives each alias entry (AliasOf set, still available) the
// provider and parameters of the IA it names: an IA of ias, else a built-in
// one; or makes it unavailable with the reason.
func resolveAliases(ias []IAEntry) {
	var builtins []IAEntry
	for i := range ias {
		a := &ias[i]
		if a.AliasOf == "" || a.Unavailable != "" {
			continue
		}
		j := slices.IndexFunc(ias, func(e IAEntry) bool { return e.Name == a.AliasOf })
		var t IAEntry
		if j >= 0 {
			t = ias[j]
		} else {
			if builtins == nil {
				builtins = EmbeddedConfig().IAs
			}
			k := slices.IndexFunc(builtins, func(e IAEntry) bool { return e.Name == a.AliasOf })
			if k < 0 {
				a.Unavailable = fmt.Sprintf("it stands for IA %q (its ia_params), which neither this file nor godat's built-in IAs define", a.AliasOf)
				continue
			}
			t = builtins[k]
		}
		switch {
		case t.AliasOf != "":
			a.Unavailable = fmt.Sprintf("it stands for IA %q (%s), which is itself a line for godat's C library; expected an IA with a provider", a.AliasOf, t.Pos)
		case t.Unavailable != "":
			a.Unavailable = fmt.Sprintf("it stands for IA %q (%s), which is unavailable: %s", a.AliasOf, t.Pos, t.Unavailable)
		default:
			a.Provider, a.ThreadSafe = t.Provider, t.ThreadSafe
			a.IAParams, a.PlatformParams = t.IAParams, t.PlatformParams
			a.Hooks = slices.Clone(t.Hooks)
		}
	}
}

// splitClassicLine splits one line into fields. It reports the first
// problem of the line and returns ok=false when the line cannot be split.
func splitClassicLine(line []byte, lineNo int, errs *errList) (fields []classicField, ok bool) {
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case isClassicBlank(c):
			i++
			continue
		case c == '#':
			return fields, true
		}
		start := i
		if c == '"' {
			end := bytes.IndexByte(line[i+1:], '"')
			if end < 0 {
				errs.add(lineNo, i+1, `unterminated quoted field; expected a closing " on the same line`)
				return fields, false
			}
			text := line[i+1 : i+1+end]
			if j, msg := firstBadByte(text, true); msg != "" {
				errs.add(lineNo, i+2+j, msg)
				return fields, false
			}
			i += end + 2
			if i < len(line) && !isClassicBlank(line[i]) && line[i] != '#' {
				errs.add(lineNo, i+1, fmt.Sprintf("unexpected %q after a closing quote; expected a blank between fields", rune(line[i])))
				return fields, false
			}
			fields = append(fields, classicField{text: string(text), col: start + 1})
			continue
		}
		for i < len(line) && !isClassicBlank(line[i]) && line[i] != '#' {
			i++
		}
		text := line[start:i]
		if j := bytes.IndexByte(text, '"'); j >= 0 {
			errs.add(lineNo, start+j+1, `unexpected " inside a field; expected quotes around the whole field`)
			return fields, false
		}
		if j, msg := firstBadByte(text, false); msg != "" {
			errs.add(lineNo, start+j+1, msg)
			return fields, false
		}
		fields = append(fields, classicField{text: string(text), col: start + 1})
	}
	return fields, true
}

func isClassicBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'
}

// firstBadByte returns the offset of the first invalid UTF-8 byte or
// control character of b, with a message; msg is "" when b is clean. A tab
// is allowed inside quotes.
func firstBadByte(b []byte, quoted bool) (int, string) {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return i, fmt.Sprintf("invalid UTF-8 byte 0x%02x; expected UTF-8 text", b[i])
		case r == '\t' && quoted:
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return i, fmt.Sprintf("control character %U; expected printable text", r)
		}
		i += size
	}
	return 0, ""
}

// looksLikeTOML reports a table header or a key = value line.
func looksLikeTOML(line []byte) bool {
	line = bytes.TrimLeft(line, " \t\r\f\v")
	return len(line) > 0 && line[0] == '[' || keyThenEquals(line)
}

// libraryProvider maps a classic lib_path to the godat provider that
// serves it, or returns why none does.
func libraryProvider(lib string) (provider, why string) {
	base := path.Base(lib)
	if rest, ok := strings.CutPrefix(base, "libgodat-"); ok {
		i := strings.Index(rest, ".so")
		if i > 0 && (len(rest) == i+3 || rest[i+3] == '.') && checkProviderName(rest[:i]) == "" {
			return rest[:i], ""
		}
	}
	for _, v := range verbsLibraries {
		if base == v || base == v+".2" {
			return "verbs", ""
		}
	}
	return "", fmt.Sprintf("godat does not provide library %s (it provides libgodat-<provider>.so, its C library libdat2.so.2 and, with \"verbs\", %s)",
		lib, strings.Join(verbsLibraries, ".2, ")+".2")
}
