// Command loopback-plugin is an example third-party DAT provider: godat's
// in-process loopback provider served out of process through the plugin
// SDK. Build it, add it to a configuration file and open its IAs like any
// other (see README.md beside this file):
//
//	go build -o /usr/local/libexec/dat/loopback-plugin ./examples/loopback-plugin
//
// All IAs a program opens through it live in the one plugin process that
// serves that program, so they can connect to each other as loopback IAs
// do in-process.
package main

import (
	"net"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin"
	"github.com/godat/godat/providers/loopback"
)

// version is the version this plugin reports (datinfo shows it).
const version = "1.0.0"

func main() {
	plugin.Serve(loopback.Provider{},
		plugin.WithName("loopback-plugin"),
		plugin.WithVersion(version),
		plugin.WithAddrParser(parseAddr),
	)
}

// parseAddr turns an address a consumer typed (not one the provider
// reported) back into a loopback address.
func parseAddr(network, address string) (net.Addr, error) {
	if network != (loopback.Addr{}).Network() {
		return nil, api.Errorf(api.InvalidAddress, api.SubAddressUnsupported, network+" is not a loopback address")
	}
	return loopback.ParseAddr(address)
}
