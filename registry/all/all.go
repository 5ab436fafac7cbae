// Package all registers every provider built into godat. Import it for its
// side effect, in a program that wants whichever IA its configuration
// names without listing providers itself:
//
//	import _ "github.com/godat/godat/registry/all"
//
// After the import, registry.Providers names each built-in provider, and
// registry.Open can open any IA the configuration maps to one of them or
// to a [[plugin]] (the plugin host of package plugin/host is registered too).
package all

import (
	_ "github.com/godat/godat/plugin/host"        // providers that are separate executables
	_ "github.com/godat/godat/providers/loopback" // in-process provider
	_ "github.com/godat/godat/providers/tcp"      // RDMA semantics over TCP
	_ "github.com/godat/godat/providers/verbs"    // RDMA hardware through rdma-core (needs -tags verbs)
)
