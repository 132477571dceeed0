// Package hubstage is the hubstage provider: the resource hubstage_manifest
// turns a Hugging Face hub snapshot into a per-file bind list whose every
// source is a real regular file, for runtimes that open model shards with
// O_NOFOLLOW (a symlink bound at /model/x fails with ELOOP).
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
//     one per Plan and one per Apply. Include/exclude globs are matched in
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
package hubstage
