// Command minimal-plugin serves the minimal provider out of process
// through godat's plugin SDK: name it in a [[plugin]] table of a
// configuration file and open its IAs like any other (see README.md).
// All IAs a program opens through it live in the one plugin process that
// serves the program, so they connect to each other as in-process IAs do.
package main

import (
	minimal "example.com/minimal-provider"
	"github.com/godat/godat/plugin"
)

func main() {
	plugin.Serve(minimal.Provider{}, plugin.WithName("minimal-plugin"), plugin.WithVersion("1.0.0"))
}
