// Package repo holds tests of the repository's scripts and top-level
// documents against each other and the code: what the README says CI
// installs, where the CI scripts look for the rxe VM harness, what
// dat.conf.example says the built-in configuration holds, the paths of
// the plugin example's instructions, the example provider's size, and that
// no source file grows past 800 lines. It has no code of its own.
package repo
