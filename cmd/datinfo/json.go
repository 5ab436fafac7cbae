package main

import (
	"encoding/json"
	"io"
	"net"
	"reflect"
	"strings"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
	_ "github.com/godat/godat/registry/all"
)

// listJSON is the output of "datinfo --json".
//
// Every IA object has the configuration keys of dat.conf.example (name,
// provider, api_version, threadsafe, default, provider_version, ia_params,
// platform_params), "library" (classic files only), "alias_of" (a classic
// line for godat's C library: the godat IA it stands for, whose provider
// and parameters it has), "position" (file:line:column of its entry),
// "origin" ("file:line" of its entry, or "built-in" for one of godat's
// built-in IAs), "available" and, when it is false, "reason". An IA that
// was opened also has "ia_attr" and "provider_attr": objects with one key
// per field of api.IAAttr and api.ProviderAttr, the field's name in
// snake_case (jsonKey: MaxEPs is "max_eps", MaxIOVSegmentsPerDTO
// "max_iov_segments_per_dto"), with numbers (flags and enumerations as
// their DAT numeric values; 64-bit limits may exceed 2^53), booleans and
// strings; "address" is a string, or null when the provider has none;
// named-attribute lists are arrays of {"name", "value"} objects.
//
// "default_ias" lists the IAs OpenDefault tries, in order
// (registry.Registry.DefaultIAs), and "open_default" names the one it
// opens on this host, or is null when it fails.
//
// Every key of the output, at every depth, is snake_case: lower-case
// words joined by underscores. Keys are added, never renamed or removed.
type listJSON struct {
	Config      configJSON `json:"config"`
	Providers   []string   `json:"providers"` // the providers built in
	IAs         []iaJSON   `json:"ias"`
	DefaultIAs  []string   `json:"default_ias"`
	OpenDefault *string    `json:"open_default"`
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

func writeListJSON(w io.Writer, cfg *registry.Config, reps []iaReport, def defaultChoice) error {
	out := listJSON{
		Config:     configJSON{File: cfg.File, Format: cfg.Format, Source: cfg.Source},
		Providers:  registry.Providers(),
		IAs:        []iaJSON{},
		DefaultIAs: append([]string{}, def.tried...),
	}
	if def.opens != "" {
		out.OpenDefault = &def.opens
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

// attrMap turns an attribute struct into a JSON object keyed by the
// jsonKey of each field's name.
func attrMap(attrs any) map[string]any {
	v := reflect.ValueOf(attrs)
	t := v.Type()
	m := make(map[string]any, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		k := jsonKey(f.Name)
		switch x := v.Field(i).Interface().(type) {
		case net.Addr:
			m[k] = x.String()
		case nil:
			m[k] = nil
		case []api.NamedAttr:
			l := make([]namedAttrJSON, 0, len(x))
			for _, a := range x {
				l = append(l, namedAttrJSON(a))
			}
			m[k] = l
		default:
			m[k] = x
		}
	}
	return m
}

// wholeWords are the capitalised words of attribute names that stay one
// word in snake_case: DAT's abbreviations, which may follow one another
// with nothing between them (SRQEPPZDifferenceSupported) or take a plural
// s (MaxEPs), and QLen, which DAT writes qlen.
var wholeWords = []string{"DAPL", "RDMA", "CNO", "DTO", "EVD", "IOV", "LMR", "PSP", "QOS", "RMR", "RSP", "SRQ",
	"EP", "HA", "IA", "PZ", "VA", "ZB", "QLen"}

// jsonKey turns a Go field name into its snake_case JSON key: a word
// starts at each capital letter, a run of capitals is one word (its last
// capital starting the next word when lower-case letters follow it), and
// a word of wholeWords, plural s included, is never split. MaxEPs becomes
// max_eps, MaxIOVSegmentsPerDTO max_iov_segments_per_dto,
// SRQEPPZDifferenceSupported srq_ep_pz_difference_supported.
func jsonKey(name string) string {
	var words []string
	isUpper := func(i int) bool { return i < len(name) && name[i] >= 'A' && name[i] <= 'Z' }
	isLower := func(i int) bool { return i < len(name) && !isUpper(i) }
	for i := 0; i < len(name); {
		j := i + 1
		for _, w := range wholeWords {
			if strings.HasPrefix(name[i:], w) {
				k := i + len(w)
				if k < len(name) && name[k] == 's' && !isLower(k+1) {
					k++ // a plural: EPs, EVDs
				}
				if !isLower(k) {
					j = k
					break
				}
			}
		}
		if j == i+1 {
			for isUpper(j) && !isLower(j+1) {
				j++ // an abbreviation not in the list
			}
			for isLower(j) {
				j++
			}
		}
		words = append(words, strings.ToLower(name[i:j]))
		i = j
	}
	return strings.Join(words, "_")
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "<embedded>" reads better than "\u003cembedded\u003e"
	return enc.Encode(v)
}
