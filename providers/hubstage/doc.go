// Package hubstage is the hubstage provider: the resource hubstage_manifest
// turns a Hugging Face hub snapshot into a per-file bind list whose every
// source is a real regular file, for runtimes that open model shards with
// O_NOFOLLOW (a symlink bound at /model/x fails with ELOOP); the resource
// hubstage_snapshot makes a snapshot present in a node's hub cache.
//
// Contract of hubstage_manifest:
//
//   - Layout: <hub_dir>/{models,datasets}--ORG--NAME/ holds refs/<name> (a
//     40-hex commit; also refs/refs/pr/N), snapshots/<commit>/<path>
//     (relative symlinks, folders kept, folder symlinks followed) and
//     blobs/<sha>, which may itself link into the hub-level shared store
//     <hub_dir>/blobs/<xx>/<hash>. The whole chain is resolved.
//   - Resolution runs ON THE NODE in one remote command (a POSIX sh script
//     of find -L, stat -L, realpath; GNU and busybox), whatever the number
//     of files: one command per Read batch (every instance on the node),
//     one per Plan and one per Apply. Where the node helper is installed
//     (node.HelperPath) the script execs `sparkform-node resolve`, which
//     prints what the script's GNU find path prints: one process per
//     command instead of find, realpath and a shell per odd batch. Include/exclude globs are matched in
//     the provider afterwards, with huggingface_hub allow_patterns rules.
//   - Rules, each a clear error naming the file and wrapping a sentinel of
//     errors.go: every source is a regular file after resolution, inside
//     hub_dir (ErrEscapesHub); no link loop (ErrLinkLoop); no dangling link
//     (ErrDangling) or *.incomplete blob (ErrIncomplete); the ref and the
//     snapshot exist (ErrNoRef, ErrBadRef, ErrNoSnapshot); targets are clean
//     absolute paths under target, unique (ErrBadTarget).
//   - files is list(object({source, target})) sorted by target: exactly
//     what docker_container.bind_files takes. digest hashes (source, target,
//     size, mtime) of every entry.
//   - Plan resolves with a known config, so files are known at plan time;
//     a moved ref, a changed blob or a stale manifest_path plans an in-place
//     update whose change_summary reads "commit a -> b, +N files, -M files,
//     K changed". Read keeps the applied object and reports what it sees:
//     manifest_sha256 as found, and change_summary when the hub moved.
//   - manifest_path, when set, is written atomically (temp sibling + mv)
//     with one "REAL<TAB>TARGET" line per file (FormatManifest). Before the
//     file or any folder for it is made, a restore record on the node
//     (package providers/internal/restore, keyed by the path) says that
//     sparkform created it, which folders it made and every sha256 it
//     wrote; private data records the sha256 and whether this resource
//     wrote it. Destroy removes the file only if this resource created or
//     wrote it and it is unchanged, then the folders made for it while
//     empty, then the record: a lost reply (killed CLI or plugin) or a
//     replacement that finds its own earlier file loses nothing. A file
//     someone else wrote there is refused (ErrForeignManifest), unless it
//     already holds exactly the wanted lines (then destroy leaves it).
//
// Contract of hubstage_snapshot (snapshot*.go, snapsource.go, snaphub.go):
//
//   - Layout: exactly huggingface_hub's: <hub_dir>/{models,datasets}--ORG--NAME/
//     blobs/<etag> (sha256 for LFS files, git blob sha1 for the others),
//     snapshots/<commit>/<path> as relative links "../../blobs/<etag>" (one
//     more "../" per folder), refs/<revision> holding the commit without a
//     newline (only when revision is a ref). A blob in flight is
//     blobs/<etag>.incomplete and is renamed only after its size and content
//     address are verified: no half blob ever has a blob's name.
//   - Sources (snapSource): the hub (endpoint, else the plugin's
//     HF_ENDPOINT, else https://huggingface.co), fetched by the node itself
//     with curl; another node (source_node, snappeer*.go) and the
//     operator's cache (source_local_dir, snaplocal*.go). A source's listing
//     (ref -> commit, every snapshot link -> blob etag and size) is ONE
//     command on the source node, or read in process for a local cache;
//     a snapshot entry that is not a relative link to ../../blobs/<etag>
//     with a regular blob is refused, naming the file.
//   - source_node, transfer = "direct" (the default): the destination D
//     pulls every blob from the source S's sshd at source_address itself;
//     no byte passes through sparkform (relayed_bytes 0). Plan runs
//     ssh-keyscan on D and uses S's host keys only when they verify against
//     the operator's known_hosts entry for S (the one sparkform checks when
//     it logs in to S): another machine at that address, or no entry, is
//     refused (node.ErrHostKeyChanged / ErrHostKeyUnknown); no answer is
//     ErrSourceUnreachable, suggesting transfer = "relay". Apply generates a
//     one-time ed25519 key: a restore record on S (kind
//     hubsnapshot_peerkey) first, then a line in the authorized_keys of S's
//     login user: restrict, a forced command (a serve script under
//     ~/.local/state/sparkform/snapserve that only streams blobs of this
//     repository: "blob ETAG OFFSET", "tar" of etags on stdin), an
//     expiry-time (2 h plus the bytes at 25 MB/s) and from= D's address when
//     D's route names it; the private key goes on stdin into a 0700 folder
//     on D. D's ssh runs with StrictHostKeyChecking=yes against only the
//     verified keys; every blob (and the small ones' tar) is a session on
//     one of min(parallel, 4) master connections opened at once. The
//     transfer's end takes back the line (the file byte for byte, its mode;
//     a file or ~/.ssh it made), the script, D's folder and the record; a
//     transfer killed before that is swept by the next apply of the same
//     snapshot to the same node, and an expired one by any copy from S.
//   - source_node, transfer = "relay", and source_local_dir: the blobs are
//     read on S over sparkform's own connection (one command per stream of
//     many blobs) or from the local cache, and streamed through sparkform
//     into the receiver; every byte is counted in relayed_bytes and the
//     plan names the path.
//   - Token: the value of the operator's variable named by token_env (default
//     HF_TOKEN) is read by the plugin and reaches the node only on stdin,
//     as a curl config (curl -K -), fed to each curl through the shell's
//     printf builtin: never in an argv, an environment, the state, the plan,
//     a record or a message. A token with a space, quote or backslash is
//     refused (ErrToken) without echoing it. curl sends it to the hub host
//     only, not to the CDN a redirect names.
//   - Plan: the listing costs ONE curl on the node
//     (/api/{type}s/{repo}/revision/{rev}?blobs=true), none when the revision
//     is a pinned commit already applied with the same include/exclude; then
//     ONE node command (snapObserveScript) for what is present (blob sizes,
//     partial .incomplete sizes, link targets, the ref, the record) and df of
//     hub_dir. present_bytes counts present blobs (shared with other
//     snapshots included) and resumable partial bytes; transfer_bytes the
//     rest; free_bytes is df's available space. The three are Volatile (an
//     apply's new plan is not held to them: another snapshot applied first
//     brings shared blobs, other writers move the free space), and
//     change_summary holds only what the plan decides (commit, files, size,
//     source, and the drift of a snapshot that was there); the fit is
//     checked again at apply. A transfer larger than
//     free_bytes - keep_free is refused (ErrNoFit, with the numbers) before
//     any change. A plan that writes leaves commit, snapshot_dir and files
//     unknown (dependents plan after the transfer; change_summary names the
//     commit, the numbers and the source); a plan with nothing to do keeps
//     the prior object. Private data pins the planned commit: apply refuses
//     another (ErrChanged).
//   - Apply: ONE receiver command (snapReceiveScript) on the node: the
//     restore record first (the new blobs, the links and the snapshot's
//     folders in one fsync'ed append; the folders made), then every blob (parallel: at most parallel at
//     once) written by the fetch straight into its .incomplete (no pipe:
//     each byte copied once, as curl -o does), resumed from its size
//     (Range) after a cut or an interrupted apply, hashed whole once it has
//     its size, renamed when verified (retried up to 5 times); blobs up to
//     16 MiB, when the source
//     can batch them (snapBatcher: the hub's curl -Z), go in one run into
//     blobs/.sparkform-incoming.<commit>/ (resumed there), are verified in a
//     few processes and renamed with one mv (a fork per file is what makes
//     1,000 small files slow); then the links (one tar; their count is
//     checked: a tar cut short at an entry's end exits 0); then the ref,
//     last. Where the node has the node helper (node.HelperPath) and the
//     source is the hub (snapHelperFetcher), the helper's hubfetch does
//     the blob loop instead, in one process: every blob, small and large,
//     parallel at once over reused connections, each byte written and
//     hashed once (a resumed blob's prefix hashed from the file first),
//     the same progress, heartbeat and result lines, the token on its
//     stdin and sent to the hub's origin only, never to the CDN; it
//     writes each blob's links once the blob is complete (the links step
//     then finds them: no link ever names a blob that is not whole); a
//     node without it runs the curl loop above. An apply right after its plan in one process (PlanAndApply)
//     uses that plan's listing and look at the node (hub source): the
//     receiver checks every blob again before it fetches.
//     Progress lines become sdk.Progress in bytes (the pull display); the
//     progress line is also a heartbeat: when it cannot be written (the
//     connection is gone; sshd sends no signal to a command without a tty)
//     the receiver kills its process group, so no writer outlives it. A
//     source that cannot run on the node (relay, push) streams the blobs
//     through the plugin into the same receiver: in min(parallel, blobs)
//     streams of many framed blobs each ("puts" mode: one command per
//     stream on the node, and one on the source node for a relay), or one
//     "put" per blob where the node has no GNU head; each blob is resumed
//     from its .incomplete and verified before its rename; the bytes are
//     counted in relayed_bytes. A direct copy from another node runs every
//     blob as a session on one of min(parallel, 4) ssh master connections
//     the destination opens to the source with the one-time key. Memory does not depend on file sizes. When
//     the commit changes (a moved ref), the old snapshot is given back after
//     the new one is complete.
//   - Refresh: ONE node command for every instance on the node: sizes and
//     link targets; verify = "full" re-hashes every blob. A missing, short or
//     (full) wrong blob, a wrong link or a moved local ref is drift: the
//     refreshed object says so in change_summary and the plan repairs it
//     (only the broken blobs are fetched). A snapshot with nothing left is
//     gone (planned as a create).
//   - Restore record (kind "hubsnapshot", key hub_dir/REPO@commit), written
//     before each change it covers: "made DIR" before a folder is made,
//     "blob ETAG" before a blob's .incomplete is created (only for blobs that
//     were not there), "link PATH" before links are written, "ref REV PRIOR"
//     before the ref is (PRIOR "-": no file; a ref another sparkform snapshot
//     wrote passes on that one's prior). Destroy restores refs that still hold
//     the commit (first: a create writes them last), removes the recorded
//     links, removes the recorded blobs
//     (and .incomplete) that no link under snapshots/ points to any more, and
//     the recorded folders while empty. A blob (or folder) another snapshot
//     still uses is handed over to that snapshot's record when it has one (so
//     the last destroy removes it) and otherwise left to it (a warning). A
//     file this resource did not create is never touched; a snapshot path
//     held by something other than a link is refused (ErrOccupied).
//   - Node tools: POSIX sh, GNU coreutils/findutils or busybox, curl (hub),
//     tar, flock when present (two snapshots fetching one shared blob at
//     once), openssl and git when present (faster hashing).
//   - Limits: a source streamed through sparkform (relay, push) costs one
//     node command per blob (no batch); narrowing include/exclude leaves the
//     links already written (destroy removes them).
package hubstage
