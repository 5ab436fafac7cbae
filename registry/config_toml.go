package registry

// The TOML form (DESIGN §6, dat.conf.example): one [[ia]] table per IA.
//
// BurntSushi/toml checks the syntax and gives the values and their types,
// but keeps no public position for keys (and one position per key name in
// an array of tables, where each [[ia]] repeats the same names). So once a
// file has parsed, scanTOML walks it again, cheaply, and records where each
// table header and each key starts; every later problem is reported there.

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// The array tables the TOML form knows.
const (
	tableIA     = "ia"
	tablePlugin = "plugin"
)

var knownTables = []string{tableIA, tablePlugin}

func parseTOML(name string, data []byte, errs *errList) *Config {
	doc, err := decodeTOML(data)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			line, col := lineCol(data, pe.Position.Start, pe.Position.Line)
			errs.add(line, col, "TOML syntax error: "+pe.Message+tomlUsage(pe))
		} else {
			errs.add(1, 1, "TOML: "+err.Error())
		}
		return nil
	}
	idx := scanTOML(data)
	pos := func(l loc) Position { return Position{File: name, Line: l.line, Col: l.col} }

	for _, k := range sortedKeys(doc) {
		if slices.Contains(knownTables, k) {
			continue
		}
		kind, at := idx.topKey(k)
		var msg string
		switch kind {
		case "[[":
			msg = fmt.Sprintf("unknown table [[%s]]; expected only [[ia]] and [[plugin]] tables", toml.Key{k})
		case "[":
			msg = fmt.Sprintf("unknown table [%s]; expected only [[ia]] and [[plugin]] tables", toml.Key{k})
		default:
			msg = fmt.Sprintf("unknown top-level key %s; expected only [[ia]] and [[plugin]] tables", toml.Key{k})
		}
		errs.addAt(pos(at), msg+suggest(k, knownTables))
	}

	cfg := &Config{File: name, Format: FormatTOML}
	cfg.Plugins = parsePluginTables(name, doc, idx, errs)
	raw, present := doc[tableIA]
	if !present {
		return cfg
	}
	tables, ok := raw.([]map[string]any)
	if !ok || len(tables) != idx.count(tableIA) {
		_, at := idx.topKey(tableIA)
		errs.addAt(pos(at), fmt.Sprintf("ia is %s; expected one [[ia]] table per IA", describeTOMLValue(raw)))
		return nil
	}

	names := duplicateChecker{}
	var firstDefault *IAEntry
	for i, t := range tables {
		r := tomlTable{kind: tableIA, i: i, t: t, idx: idx, pos: pos, errs: errs}
		keyPos, valPos, str, boolean := r.keyPos, r.valPos, r.str, r.boolean
		e := IAEntry{Pos: r.header()}
		r.onlyKeys(iaKeys)

		if str(keyName, true, &e.Name) {
			if msg := checkIAName(e.Name); msg != "" {
				errs.addAt(valPos(keyName), msg)
			} else if msg := names.check(e.Name, e.Pos); msg != "" {
				errs.addAt(keyPos(keyName), msg)
			}
		}
		if str(keyProvider, true, &e.Provider) {
			if msg := checkProviderName(e.Provider); msg != "" {
				errs.addAt(valPos(keyProvider), msg)
			}
		}
		if str(keyAPIVersion, true, &e.APIVersion) {
			bad, other := checkAPIVersion(e.APIVersion)
			if bad == "" {
				bad = other
			}
			if bad != "" {
				errs.addAt(valPos(keyAPIVersion), bad)
			}
		}
		boolean(keyThreadSafe, &e.ThreadSafe)
		if boolean(keyDefault, &e.Default) && e.Default {
			if firstDefault != nil {
				errs.addAt(keyPos(keyDefault), fmt.Sprintf("IA %q is marked default but IA %q (%s) already is; expected at most one default = true",
					e.Name, firstDefault.Name, firstDefault.Pos))
			} else {
				firstDefault = &e
			}
		}
		str(keyProviderVersion, false, &e.ProviderVersion)
		str(keyIAParams, false, &e.IAParams)
		str(keyPlatformParams, false, &e.PlatformParams)
		if v, ok := t[keyHooks]; ok {
			e.Hooks = parseHooks(v, valPos(keyHooks), errs)
		}
		checkParams(cfg.Plugins, e, valPos(keyIAParams), valPos(keyPlatformParams), errs)
		cfg.IAs = append(cfg.IAs, e)
	}
	return cfg
}

