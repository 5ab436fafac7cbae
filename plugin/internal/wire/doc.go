// Package wire is what the two sides of a godat provider plugin share:
// the go-plugin handshake and protocol version, the conversions between
// api values and the gRPC messages of proto/provider.proto, the
// shared-memory submission and completion rings with their doorbells, and
// the messages of the control socket. Package plugin (the vendor's side,
// Serve) and package plugin/host (the host's side) import it; it imports
// neither, nor the registry.
package wire
