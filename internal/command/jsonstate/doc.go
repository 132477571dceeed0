// Package jsonstate is the state document of `sparkform show -json` and
// the outputs of `sparkform output -json`, in Terraform's JSON output
// format (internals: "JSON Output Format", state representation):
// format_version, terraform_version, values{outputs, root_module{
// resources, child_modules}}, each resource with address, mode, type,
// name, index, provider_name, schema_version, values, sensitive_values,
// depends_on, tainted, deposed_key.
//
// Pure functions from stored records (state.Resource, state.Output) to
// the document's structs; the CLI encodes them. sparkform's own facts
// (lineage, serial, the node an instance lives on) are under the key
// "sparkform", which Terraform does not use. Sensitive values are never
// written (jsonvalue): null in values, true in sensitive_values; a
// sensitive output has no value. jsonplan builds planned_values and
// prior_state from the same Resource and Module types (Root).
package jsonstate
