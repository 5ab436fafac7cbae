// Package host is the host's side of godat's provider plugins: it runs
// the executables of the configuration's [[plugin]] tables and forwards
// their IAs to them, as the registry's PluginHost, which it registers from
// its init. A program gets it by importing registry/all, or this package
// for its side effect:
//
//	import _ "github.com/godat/godat/plugin/host"
//
// Each [[plugin]] table becomes a Provider whose Open starts the plugin
// process on first use (within StartTimeout) and opens an IA in it; the
// IA's objects are proxies that the registry guards like any provider's.
// The vendor's side, Serve, is package plugin, whose package comment
// describes the design of both sides: the lifecycle of a plugin process,
// how objects and calls cross, the shared memory, the data path and what
// a crash costs.
package host
