package gitkit

import "errors"

// Sentinel errors; diagnostics wrap them with the repo, commit, subdir or
// path they concern.
var (
	// ErrRepoUnreachable: the node could not fetch from repo.
	ErrRepoUnreachable = errors.New("repository unreachable")
	// ErrCommitNotFound: the repo was fetched but has no such commit.
	ErrCommitNotFound = errors.New("commit not found")
	// ErrSubdirMissing: the commit has no directory subdir.
	ErrSubdirMissing = errors.New("subdir missing")
	// ErrPathExists: a create found something already at path.
	ErrPathExists = errors.New("path already exists")
	// ErrNotWritable: the parent of path is not writable and become is off.
	ErrNotWritable = errors.New("parent not writable")
)
