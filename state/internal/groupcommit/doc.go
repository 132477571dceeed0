// Package groupcommit is the group commit every state backend uses: writers
// queue operations, one goroutine takes everything queued into a batch and
// commits it in one go (one bbolt transaction and fsync, one etcd
// transaction or a few), and each writer learns its own operation's
// outcome. While one batch commits, the next queues up, so N concurrent
// writers cost about one commit each round instead of N.
//
// Contract:
//   - Submit waits until its operation's batch is committed (or failed);
//     SubmitDeferred does not: its outcome is kept, and Flush (and the
//     caller's Close) return the first deferred error. Operations are handed
//     to Run in queue order, so a deferred one is durable once any operation
//     queued after it returns.
//   - A batch holds at most MaxOps operations and takes no more once it
//     holds MaxBytes (Size); it waits up to Linger for writers that waited
//     in the previous batch to come back, and a batch of deferred operations
//     alone waits up to DeferLinger for more (a waited write, or a full
//     batch, ends the wait).
//   - Run, Idle and Stop all run on the loop's one goroutine, never at once:
//     what they share needs no lock.
//   - After Close, Submit returns Config.Closed; Close returns once the
//     loop has run everything queued before it and Stop has returned.
//
// It knows nothing of what an operation is: state (bbolt) and
// state/etcdstore each give their own Run.
package groupcommit
