// Command oldproto is a plugin built against a different plugin protocol
// version: the host must refuse it with a clear reason.
package main

import (
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/godat/godat/plugin"
)

func main() {
	hs := plugin.Handshake
	hs.ProtocolVersion = 99
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  hs,
		VersionedPlugins: map[int]goplugin.PluginSet{99: {"provider": &goplugin.NetRPCUnsupportedPlugin{}}},
		GRPCServer:       goplugin.DefaultGRPCServer,
	})
}
