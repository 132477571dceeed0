package proto

// Regenerate with `go generate ./providers/sdk/proto` (make proto). It needs
// /usr/bin/protoc and, on PATH, protoc-gen-go v1.36.12 and
// protoc-gen-go-grpc v1.6.2 (go install ...@those versions).
//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative provider.proto