// tomlTable reads the i-th [[kind]] table t of a file, reporting each
// problem at the position of the key or value it concerns.
type tomlTable struct {
	kind string
	i    int
	t    map[string]any
	idx  *tomlIndex
	pos  func(loc) Position
	errs *errList
}

func (r *tomlTable) header() Position         { return r.pos(r.idx.header(r.kind, r.i)) }
func (r *tomlTable) keyPos(k string) Position { return r.pos(r.idx.key(r.kind, r.i, k)) }
func (r *tomlTable) valPos(k string) Position { return r.pos(r.idx.value(r.kind, r.i, k)) }

// onlyKeys reports every key of the table that known does not list.
func (r *tomlTable) onlyKeys(known []string) {
	for _, k := range sortedKeys(r.t) {
		if !slices.Contains(known, k) {
			r.errs.addAt(r.keyPos(k), fmt.Sprintf("unknown key %s in [[%s]]%s; expected one of %s",
				toml.Key{k}, r.kind, suggest(k, known), strings.Join(known, ", ")))
		}
	}
}

// str sets *dst to the string value of key k and reports whether there
// was one; a value of another type, or a missing required key, is
// reported.
func (r *tomlTable) str(k string, required bool, dst *string) bool {
	if _, ok := r.t[k]; !ok && required {
		r.errs.addAt(r.header(), fmt.Sprintf("[[%s]] table has no %s; expected %s = \"...\" (required)", r.kind, k, k))
		return false
	}
	return tomlValue(r, k, dst, "a string")
}

// boolean sets *dst to the boolean value of key k and reports whether
// there was one; a value of another type is reported.
func (r *tomlTable) boolean(k string, dst *bool) bool {
	return tomlValue(r, k, dst, "true or false (a TOML boolean, not quoted)")
}

// tomlValue sets *dst to the value of key k if it is a T and reports
// whether it did; a value of another type is reported as not the expected
// one.
func tomlValue[T any](r *tomlTable, k string, dst *T, expected string) bool {
	v, ok := r.t[k]
	if !ok {
		return false
	}
	x, ok := v.(T)
	if !ok {
		r.errs.addAt(r.valPos(k), fmt.Sprintf("%s is %s; expected %s", k, describeTOMLValue(v), expected))
		return false
	}
	*dst = x
	return true
}

// parseHooks reads the hooks key of an [[ia]] table, at, an array of
// distinct hook names.
func parseHooks(v any, at Position, errs *errList) []string {
	list, ok := v.([]any)
	if !ok {
		errs.addAt(at, fmt.Sprintf("%s is %s; expected an array of hook names, such as [%q]", keyHooks, describeTOMLValue(v), hookCount))
		return nil
	}
	var out []string
	for i, x := range list {
		n, ok := x.(string)
		switch {
		case !ok:
			errs.addAt(at, fmt.Sprintf("%s[%d] is %s; expected a string, one of %s", keyHooks, i, describeTOMLValue(x), strings.Join(hookNames, ", ")))
		case !slices.Contains(hookNames, n):
			errs.addAt(at, fmt.Sprintf("%s[%d] is %q%s; expected one of %s", keyHooks, i, n, suggest(n, hookNames), strings.Join(hookNames, ", ")))
		case slices.Contains(out, n):
			errs.addAt(at, fmt.Sprintf("%s[%d] repeats %q; expected each hook once", keyHooks, i, n))
		default:
			out = append(out, n)
		}
	}
	return out
}

// decodeTOML parses data into generic values. A panic inside the TOML
// library (which it uses for its own errors and should never leak) becomes
// an error rather than a crash.
func decodeTOML(data []byte) (doc map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, fmt.Errorf("the TOML reader failed on this file: %v", r)
		}
	}()
	_, err = toml.Decode(string(data), &doc)
	return doc, err
}

// tomlUsage returns the first line of the library's usage hint, if any.
func tomlUsage(pe toml.ParseError) string {
	u := strings.TrimSpace(pe.Usage)
	if u == "" {
		return ""
	}
	u, _, _ = strings.Cut(u, "\n")
	return " (" + strings.TrimSpace(u) + ")"
}

