// Package jsonconfig is the "configuration" of the plan document in
// Terraform's JSON output format (internals: "JSON Output Format",
// configuration representation): provider_config and root_module with
// its variables, outputs, resources (address, mode, type, name,
// provider_config_key, expressions, schema_version, count_expression,
// for_each_expression, depends_on) and module_calls (source, expressions,
// count_expression, for_each_expression, module, depends_on).
//
// Marshal is a pure function of the loaded, unflattened configuration
// (config.Module with its Children). Expressions carry their references
// only: a constant_value is never written for a resource, module call
// or output argument, because sparkform would need the providers' schemas
// to know which literal is a sensitive attribute, and a sensitive value
// is never printed; a sensitive variable's default is not written either.
// The node argument, sparkform's own, is an expression like any other.
package jsonconfig
