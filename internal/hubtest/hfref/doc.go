// Package hfref is the independent reference client of the hub cache that
// sparkform's tests compare against: a copy of github.com/maruel/huggingface
// (Apache License 2.0, see LICENSE in this folder; Copyright 2024
// Marc-Antoine Ruel), file huggingface.go at commit
// 84f7837283346204fa9da7d1b08b0b5b64510589 (2025-08-03). The module is not
// on the Go module proxy, hence the copy. It is test support, not used by
// sparkform itself.
//
// NOTICE: changes made to the original (each marked "sparkform:" in the code):
//   - package name huggingface -> hfref;
//   - the endpoint can be set: NewAt(endpoint, hubCacheDir, token) (added,
//     reads no environment, writes no token file), and New honours
//     HF_ENDPOINT like huggingface_hub;
//   - dependencies stripped: github.com/maruel/safetensors (DType ->
//     string), github.com/schollz/progressbar/v3 (progress goes to
//     io.Discard), golang.org/x/sync/errgroup (a local equivalent, group);
//   - GetFileInfo accepts a 40-hex git sha1 etag as well as a 64-hex sha256:
//     regular (non-LFS) files are named by their git blob sha1 on the hub and
//     in huggingface_hub's cache; the original refused them;
//   - AuthRequest returns a transport error instead of dereferencing a nil
//     response;
//   - refs/<revision> is written only when the revision is not the commit
//     itself (the original also wrote refs/<commit>), and its parent folders
//     are made (refs/refs/pr/1).
//   - URLs escape the revision (refs%2Fpr%2F1) and each segment of the file
//     name, as huggingface_hub's hf_hub_url and repo_info do (resolveURL);
//     the original sent them raw, so "100%.txt" could not be fetched.
//
// Nothing else in the cache logic changed.
//
// # huggingface_hub's cache rules and how this client follows them
//
// From huggingface/huggingface_hub, src/huggingface_hub/file_download.py and
// _snapshot_download.py at commit ee0a4510f4bc15e26cb722be2efc2bdb01383ca0
// (2026-08-20):
//
//  1. Repo folder: repo_folder_name = "{type}s--" + repo_id with "/" ->
//     "--" (models--org--name, datasets--org--name). Followed (models only:
//     this client does not download datasets).
//  2. Metadata: a HEAD on /{repo}/resolve/{rev}/{file} without following
//     absolute redirects; commit = X-Repo-Commit, etag = X-Linked-Etag or
//     else ETag, normalized by stripping W/ and quotes (_normalize_etag);
//     size = X-Linked-Size or else Content-Length. Followed (GetFileInfo).
//  3. Blob: blobs/<etag>; snapshot entry: snapshots/<commit>/<file> is a
//     symlink to os.path.relpath(blob, dirname(entry)) (_create_symlink), so
//     "../../blobs/<etag>" plus one "../" per folder level. Followed
//     (makeSnapshotSymlink uses filepath.Rel the same way).
//  4. refs/<revision> holds the commit (no newline) and is written only
//     when revision != commit (_cache_commit_hash_for_specific_revision;
//     refs/refs/pr/1 for a PR ref). Followed after the change above.
//     huggingface_hub writes the ref BEFORE downloading blobs; sparkform's
//     hubstage_snapshot writes it last on purpose (a ref never names an
//     incomplete snapshot); the final trees are the same.
//  5. In flight: huggingface_hub downloads to
//     blobs/<etag>.<8 hex>.incomplete (process-unique since PR #4228; older
//     versions used blobs/<etag>.incomplete and resumed it with Range), then
//     renames it to blobs/<etag> (_download_to_tmp_and_move,
//     _chmod_and_move). NOT followed: this client writes blobs/<etag>
//     directly (O_TRUNC), so an interrupted run leaves a short blob that
//     looks whole. Tests only compare finished trees, where this does not
//     show; sparkform's own blobs are checked by hubtest.CheckLayout.
//  6. Locks: .locks/<repo folder>/<etag>.lock outside the repo folder;
//     CACHEDIR.TAG at the cache root; .no_exist/<commit>/<file> for files
//     the hub answers 404; trees/<commit>.json (snapshot_download's tree
//     listing cache, newer versions). Not written by this client; none of
//     them is inside snapshots/ or blobs/, and hubtest.CompareTrees callers
//     compare the repo folder, so a tree with .no_exist or trees/ would
//     differ: compare fresh caches made by the same kind of run.
//  7. A snapshot is listed with the repo info API (siblings; newer
//     huggingface_hub uses /api/{type}s/{repo}/tree/{commit}?recursive=true)
//     and each file fetched by commit. This client lists with
//     /api/models/{repo}/revision/{rev} and resolves by commit. Followed.
package hfref
