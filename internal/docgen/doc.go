// Command docgen writes the resource reference pages, docs/resources/*.md,
// from the provider schemas as `sparkform providers schema -json` prints
// them: one page per resource type and an index. The pages are never
// edited by hand; the test in this package fails when the committed pages
// differ from what the current schemas generate.
//
// Usage, from the repository root (`make docs` runs it):
//
//	go run ./internal/docgen                  # runs go run ./cmd/sparkform providers schema -json
//	go run ./internal/docgen -schema FILE     # or reads that JSON
//	go run ./internal/docgen -check           # exit 1 and list stale pages; write nothing
//
// Render is deterministic: types, attributes and blocks are sorted by name.
package main
