package registry

// The [[plugin]] tables of the TOML form (DESIGN §6, §7): a provider
// shipped as its own executable. An IA whose provider names a plugin is
// served by the plugin host (package plugin/host), which starts the
// executable on the first Open of one of its IAs.
//
// Decisions written down here:
//
//   - A relative path is relative to the directory of the configuration
//     file, so that a file and the plugins beside it can move together; it
//     is made absolute when the file is read (against the working
//     directory then, for a file named without a directory) and is never
//     looked up in $PATH.
//   - sha256 is 64 hexadecimal digits in either case; it is stored in
//     lower case.
//   - env is a table of strings, added to the environment godat itself
//     runs with (a key there wins over the inherited one).
//   - A plugin name follows the rules of a provider name; two plugins may
//     not share one.

import (
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// PluginEntry is one [[plugin]] table: a provider executable and how to
// start it.
type PluginEntry struct {
	Name string // the name IAs give as their provider
	// Path is the executable, absolute: a relative path in the file is
	// joined to the directory of the configuration file.
	Path   string
	SHA256 string   // expected SHA-256 of the executable in lower-case hex, or ""
	Args   []string // command-line arguments after the program name
	Env    []string // extra environment, "KEY=VALUE", sorted by key
	Pos    Position // where the table starts
}

// The keys of a [[plugin]] table.
const (
	keyPluginName   = "name"
	keyPluginPath   = "path"
	keyPluginSHA256 = "sha256"
	keyPluginArgs   = "args"
	keyPluginEnv    = "env"
)

var pluginKeys = []string{keyPluginName, keyPluginPath, keyPluginSHA256, keyPluginArgs, keyPluginEnv}

// parsePluginTables reads the [[plugin]] tables of a decoded TOML file.
func parsePluginTables(name string, doc map[string]any, idx *tomlIndex, errs *errList) []PluginEntry {
	raw, present := doc[tablePlugin]
	if !present {
		return nil
	}
	pos := func(l loc) Position { return Position{File: name, Line: l.line, Col: l.col} }
	tables, ok := raw.([]map[string]any)
	if !ok || len(tables) != idx.count(tablePlugin) {
		_, at := idx.topKey(tablePlugin)
		errs.addAt(pos(at), fmt.Sprintf("plugin is %s; expected one [[plugin]] table per plugin", describeTOMLValue(raw)))
		return nil
	}
	dir := filepath.Dir(name)
	seen := map[string]Position{}
	var out []PluginEntry
	for i, t := range tables {
		r := tomlTable{kind: tablePlugin, i: i, t: t, idx: idx, pos: pos, errs: errs}
		keyPos, valPos, str := r.keyPos, r.valPos, r.str
		p := PluginEntry{Pos: r.header()}
		r.onlyKeys(pluginKeys)
		if str(keyPluginName, true, &p.Name) {
			if msg := checkProviderName(p.Name); msg != "" {
				errs.addAt(valPos(keyPluginName), strings.Replace(msg, "provider name", "plugin name", 1))
			} else if first, dup := seen[p.Name]; dup {
				errs.addAt(keyPos(keyPluginName), fmt.Sprintf("duplicate plugin name %q: the plugin at %s already has it; expected each plugin name once", p.Name, first))
			} else {
				seen[p.Name] = p.Pos
			}
		}
		if str(keyPluginPath, true, &p.Path) {
			switch {
			case p.Path == "":
				errs.addAt(valPos(keyPluginPath), "empty plugin path; expected the path of the provider executable")
			case strings.ContainsRune(p.Path, 0):
				errs.addAt(valPos(keyPluginPath), "plugin path contains a NUL byte; expected a file path")
			case !filepath.IsAbs(p.Path):
				// Absolute even when the file was named without a
				// directory ("dat.conf"): a bare name would make exec look
				// the program up in $PATH.
				abs, err := filepath.Abs(filepath.Join(dir, p.Path))
				if err != nil {
					errs.addAt(valPos(keyPluginPath), fmt.Sprintf("relative plugin path %q cannot be resolved: %v; expected an absolute path", p.Path, err))
				}
				p.Path = abs
			}
		}
		if str(keyPluginSHA256, false, &p.SHA256) {
			if b, err := hex.DecodeString(p.SHA256); err != nil || len(b) != 32 {
				errs.addAt(valPos(keyPluginSHA256), fmt.Sprintf("sha256 %q is not a SHA-256 digest; expected 64 hexadecimal digits (the output of sha256sum)", p.SHA256))
			} else {
				p.SHA256 = strings.ToLower(p.SHA256)
			}
		}
		if v, ok := t[keyPluginArgs]; ok {
			arr, isArr := v.([]any)
			if !isArr {
				errs.addAt(valPos(keyPluginArgs), fmt.Sprintf("args is %s; expected an array of strings, such as [\"-v\"]", describeTOMLValue(v)))
			}
			for j, a := range arr {
				s, isStr := a.(string)
				if !isStr {
					errs.addAt(valPos(keyPluginArgs), fmt.Sprintf("args[%d] is %s; expected a string", j, describeTOMLValue(a)))
					continue
				}
				p.Args = append(p.Args, s)
			}
		}
		if v, ok := t[keyPluginEnv]; ok {
			m, isMap := v.(map[string]any)
			if !isMap {
				errs.addAt(valPos(keyPluginEnv), fmt.Sprintf("env is %s; expected a table of strings, such as { ACME_LOG = \"debug\" }", describeTOMLValue(v)))
			}
			keys := sortedKeys(m)
			sort.Strings(keys)
			for _, k := range keys {
				s, isStr := m[k].(string)
				switch {
				case !isStr:
					errs.addAt(valPos(keyPluginEnv), fmt.Sprintf("env.%s is %s; expected a string", toml.Key{k}, describeTOMLValue(m[k])))
				case k == "" || strings.ContainsAny(k, "=\x00"):
					errs.addAt(valPos(keyPluginEnv), fmt.Sprintf("env key %q is not a variable name; expected a name without '=' or NUL", k))
				case strings.ContainsRune(s, 0):
					errs.addAt(valPos(keyPluginEnv), fmt.Sprintf("env.%s contains a NUL byte", toml.Key{k}))
				default:
					p.Env = append(p.Env, k+"="+s)
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// Plugin returns the [[plugin]] entry called name, if the configuration
// has one.
func (c *Config) Plugin(name string) (PluginEntry, bool) {
	for _, p := range c.Plugins {
		if p.Name == name {
			return p, true
		}
	}
	return PluginEntry{}, false
}
