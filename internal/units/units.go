// Package units formats byte counts the way godat's commands print them.
package units

import "strconv"

// Exact formats n exactly, in the largest of K, M and G (powers of 1024)
// that n is a whole number of, with suffix after the prefix; n in bytes
// when it is none. Exact(4096, "iB") is "4KiB", Exact(4096, "") is "4K",
// and Exact(1536, "iB") is "1536".
func Exact(n uint64, suffix string) string {
	for _, u := range []struct {
		prefix string
		b      uint64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.b && n%u.b == 0 {
			return strconv.FormatUint(n/u.b, 10) + u.prefix + suffix
		}
	}
	return strconv.FormatUint(n, 10)
}
