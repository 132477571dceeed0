#!/bin/sh
# Builds the node helper for the arches sparkform ships it for, static and
# stripped, and writes its version id (the sha256 of the binaries, 16 hex
# digits) for nodebin.ID. Run by `go generate ./providers/node/nodebin`.
set -eu
cd "$(dirname "$0")"
for arch in amd64 arm64; do
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch ${GO:-go} build -trimpath -ldflags='-s -w' \
		-o bin/sparkform-node-linux-$arch.tmp ../../../cmd/sparkform-node
	mv bin/sparkform-node-linux-$arch.tmp bin/sparkform-node-linux-$arch
done
cat bin/sparkform-node-linux-amd64 bin/sparkform-node-linux-arm64 | sha256sum | cut -c1-16 > bin/id.tmp
mv bin/id.tmp bin/id
