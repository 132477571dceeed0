// Package engine is sparkform's core: it turns a loaded configuration and
// the stored state into a plan, and a plan into changes on the nodes.
//
// Data flows one way: config -> graph -> refresh -> plan -> apply. Refresh
// asks each provider once per node for every instance it owns (batched);
// plan evaluates the configuration in dependency order and asks providers
// for planned values; apply walks the same graph, deletes in reverse
// dependency order, and stores every instance's result the moment it lands,
// with a journal intent written before each provider call and cleared after.
//
// The files follow that flow:
//
//   - engine.go: the Engine, provider start and schemas; diags.go,
//     limiter.go (Parallelism counts nodes in flight: nodeLimiter),
//     hooks.go: what every phase shares.
//   - stateobject.go: the state's side of an instance (stateObject) and the
//     Store it lives in; journal.go: intents and their recovery.
//   - configgraph.go: the configuration graph (vertex.go: its typed
//     vertices); targets.go: -target.
//   - evaluator.go: values computed during a walk; configinstance.go: a
//     resource block expanded into configInstances; nodevalue.go: a node
//     value read back into connection details.
//   - walkgraph.go: the graph a walk runs, with instance vertices for
//     blocks whose keys are known before it; walk.go: the walker.
//   - refresh.go, nodecheck.go: reading the nodes; exclude.go: the nodes
//     a plan leaves out (-exclude-unreachable) and a saved plan's node
//     check before its first change.
//   - plan.go (plan_normal.go, plan_destroy.go): Engine.Plan by mode;
//     plan_instance.go: planning one instance; ignore.go: lifecycle;
//     collisions.go: two instances may not manage one object.
//   - apply.go (apply_destroy.go): Engine.Apply and applying one instance;
//     planfresh.go: the saved-plan check.
//   - import.go, validate.go: Engine.Import and Engine.Validate.
//
// Three words name an instance's three sides: a configInstance is what the
// configuration says, a stateObject what state records, an instanceVertex
// its vertex in a walk.
//
// The engine talks to providers only through sdk.Provider (never a provider
// package) and to state only through the Store interface.
package engine
