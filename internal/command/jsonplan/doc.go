// Package jsonplan is the plan document of `sparkform show -json
// PLANFILE` in Terraform's JSON output format (internals: "JSON Output
// Format", plan representation): format_version, terraform_version,
// variables, planned_values, resource_drift, resource_changes (address,
// previous_address, module_address, mode, type, name, index,
// provider_name, deposed, change{actions, before, after, after_unknown,
// before_sensitive, after_sensitive, replace_paths}, action_reason),
// output_changes, prior_state, configuration, timestamp, errored.
//
// Marshal is a pure function from a plans.Plan (and the configuration's
// document, jsonconfig, when the CLI has it) to the document's structs;
// the CLI encodes them. sparkform's own facts are under the key
// "sparkform", which Terraform does not use: the state lineage and serial
// the plan was made against, the plan mode, the change summary, notes,
// and per change the node, the prior node and the reason in words.
//
// Sensitive values are never written (jsonvalue): null in before, after,
// planned_values, prior_state, output_changes and variables, true in the
// sensitive masks. Terraform writes them and relies on the masks.
package jsonplan
