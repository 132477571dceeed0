// Package state is sparkform's state store. Store is the interface the
// engine and the CLI use, Backend a place that opens stores; this package
// implements both for the default local file (BoltStore, Local), and
// package state/etcdstore for a shared etcd cluster. Package
// state/statetest is the conformance suite every implementation passes.
//
// The local file is one bbolt file (.sparkform/state.db, mode 0600,
// folder 0700) holding
//
//   - meta:      lineage (random id made at creation), serial, format version;
//   - resources: one key per resource instance address -> Resource record
//     (formats 2 and 3: compact binary, record.go), so a write costs O(log N) and
//     never rewrites the whole state;
//   - interned:  the parts many records share (node details, type,
//     provider, the value's cty type), stored once and referred to by id;
//   - journal:   Intent records written before each provider call and removed
//     after its result is stored, so a crash leaves a visible trace;
//   - history:   the prior record of every changed instance (or a tombstone
//     for "did not exist"), the last HistoryLimit per address, newest first.
//
// Damage is never read as state (docs/state.md): format 4 seals every
// value with a CRC-32C of its key and bytes and the meta data with one
// more (seal.go); every command checks the pages, every checksum and the
// record counts once, when it first opens the file; each commit records its
// bbolt transaction id outside the file (state.db.commit), so a fallback
// to an older meta page is refused (rollback.go); and the last-good copy
// (state.db.backup) is made only from a file that passed all of it. Every
// such error is a *DamagedError naming the file and the restore.
//
// Concurrency contract:
//
//   - One writer at a time across processes. Open takes an exclusive flock on
//     a side file (state.db.lock) that also holds the holder record (pid,
//     host, command, since). A second Open waits up to Options.LockTimeout and
//     then fails with a *LockedError (errors.Is(err, ErrLocked)) naming the
//     holder. The kernel drops the flock when the holder dies, so a crashed
//     writer never blocks the next one; ForceUnlock clears stale records and,
//     when forced, breaks a live lock (the old holder then gets ErrLockLost).
//   - The bbolt file itself is opened only for the duration of one read
//     transaction or one run of back-to-back commit batches (let go when the
//     write queue has been empty for 2 ms, and for 3 ms at least every
//     50 ms), never for the life of a Store. bbolt's own flock therefore
//     covers milliseconds. Readers (OpenReadOnly, no writer lock) wait for
//     it in the kernel, woken when it is let go; the writer polls for it
//     again, so a reader's next transaction gets in too. A read waits for
//     a commit or two, never for a whole apply; one that cannot get in
//     within 2 s fails with ErrBusy.
//   - Writes (PutResource, DeleteResource, MoveResource, PutIntent,
//     DeleteIntent, Complete) are group-committed: concurrent calls share one
//     bbolt transaction and one fsync, in the order they were made. Each
//     returns only once its change is durable, except Complete (below). If
//     one write in a batch fails, only that call gets the error; the others
//     are committed without it.
//
// The apply path is PutIntent before the provider call, then Complete
// (result stored and intent cleared in one commit) after it. Durability
// contract of Complete:
//
//   - It is queued and not waited for. It is durable once any write made
//     after it has returned (the next PutIntent: batches commit in queue
//     order, so that intent's commit holds it or comes after it), or Flush
//     or Close has. A reader in the same process (view) flushes first, so
//     the writer reads its own results.
//   - A crash before then leaves the instance's intent in the journal: the
//     case of a crash between the provider's reply and the result's
//     commit, which recovery (the next plan refreshes the instance) always
//     had to handle. Nothing is lost that the journal does not name.
//   - No provider call starts before the results it may depend on are
//     durable: its intent comes after them in the queue. And none starts
//     after a result that could not be stored: PutIntent checks, inside its
//     transaction, for a failed Complete queued before it and fails, having
//     journaled nothing.
//   - Completes queued with no write waiting behind them wait for more, up
//     to 20 ms (deferLinger) or 1,000 writes, so that results that come
//     faster than commits share one; any write someone waits for (an
//     intent, Flush, Close, a read in the same process) ends the wait and
//     is committed with them.
//   - A failed Complete's error (naming the address; its intent stays) is
//     returned by every later PutIntent, and by Flush and Close. The engine
//     flushes at the end of every apply and destroy and reports it there.
//
// Why: an apply waited for two commits per instance (intent, then
// result); now it waits for one, and the results ride in the next
// intents' commits (a 10,000-instance apply: 1,197 commits instead of
// 2,065, docs/state.md).
//
// Serial counts committed changes to resources (put, delete, move): it is
// what a saved plan is checked against. Journal writes do not bump it: they
// record intentions, not state.
//
// The package stores bytes and small structs the engine gives it; it imports
// neither the engine nor any provider.
package state
