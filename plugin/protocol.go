package plugin

import "github.com/godat/godat/plugin/internal/wire"

// ProtocolVersion is the version of the plugin protocol (proto/provider.proto
// and the control socket) that Serve speaks. The host offers its own in
// the go-plugin handshake; a plugin built against another version fails
// to start with a message naming both versions, and its IAs are
// unavailable.
const ProtocolVersion = wire.ProtocolVersion

// Handshake is the go-plugin handshake of godat provider plugins. The magic
// cookie only keeps a plugin from being run by mistake as an ordinary
// program; it is not a secret.
var Handshake = wire.Handshake

// EnvCtlFD names the environment variable that tells a plugin which
// descriptor is its end of the control socket.
const EnvCtlFD = wire.EnvCtlFD

// Addr is a network address that crossed the plugin boundary: the host
// shows a consumer every address a plugin reports as an Addr, and the
// plugin hands the provider one it cannot parse otherwise (see
// WithAddrParser).
type Addr = wire.Addr