// lineCol converts a byte offset of data into a 1-based line and column.
// An offset outside data falls back to line fallback, column 1.
func lineCol(data []byte, off, fallback int) (line, col int) {
	if off < 0 || off > len(data) {
		return max(fallback, 1), 1
	}
	line, start := 1, 0
	for i := 0; i < off; i++ {
		if data[i] == '\n' {
			line++
			start = i + 1
		}
	}
	return line, off - start + 1
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// describeTOMLValue names the TOML type of a decoded value, with the value
// when it is short, for "found X; expected Y" messages.
func describeTOMLValue(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) <= 40 {
			return "the string " + strconv.Quote(x)
		}
		return "a string"
	case bool:
		return "the boolean " + strconv.FormatBool(x)
	case int64:
		return "the integer " + strconv.FormatInt(x, 10)
	case float64:
		return "a float"
	case time.Time:
		return "a date/time"
	case []map[string]any:
		return "an array of tables"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("a value of type %T", v)
}

// loc is a 1-based line and byte column.
type loc struct{ line, col int }

// tomlStmt is a table header or a key found by scanTOML.
type tomlStmt struct {
	header bool     // [table] or [[array]]
	array  bool     // [[array]]
	path   []string // the header's name, or the (dotted) key
	table  int      // for a key: index in tomlIndex.stmts of its header, -1 at the top level
	at     loc      // the header's '[' or the key's first byte
	val    loc      // for a key: the value's first byte
}

// tomlIndex is where the statements of a TOML file start.
type tomlIndex struct {
	stmts  []tomlStmt
	arrays map[string][]int // indexes in stmts of the [[name]] headers, by name
}

// isArrayHeader reports a [[name]] header of a top-level array of tables.
func (s *tomlStmt) isArrayHeader() bool {
	return s.header && s.array && len(s.path) == 1
}

// count returns how many [[table]] headers the file has.
func (x *tomlIndex) count(table string) int { return len(x.arrays[table]) }

// topKey returns how top-level name first appears ("[[", "[" or "" for a
// key) and where.
func (x *tomlIndex) topKey(name string) (kind string, at loc) {
	for _, s := range x.stmts {
		if len(s.path) == 0 || s.path[0] != name {
			continue
		}
		switch {
		case s.header && s.array && len(s.path) == 1:
			return "[[", s.at
		case s.header:
			return "[", s.at
		case s.table < 0:
			return "", s.at
		}
	}
	return "", loc{1, 1}
}

// header returns where the i-th [[table]] table starts.
func (x *tomlIndex) header(table string, i int) loc {
	if hs := x.arrays[table]; i >= 0 && i < len(hs) {
		return x.stmts[hs[i]].at
	}
	_, at := x.topKey(table)
	return at
}

// key returns where key k of the i-th [[table]] table is defined: a key
// line inside the table, or a [table.k] sub-table header that follows it;
// the table's header when neither is found.
func (x *tomlIndex) key(table string, i int, k string) loc {
	at, _ := x.keyValue(table, i, k)
	return at
}

// value is key for the value of the key (the key itself when the key is
// a dotted one or a sub-table).
func (x *tomlIndex) value(table string, i int, k string) loc {
	_, val := x.keyValue(table, i, k)
	return val
}

func (x *tomlIndex) keyValue(table string, i int, k string) (at, val loc) {
	hs := x.arrays[table]
	if i < 0 || i >= len(hs) {
		at = x.header(table, i)
		return at, at
	}
	h := hs[i]
	for j := h + 1; j < len(x.stmts); j++ {
		s := &x.stmts[j]
		if s.isArrayHeader() {
			break
		}
		if !s.header && s.table == h && len(s.path) > 0 && s.path[0] == k {
			if len(s.path) > 1 {
				return s.at, s.at
			}
			return s.at, s.val
		}
		if s.header && len(s.path) > 1 && s.path[0] == table && s.path[1] == k {
			return s.at, s.at
		}
	}
	return x.stmts[h].at, x.stmts[h].at
}

// tomlScanner walks a TOML document that the library has accepted and
// records its statements. It never fails: on text it does not expect it
// moves on by at least one byte, so it ends on any input.
type tomlScanner struct {
	s         []byte
	i         int
	line      int
	lineStart int
	idx       tomlIndex
}

