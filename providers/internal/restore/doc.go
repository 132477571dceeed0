// Package restore keeps restore records on a node: what a resource must put
// back on destroy, written on the node itself BEFORE the first change, so
// that no crash point (a killed CLI, a killed plugin, a dropped SSH link)
// and no replacement chain (create, interrupted, tainted, replaced) can lose
// it or overwrite it with an already-changed value.
//
// A record is a small text file, one "FIELD VALUE" line per fact (values
// hold no newline), in a folder only sparkform writes:
//
//	/var/lib/sparkform/restore/KIND/NAME                 when the command runs as root
//	${XDG_STATE_HOME:-~/.local/state}/sparkform/restore/KIND/NAME   otherwise
//
// (0700 folders, 0600 files), nothing next to what the user owns. NAME is a
// hash of KIND and the key: what the resource manages (a module's sysfs
// folder, a checkout path, a manifest path), so two nodes on one machine and
// two resources on one node never share a record unless they manage the
// same thing.
//
// The contract providers keep:
//   - Create is write-once: the FIRST record for a key wins and is returned;
//     a later create (a replacement, a retried apply) gets the original back.
//     It is durable (fsync of the file and its folder) when Create returns.
//   - Append adds facts to an existing record (e.g. one more content hash a
//     resource wrote); it never changes what was there.
//   - Remove is called only after a destroy has put things back and verified
//     them; it also removes the record folders when they become empty.
//
// Every operation is one remote command (a fixed sh script whose only inputs
// are its arguments). Prelude is the same set of shell functions for
// providers that fold record work into their own scripts.
package restore
