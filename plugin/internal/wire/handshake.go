package wire

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/godat/godat/plugin/proto"
)

// ProtocolVersion is the version of the plugin protocol (proto/provider.proto
// and the control socket) that this package speaks. The host offers it in
// the go-plugin handshake; a plugin built against another version fails to
// start with a message naming both versions, and its IAs are unavailable.
const ProtocolVersion = 1

// Handshake is the go-plugin handshake of godat provider plugins. The magic
// cookie only keeps a plugin from being run by mistake as an ordinary
// program; it is not a secret.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "GODAT_DAT_PROVIDER_PLUGIN",
	MagicCookieValue: "9b6c2f0e-dat2-provider",
}

// PluginName is the one plugin a godat plugin process serves.
const PluginName = "provider"

// grpcPlugin is the go-plugin glue: it registers the server in the plugin
// process and makes the client stub in the host.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	srv pb.ProviderServer
}

func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterProviderServer(s, p.srv)
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return pb.NewProviderClient(cc), nil
}

// PluginSets is what go-plugin serves and dispenses: srv is the plugin's
// server, nil in the host.
func PluginSets(srv pb.ProviderServer) map[int]goplugin.PluginSet {
	return map[int]goplugin.PluginSet{ProtocolVersion: {PluginName: &grpcPlugin{srv: srv}}}
}

// FenceKey is the gRPC metadata key of the submission count a control
// call waits for in the plugin.
const FenceKey = "godat-sq"
