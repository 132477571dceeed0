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
// The engine talks to providers only through sdk.Provider (never a provider
// package) and to state only through the Store interface.
package engine
