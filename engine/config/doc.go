// Package config is the sparkform configuration language: it loads every
// *.sf.hcl file of a directory into a Module, resolves input variables,
// provides the function library and evaluation scope, expands for_each and
// count, and decodes node and resource bodies.
//
// Contract:
//   - Loading is staged, as in OpenTofu's configs package: LoadDir checks
//     structure only (block types, labels, duplicate names, meta-arguments)
//     and keeps every expression unevaluated. Values come later, from the
//     engine, through Scope.EvalContext, Expand, DecodeNode and
//     DecodeResource.
//   - Every function returns hcl.Diagnostics beside its value, never an
//     error alone. Each error diagnostic has a Subject range (file:line:col)
//     when it comes from a file, and a Detail that says what to do.
//   - LoadDir always returns a non-nil Module whose Files hold every parsed
//     file, so diagnostics can be rendered with source snippets even when
//     the module has errors.
//   - Nothing here talks to a provider or a node: resource bodies are
//     decoded against an sdk.Block the caller fetched.
package config
