// Package hubtest is a fake huggingface.co for tests and benchmarks: real
// HTTP listeners on 127.0.0.1 serving generated repositories the way the
// real hub does, plus tools to check a huggingface_hub cache.
//
// Repositories are generated (GenRepo, Repo.AddCommit): content is a
// deterministic function of a seed and each file's key, produced on the fly
// (a 64 KiB table per open file, O(1) random access), so a 2 GiB file costs
// no memory and Range requests are exact. Addresses are real: an LFS file's
// etag is the sha256 of its content, a regular file's the git blob sha1;
// commits are 40-hex; refs ("main", "refs/pr/1") can be moved (SetRef).
//
// The Server answers, for models (no prefix) and datasets ("datasets/"):
//
//	GET /api/{models,datasets}/{repo}[/revision/{rev}][?blobs=true]
//	    {"id","sha","siblings":[{"rfilename"[,"size","blobId","lfs":{"sha256","size","pointerSize"}]}],...}
//	GET /api/{models,datasets}/{repo}/tree/{rev}[/{folder}][?recursive=true]
//	    [{"type":"file"|"directory","oid","size","path"[,"lfs":{"oid","size","pointerSize"}]}]
//	    (one page: the real hub pages long listings)
//	HEAD|GET /[datasets/]{repo}/resolve/{rev}/{path}
//	    X-Repo-Commit, ETag (quoted); regular files: 200 with the bytes;
//	    LFS files: 302 to the CDN listener with X-Linked-Etag (sha256) and
//	    X-Linked-Size. Bytes come with Accept-Ranges and Range support (206).
//
// A revision is a ref (URL-escaped "refs%2Fpr%2F1" or not) or a full commit.
// Errors carry X-Error-Code like the hub (RepoNotFound, RevisionNotFound,
// EntryNotFound). With SetToken every hub request needs
// "Authorization: Bearer <token>" (401); CDN URLs are pre-signed instead
// (403 when the signature is wrong or expired), like the real CDN.
//
// Faults (Throttle, CutAfter, Fail404) and counters (Bytes per file path,
// TotalBytes, Requests per endpoint, Log; Stats, also as JSON at
// GET /_hubtest/stats) let tests assert what was fetched, e.g. that a
// resumed transfer did not fetch the first part again. Command hubserve
// (cmd/hubserve) runs a server as a process for bench scripts.
//
// CompareTrees/DiffTrees compare two caches (paths, link targets, bytes);
// CheckLayout/LayoutProblems check one cache against a Repo and the rules of
// huggingface_hub's file_download.py. The independent reference client is
// in the hfref subpackage.
package hubtest
