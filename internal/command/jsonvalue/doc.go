// Package jsonvalue turns cty values into the plain JSON data of
// Terraform's JSON output format (the "JSON Output Format" internals
// page): a value, its unknown mask (after_unknown) and its sensitive mask
// (before_sensitive, after_sensitive, sensitive_values), and a cty path
// as the format writes one (replace_paths, relevant_attributes).
//
// The contract: a place marked sensitive (config.SensitiveMark, or named
// by a sensitive path, config.SensitivePaths) is never written; it reads
// null in the value and true in the mask. Terraform writes the value and
// relies on the mask alone; sparkform's rule that a sensitive value is
// never printed wins (docs/cli.md). Unknown places read null in the value
// and true in the unknown mask. Pure functions, no I/O.
package jsonvalue