func scanTOML(data []byte) *tomlIndex {
	sc := &tomlScanner{s: data, line: 1}
	sc.idx.stmts = []tomlStmt{}
	sc.idx.arrays = map[string][]int{}
	table := -1
	for sc.i < len(sc.s) {
		switch c := sc.s[sc.i]; c {
		case ' ', '\t', '\r':
			sc.i++
		case '\n':
			sc.newline()
		case '#':
			sc.skipComment()
		case '[':
			at := sc.loc()
			array := sc.i+1 < len(sc.s) && sc.s[sc.i+1] == '['
			sc.i++
			if array {
				sc.i++
			}
			path := sc.key()
			sc.skipBlank()
			for n := 0; n < 2 && sc.i < len(sc.s) && sc.s[sc.i] == ']'; n++ {
				sc.i++
			}
			table = len(sc.idx.stmts)
			sc.idx.stmts = append(sc.idx.stmts, tomlStmt{header: true, array: array, path: path, table: -1, at: at})
			if st := &sc.idx.stmts[table]; st.isArrayHeader() {
				sc.idx.arrays[st.path[0]] = append(sc.idx.arrays[st.path[0]], table)
			}
		default:
			at := sc.loc()
			start := sc.i
			path := sc.key()
			if sc.i == start {
				sc.i++ // not a key: step over it
				continue
			}
			st := tomlStmt{path: path, table: table, at: at, val: at}
			sc.skipBlank()
			if sc.i < len(sc.s) && sc.s[sc.i] == '=' {
				sc.i++
				sc.skipBlank()
				st.val = sc.loc()
				sc.skipValue()
			}
			sc.idx.stmts = append(sc.idx.stmts, st)
		}
	}
	return &sc.idx
}

func (sc *tomlScanner) loc() loc { return loc{sc.line, sc.i - sc.lineStart + 1} }

func (sc *tomlScanner) newline() {
	sc.i++
	sc.line++
	sc.lineStart = sc.i
}

func (sc *tomlScanner) skipBlank() {
	for sc.i < len(sc.s) && (sc.s[sc.i] == ' ' || sc.s[sc.i] == '\t') {
		sc.i++
	}
}

// skipComment moves to the end of the line (not past the newline).
func (sc *tomlScanner) skipComment() {
	for sc.i < len(sc.s) && sc.s[sc.i] != '\n' {
		sc.i++
	}
}

// key reads a dotted key of bare and quoted parts.
func (sc *tomlScanner) key() []string {
	var path []string
	for {
		sc.skipBlank()
		if sc.i >= len(sc.s) {
			return path
		}
		start := sc.i
		switch sc.s[sc.i] {
		case '"', '\'':
			q := sc.s[sc.i]
			sc.skipString()
			raw := string(sc.s[start:sc.i])
			part := strings.Trim(raw, string(q))
			if q == '"' && strings.Contains(part, `\`) {
				if u, err := strconv.Unquote(raw); err == nil {
					part = u
				}
			}
			path = append(path, part)
		default:
			for sc.i < len(sc.s) && isBareKeyByte(sc.s[sc.i]) {
				sc.i++
			}
			if sc.i == start {
				return path
			}
			path = append(path, string(sc.s[start:sc.i]))
		}
		sc.skipBlank()
		if sc.i < len(sc.s) && sc.s[sc.i] == '.' {
			sc.i++
			continue
		}
		return path
	}
}

// skipValue moves past a value: to the end of its line once every array
// and inline table it opened is closed.
func (sc *tomlScanner) skipValue() {
	depth := 0
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case '"', '\'':
			sc.skipString()
		case '#':
			sc.skipComment()
		case '[', '{':
			depth++
			sc.i++
		case ']', '}':
			depth--
			sc.i++
		case '\n':
			if depth <= 0 {
				return
			}
			sc.newline()
		default:
			sc.i++
		}
	}
}

// skipString moves past a basic, literal or multi-line string that starts
// at sc.i, counting the newlines inside it.
func (sc *tomlScanner) skipString() {
	q := sc.s[sc.i]
	if sc.i+2 < len(sc.s) && sc.s[sc.i+1] == q && sc.s[sc.i+2] == q {
		sc.i += 3
		for sc.i < len(sc.s) {
			c := sc.s[sc.i]
			switch {
			case c == '\\' && q == '"':
				sc.i++
				if sc.i < len(sc.s) && sc.s[sc.i] != '\n' {
					sc.i++
				}
			case c == '\n':
				sc.newline()
			case c == q && sc.i+2 < len(sc.s) && sc.s[sc.i+1] == q && sc.s[sc.i+2] == q:
				// The closing delimiter may be preceded by up to two quotes
				// that belong to the string: take the whole run.
				for sc.i < len(sc.s) && sc.s[sc.i] == q {
					sc.i++
				}
				return
			default:
				sc.i++
			}
		}
		return
	}
	sc.i++
	for sc.i < len(sc.s) && sc.s[sc.i] != '\n' {
		c := sc.s[sc.i]
		sc.i++
		if c == q {
			return
		}
		if c == '\\' && q == '"' && sc.i < len(sc.s) && sc.s[sc.i] != '\n' {
			sc.i++
		}
	}
}
