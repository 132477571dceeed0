// Package sparkrecipe carries the spark-recipe module's files, so that
// `sparkform recipe import` can write a root module with its own copy: the
// module itself is the *.sf.hcl files of this folder (see README.md).
package sparkrecipe

import "embed"

// Files are the module's *.sf.hcl files.
//
//go:embed *.sf.hcl
var Files embed.FS
