package state

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// bbolt keeps two meta pages and uses the newer one that passes its
// checksum: a damaged newest meta page makes it fall back to the previous
// transaction without a word, and every commit since is gone (outputs
// vanish, a plan creates again what exists). Nothing inside the file can
// tell, so each commit also records its bbolt transaction id outside it,
// in CommitRecordPath (written through a temporary file and a rename,
// after the commit is durable and before the file's flock is let go).
// A file whose transaction id is behind the record is refused.
//
// A crash between the commit and the record leaves the record behind the
// file, which is allowed; the record is never ahead of a file that was not
// damaged or replaced.

// CommitRecordPath is where the state file at path records its last
// commit.
func CommitRecordPath(path string) string { return path + ".commit" }

const commitRecordHead = "sparkform state commit record (do not edit)"

func writeCommitRecord(path, lineage string, txid uint64) error {
	rec := CommitRecordPath(path)
	tmp := rec + ".tmp"
	body := fmt.Sprintf("%s\nlineage %s\ntxid %d\n", commitRecordHead, lineage, txid)
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		return fmt.Errorf("state: record the commit in %s: %w", rec, err)
	}
	if err := os.Rename(tmp, rec); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("state: record the commit in %s: %w", rec, err)
	}
	return nil
}

// readCommitRecord returns the transaction id recorded for path; ok is
// false when there is no record (a state written before format 4, or
// never committed).
func readCommitRecord(path string) (txid uint64, ok bool, err error) {
	rec := CommitRecordPath(path)
	data, err := os.ReadFile(rec)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("state: read %s: %w", rec, err)
	}
	var lineage string
	head, rest, _ := strings.Cut(string(data), "\n")
	if head != commitRecordHead {
		return 0, false, errBadRecord
	}
	if n, err := fmt.Sscanf(rest, "lineage %s\ntxid %d\n", &lineage, &txid); err != nil || n != 2 {
		return 0, false, errBadRecord
	}
	return txid, true, nil
}

var errBadRecord = errors.New("unreadable")

// checkRollback refuses the file at path when its current transaction
// (txid, from the meta page bbolt will use) is older than the recorded
// commit.
func checkRollback(path string, txid uint64) error {
	want, ok, err := readCommitRecord(path)
	if errors.Is(err, errBadRecord) {
		return damaged(path, "its commit record %s is %v (it says which commit the file must hold at least); "+
			"if the state file is known good, remove the record", CommitRecordPath(path), err)
	}
	if err != nil || !ok || txid >= want {
		return err
	}
	return &DamagedError{Path: path, Reason: fmt.Sprintf("it holds bbolt transaction %d, but its last commit was transaction %d (%s): "+
		"the newest meta page is damaged and bbolt fell back to an older one, or an older copy replaced the file, "+
		"and the commits since are missing", txid, want, CommitRecordPath(path)), rollback: true}
}

// fileTxid is the transaction id of the meta page bbolt would use in the
// file at path (ok false when it has none that passes).
func fileTxid(path string) (uint64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	m, err := readMetaPages(f, path)
	if err != nil || m.pageSize == 0 {
		return 0, false
	}
	return m.txid, true
}
