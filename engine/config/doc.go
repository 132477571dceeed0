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
//   - File functions (file, fileexists, templatefile, abspath) resolve
//     relative paths against the module directory; path.module is that
//     directory made absolute, so file("x") and file("${path.module}/x")
//     agree. No function is non-deterministic (no uuid, timestamp). They
//     follow OpenTofu v1.12.6 (TestFunctionsMatchOpenTofu).
//   - Variables: -var/-var-file in command-line order (later wins), then
//     SPARKFORM_VAR_NAME, then the default. Unknown -var names are errors,
//     unknown names in a -var-file are warnings, unknown environment
//     variables are ignored. ResolveVariables gives plain values; the
//     evaluation context marks those of sensitive variables
//     (MarkVariables), as sensitive() and a module's sensitive variable or
//     output do (SensitiveMark). Marks follow the value through
//     expressions; TakeSensitive takes them off a resource configuration
//     and names where they were as sensitive paths (input.env["TOKEN"],
//     see sensitive.go), which plans and state keep and MarkPaths puts
//     back. A module output that holds a sensitive value must be declared
//     sensitive.
//   - Module.CheckReferences is the static reference check for validate:
//     undeclared var/local/node/resource (with "Did you mean"), misuse of
//     each/count, instance keys that do not match for_each/count, and
//     calls to functions the language does not have (with a "Did you
//     mean" that, unlike hcl's, does not change from run to run).
//   - Modules: LoadDir also loads the folder each module block names
//     (Children), refusing a cycle with its path. Flatten, once variables
//     are known, brings every module instance's blocks into one Module
//     under their full addresses and rewrites the references inside them
//     (see flatten.go for the flat names); the engine walks that as one
//     configuration. A root without module blocks is returned as is.
//   - Nothing here talks to a provider or a node: resource bodies are
//     decoded against an sdk.Block the caller fetched.
package config
