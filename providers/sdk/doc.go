// Package sdk is the bridge between the sparkform engine and its providers.
//
// It holds the provider protocol in two forms: the Go interface Provider
// (what the engine calls and what a provider implements) and its gRPC
// transport (proto/, generated code, and the adapters that carry Provider
// over go-plugin). The engine imports this package and never a provider;
// a provider imports this package and never the engine.
//
// Values cross the boundary as go-cty values typed by the resource schema
// (msgpack on the wire). A null value means "does not exist": a Read that
// returns null reports the object gone, an Apply with a null planned value
// is a delete.
package sdk
