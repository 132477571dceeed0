// Package proto is the generated wire form of the sparkform provider
// protocol (provider.proto, package sparkform.provider.v1). Do not edit the
// .pb.go files: change provider.proto and run `go generate` here.
//
// Only providers/sdk uses this package: the engine and providers see the
// protocol as the sdk.Provider interface, never as these messages.
package proto
