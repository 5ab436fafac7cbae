package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/godat/godat/registry"
	_ "github.com/godat/godat/registry/all"
)

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
