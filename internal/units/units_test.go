package units

import "testing"

func TestExact(t *testing.T) {
	for _, c := range []struct {
		n      uint64
		suffix string
		want   string
	}{
		{0, "iB", "0"}, {1, "iB", "1"}, {1024, "iB", "1KiB"}, {1536, "iB", "1536"},
		{3 << 30, "iB", "3GiB"}, {1 << 40, "iB", "1024GiB"},
		{64, "", "64"}, {4096, "", "4K"}, {1 << 20, "", "1M"}, {5 << 29, "", "2560M"},
	} {
		if got := Exact(c.n, c.suffix); got != c.want {
			t.Errorf("Exact(%d, %q) = %q, want %q", c.n, c.suffix, got, c.want)
		}
	}
}
