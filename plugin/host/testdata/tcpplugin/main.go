// Command tcpplugin serves godat's tcp provider out of process, for the
// tests that run the conformance suite with the two ends of each
// connection in different processes.
package main

import (
	"github.com/godat/godat/plugin"
	"github.com/godat/godat/providers/tcp"
)

func main() {
	plugin.Serve(tcp.Provider{}, plugin.WithName("tcp-plugin"), plugin.WithVersion("1.0.0"))
}
