// Package sdktest is a harness for provider authors: GRPC serves a
// provider over real gRPC in-process and hands back the engine's side of
// the protocol, so a provider's tests go through the same msgpack encoding
// and streaming as a real plugin. The helpers build resource values from
// a schema and drive the plan -> apply -> read cycle the engine runs.
//
// Every helper takes a testing.TB and fails the test on a transport error
// or an error diagnostic, with the diagnostics in the message.
package sdktest
