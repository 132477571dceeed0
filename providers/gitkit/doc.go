// Package gitkit is the sparkform provider for runtime kits: one folder of
// a git repository at a pinned commit, staged on a node.
//
// # gitkit_checkout
//
// Config: repo (URL or path the node can reach), commit (a full 40-hex
// commit id; anything else fails Validate), subdir (optional folder of the
// repo; omitted means the whole tree without .git), path (absolute).
// Computed: tree_digest, "sha256:HEX" of a canonical listing of what is at
// path (relative paths, kinds, exec bits, symlink targets, content hashes),
// computed on the node.
//
// Apply clones into a temporary sibling of path (".BASE.sparkform-tmp-XXXXXX",
// same filesystem), checks out the commit, renames subdir into place and
// removes the temporary tree on every exit: an unreachable repo, an unknown
// commit or a missing subdir is a clear error and leaves nothing behind.
// Changing repo, commit, subdir or path replaces the checkout.
//
// Where the commit is recorded: in state (the value) and in private data
// (the digest the staged commit had), never in a marker inside the user's
// tree, which the kit's consumers would see and which could be edited or
// deleted. Read reports the stored repo/commit/subdir/path and the digest
// of what is really at path now; Plan compares it with the recorded digest,
// so an edited file is drift and plans an update that re-stages the tree
// (swapped in with renames). A path that is gone reads as null, unless its
// restore record is still on the node (a destroy cut short after the tree
// went, a create killed before it was staged): then the instance is not
// gone, its tree_digest reads "(absent; its restore record is still on the
// node)", apply stages it again and destroy finishes removing the folders
// and the record.
//
// Ownership: a create refuses a path that already exists (checked on the
// node at plan time, and again at apply), so sparkform never deletes files
// it did not put there. The create half of a replace at the same path
// (PlanRequest.Replaces) is not refused: that tree is ours and goes first. Destroy renames path aside and removes it.
//
// Parent folders: before a create makes the missing ancestors of path
// (mkdir -p) it records which in a restore record on the node (package
// providers/internal/restore, keyed by path), and again in private data
// ("made"; an update keeps them, a replace at the same path makes and
// records them again after the old one's destroy removed them). Destroy
// reads both, so a create whose reply was lost (killed CLI or plugin)
// cannot leave them: after removing path it removes those folders deepest
// first with rmdir, so only while empty (one that now holds other files
// stays, with a warning naming it), then the record. Neither record (older
// state, import) means none were made. The instance leaves state only when
// the record is gone: a destroy cut short (the script failed, the link
// dropped, the record could not be removed) is an error that keeps the
// instance, and the next destroy finishes. A failed create removes the
// folders it made and their record (or, when it cannot, stays in state
// with its tree absent, for destroy to finish).
//
// Read: one remote command per node for all its checkouts, walk.sh: the
// node lists each tree (GNU find -printf and sha256sum) and the provider
// sorts and hashes the listing (tree_digest's value). Where the node has
// the node helper (node.HelperPath) the script execs its walk subcommand,
// which prints the same listing from one process; without it, the tools.
// What the walk leaves (a newline in a name, busybox tools, a tree the
// user may not read: read.sh says why) goes to read.sh, and a tree only
// root may read is read again through sudo on a become node.
//
// Progress: the phases (cloning, checking out, staging) and git's own
// fetch progress (git fetch --progress on the node, parsed: "fetching:
// receiving objects, 1.20 MiB | 500.00 KiB/s" with Current/Total in
// objects), passed at most four times a second per phase.
//
// Import id: "PATH,REPO,COMMIT[,SUBDIR]". The tree at PATH is adopted as
// it is; the commit is staged in a temporary sibling only to learn its
// digest, so a tree that differs from the commit plans as drift.
//
// A local repo (a path or file:// URL) owned by another user would trip
// git's "dubious ownership" check; the repo named in config is trusted for
// the fetch, and only it (safe.directory in a fetch-only global config that
// includes the user's own).
//
// Privileges: git and file work run as the connecting user (the seed stages
// into the user's home). Only when the parent of path is not writable by
// that user and the node has become = true is the work rerun through
// `sudo -n`; the files are then owned by root. Likewise Read reads a batch
// again through sudo only when some tree is unreadable and become is on.
//
// Cost: Read of N checkouts on one node is one remote command (two when
// the sudo retry above is needed, and one more when some path is gone, to
// ask for their restore records); Apply is
// one remote command (plus one to report the truth after a failure); Plan
// of a create is one remote command.
package gitkit
