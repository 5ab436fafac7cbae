package registry

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Run with, e.g.:
//
//	go test -run='^$' -fuzz=FuzzParseConfigTOML -fuzztime=20s ./registry/
//	go test -run='^$' -fuzz=FuzzParseConfigClassic -fuzztime=20s ./registry/

func addSeeds(f *testing.F, pattern string, extra ...string) {
	files, _ := filepath.Glob(filepath.Join("testdata", "config", pattern))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range extra {
		f.Add([]byte(s))
	}
}

func FuzzParseConfigTOML(f *testing.F) {
	addSeeds(f, "*.toml",
		string(defaultConf),
		"[[ia]]\nname='x'\nprovider=\"p\"\napi_version=\"u2.0\"\nia_params=\"\"\"\na\"\"\"\n",
		"ia = [{name = \"x\"}]\n[x]\ny = [1, [2, {a = 3}]]\n",
		"[[ia]]\n\"name\" . x = 1\n[ia.sub]\n[[plugin]]\n",
		"[[ia]]\nname='x'\nprovider=\"p\"\napi_version=\"u2.0\"\nhooks=[\"count\", \"trace\", 1, [\"x\"]]\n")
	if data, err := os.ReadFile("../dat.conf.example"); err == nil {
		f.Add(data)
	}
	f.Fuzz(checkParse)
}

func FuzzParseConfigClassic(f *testing.F) {
	addSeeds(f, "*.conf",
		`ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "ib0 0" ""`,
		"a u1.2 threadsafe nondefault /x/libgodat-t.so.9 v \"\t#\" \"\" # c\r\n\"b\" k2.0 x y z",
		"\"a\"\"b\" u2.0\n# only\n\n",
		"g u2.0 nonthreadsafe default /l/libdat2.so.2 godat.2.0 \"h\" \"\"\nh u2.0 threadsafe default libgodat-x.so v \"p\" \"q\"\n")
	f.Fuzz(checkParse)
}

// checkParse is the property both fuzz targets check: ParseConfig does not
// panic; a rejection is an InvalidParameter *api.Error whose problems all
// point inside the file; an accepted file has well-formed IAs whose
// positions point at where they start.
func checkParse(t *testing.T, data []byte) {
	cfg, err := ParseConfig("fuzz", data)
	text := bytes.TrimPrefix(data, utf8BOM)
	lines := bytes.Split(text, []byte("\n"))
	if err != nil {
		if cfg != nil {
			t.Fatal("both a Config and an error")
		}
		configErrors(t, err) // type, cause, Line >= 1, Col >= 1
		if len(data) > MaxConfigSize {
			return
		}
		var ce ConfigErrors
		errors.As(err, &ce)
		for _, e := range ce {
			if e.Pos.File != "fuzz" || e.Pos.Line > len(lines) || e.Pos.Col > len(lines[e.Pos.Line-1])+1 {
				t.Fatalf("problem outside the file: %v", e)
			}
		}
		return
	}
	if cfg == nil || (cfg.Format != FormatTOML && cfg.Format != FormatClassic) {
		t.Fatalf("bad result %+v", cfg)
	}
	names := map[string]bool{}
	defaults := 0
	for _, e := range cfg.IAs {
		if msg := checkIAName(e.Name); msg != "" || names[e.Name] {
			t.Fatalf("accepted IA %+v: %s (or duplicate)", e, msg)
		}
		names[e.Name] = true
		if e.Default {
			defaults++
		}
		if e.Pos.Line < 1 || e.Pos.Line > len(lines) || e.Pos.Col < 1 || e.Pos.Col > len(lines[e.Pos.Line-1]) {
			t.Fatalf("IA %q at %v: outside the file", e.Name, e.Pos)
		}
		first := lines[e.Pos.Line-1][e.Pos.Col-1]
		if e.Unavailable == "" {
			if bad, other := checkAPIVersion(e.APIVersion); bad != "" || other != "" || e.Provider == "" {
				t.Fatalf("available IA %+v has a bad version or no provider", e)
			}
		}
		switch cfg.Format {
		case FormatTOML:
			if first != '[' {
				t.Fatalf("IA %q at %v does not point at its [[ia]] header", e.Name, e.Pos)
			}
			if e.Unavailable != "" || e.Library != "" {
				t.Fatalf("TOML IA %+v", e)
			}
		case FormatClassic:
			if first != '"' && first != e.Name[0] {
				t.Fatalf("IA %q at %v does not point at its name", e.Name, e.Pos)
			}
		}
	}
	if cfg.Format == FormatTOML && defaults > 1 {
		t.Fatalf("%d defaults accepted", defaults)
	}
}
