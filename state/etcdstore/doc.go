// Package etcdstore keeps sparkform state in an etcd v3 cluster, for a team
// sharing one cluster: the same contract as the local bbolt file (package
// state), behind the same state.Store interface.
//
// Layout under the configured prefix P (keys are P + "/" + ...):
//
//	meta/lineage, meta/serial, meta/version, meta/created, meta/outputs
//	r/ADDRESS          one JSON state.Resource per instance
//	j/ADDRESS          one JSON state.Intent per journaled provider call
//	h/ADDRESS\x00SERIAL  prior records (SERIAL as 16 hex digits), the last
//	                   state.HistoryLimit per address
//	lock               the writer lock: a JSON state.Holder on a lease
//
// The lock is a key that exists only while its holder's lease lives. The
// holder keeps the lease alive (a keepalive every TTL/3); a holder killed
// with kill -9 or cut off from the cluster stops refreshing it, and etcd
// deletes the key TTL later, so a lock can never stay stuck. Every write
// is one etcd transaction whose first condition is "the lock key is still
// on my lease": a holder whose lease expired, or whose lock was broken by
// ForceUnlock, can never write again, even if it does not know yet. It
// also stops on its own (state.ErrLockLost) when its keepalive stream ends
// or it has gone 2/3 of the TTL without a confirmed refresh.
//
// Reads never look at the lock: show, output and state list never wait for
// a writer. A Snapshot, and so a no-op plan, costs a constant number of
// range requests (meta, resources, journal: one each), whatever the number
// of instances.
//
// Writes are group-committed like the bbolt store's: concurrent calls are
// staged into one transaction (split when it would pass etcd's per-request
// operation or size limits), and each call returns once its transaction is
// committed by the cluster's quorum.
//
// TLS material and credentials come from the environment (ConfigFromEnv),
// never from state or plan files.
package etcdstore
