package hubstage

import "errors"

// Sentinel errors. Every refusal wraps one of these (errors.Is) and names
// the file it is about in its message.
var (
	// ErrBadConfig is an attribute value the provider cannot use.
	ErrBadConfig = errors.New("invalid configuration")
	// ErrNoHub is a hub_dir that does not exist on the node.
	ErrNoHub = errors.New("hub_dir not found")
	// ErrNoRepo is a repo folder (models--ORG--NAME) missing from the hub.
	ErrNoRepo = errors.New("repository not in the hub")
	// ErrNoRef is a revision with no refs/<revision> file.
	ErrNoRef = errors.New("ref not found")
	// ErrBadRef is a ref file that does not hold a 40-hex commit.
	ErrBadRef = errors.New("ref does not hold a commit")
	// ErrNoSnapshot is a commit with no snapshots/<commit> folder.
	ErrNoSnapshot = errors.New("snapshot not found")
	// ErrNotRegular is a snapshot entry that resolves to something other
	// than a regular file (a fifo, a device, a socket).
	ErrNotRegular = errors.New("not a regular file")
	// ErrEscapesHub is an entry whose real path lies outside hub_dir.
	ErrEscapesHub = errors.New("link escapes hub_dir")
	// ErrLinkLoop is a symlink (file or folder) that never resolves.
	ErrLinkLoop = errors.New("symlink loop")
	// ErrDangling is a symlink to nothing (an interrupted download).
	ErrDangling = errors.New("dangling symlink")
	// ErrIncomplete is an entry that resolves to a *.incomplete blob.
	ErrIncomplete = errors.New("incomplete download")
	// ErrBadName is a file name the manifest cannot carry (tab, newline).
	ErrBadName = errors.New("unrepresentable file name")
	// ErrBadTarget is a container path that is not clean, absolute, under
	// target and unique.
	ErrBadTarget = errors.New("bad target path")
	// ErrEmpty is a selection (after include/exclude) with no files.
	ErrEmpty = errors.New("no files selected")
	// ErrWalk is a walk that failed or returned output it cannot parse.
	ErrWalk = errors.New("snapshot walk failed")
	// ErrChanged is a hub that changed between plan and apply.
	ErrChanged = errors.New("snapshot changed since plan")
	// ErrForeignManifest is a manifest_path file this resource did not write.
	ErrForeignManifest = errors.New("manifest_path holds a file this resource did not write")
	// ErrSourceUnreachable is a destination that cannot reach the source
	// node's sshd at source_address (a direct copy needs that link).
	ErrSourceUnreachable = errors.New("source node unreachable from the destination")
)

// Sentinel errors of hubstage_snapshot.
var (
	// ErrNoFit is a transfer larger than the free space minus keep_free.
	ErrNoFit = errors.New("the snapshot does not fit")
	// ErrHub is a hub that refused or failed a request.
	ErrHub = errors.New("hub request failed")
	// ErrToken is a token the provider cannot send safely.
	ErrToken = errors.New("unusable hub token")
	// ErrBadListing is a listing with a path or address the cache cannot hold.
	ErrBadListing = errors.New("unusable snapshot listing")
	// ErrOccupied is a snapshot path held by something other than a link.
	ErrOccupied = errors.New("snapshot path occupied")
	// ErrTransfer is a transfer that failed on the node.
	ErrTransfer = errors.New("snapshot transfer failed")
	// ErrObserve is an observation whose output cannot be read.
	ErrObserve = errors.New("snapshot observation failed")
)
