package main

import (
	"strings"
	"testing"
)

// -size takes a byte count with an optional binary unit, in any case; a
// bad one is reported as the user wrote it, with the reason.
func TestParseSizes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"64", 64}, {"64B", 64}, {"1k", 1 << 10}, {"4K", 4 << 10}, {"4KB", 4 << 10}, {"4KiB", 4 << 10}, {"4kib", 4 << 10},
		{"4Ki", 4 << 10}, {"1M", 1 << 20}, {"1MB", 1 << 20}, {"1MiB", 1 << 20}, {"64m", 64 << 20}, {"64MiB", 64 << 20},
		{" 2 M ", 2 << 20}, {"65536K", 64 << 20},
	} {
		got, err := parseSizes(c.in)
		if err != nil || len(got) != 1 || got[0] != c.want {
			t.Errorf("parseSizes(%q) = %v, %v; want [%d]", c.in, got, err, c.want)
		}
	}
	if got, err := parseSizes("64,4K,1MiB"); err != nil || len(got) != 3 || got[2] != 1<<20 {
		t.Errorf("a list: %v, %v", got, err)
	}
	for in, why := range map[string]string{
		"100M":                  `bad size "100M": 100 MiB is more than the largest message, 64M`,
		"1G":                    `bad size "1G": 1 GiB is more than the largest message, 64M`,
		"1GiB":                  `bad size "1GiB": 1 GiB is more than the largest message, 64M`,
		"67108865":              `bad size "67108865": 67108865 bytes is more than the largest message, 64M`,
		"0":                     `bad size "0": want a positive number`,
		"0K":                    `bad size "0K": want a positive number`,
		"-1":                    `bad size "-1": want a positive number`,
		"":                      `bad size "": want a positive number`,
		"4Q":                    `bad size "4Q": unknown unit "Q"`,
		"K":                     `bad size "K": want a positive number`,
		"1.5M":                  `bad size "1.5M": want a positive number`,
		"99999999999999999999G": `bad size "99999999999999999999G": `,
		"9223372036854775807K":  `bad size "9223372036854775807K": `,
	} {
		_, err := parseSizes(in)
		if err == nil || !strings.HasPrefix(err.Error(), why) {
			t.Errorf("parseSizes(%q): %v, want an error starting %q", in, err, why)
		}
	}
}
