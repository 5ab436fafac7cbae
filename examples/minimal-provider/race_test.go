//go:build race

package minimal_test

const raceEnabled = true
