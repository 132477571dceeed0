// Package addrs names the things a sparkform configuration talks about:
// module instances (module.NAME[KEY], nested),
// resources and their instances, node blocks, and the objects an expression
// may reference (var.X, local.X, node.X, TYPE.NAME, each.key/value,
// count.index, path.module/cwd).
//
// Contract:
//   - Every address renders with String() in the form users type on the
//     command line and see in plans: `type.name`, `type.name[0]`,
//     `type.name["key"]`, `node.spark["a"]`, and in a module instance
//     `module.dsv41["a"].kmod_module.display["spark-01"]`.
//   - ParseResourceInstance and ParseTarget accept exactly what String()
//     produces (round trip) and return hcl.Diagnostics that say what is
//     wrong and what form is expected.
//   - InstanceKey values are comparable and usable as map keys; NoKey is a
//     non-nil key whose String() is "" and whose Value() is cty.NilVal.
//   - ParseRef never evaluates anything: it classifies a static traversal.
//     Unknown root names are treated as resource types; roots that cannot
//     be a resource type (no "TYPE.NAME" form, reserved words) are errors.
//     It also reads the forms a flattened module uses (config.Flatten):
//     local["NAME"], node["MODULE.NAME"] and TYPE["MODULE.NAME"], and
//     module.NAME[KEY].OUTPUT before flattening.
//   - Resource carries its module instance as a string (Module), so it
//     stays comparable; ScopeKey is its name in the evaluation scope.
package addrs
