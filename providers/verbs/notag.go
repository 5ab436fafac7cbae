//go:build !verbs

package verbs

func unavailable() string { return NoSupportReason }
