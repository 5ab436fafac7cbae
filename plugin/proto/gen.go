// Package proto is the generated code of the godat plugin protocol
// (provider.proto). It is internal to package plugin: vendors call
// plugin.Serve and never use these types.
package proto

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative provider.proto
