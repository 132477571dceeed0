package state

// faultBeforeCommit, when set, is called by the commit loop with the
// addresses of the deferred Completes in a batch, before the batch is
// committed: the window in which a crash loses results that the provider
// already returned (their intents stay in the journal). It is nil in the
// shipped binary; a binary built with the sparkform_faultinject tag (see
// fault_inject.go) can pause there, so tests kill the CLI at exactly that
// point.
var faultBeforeCommit func(addrs []string)

// deferredAddrs are the addresses of the deferred Completes in batch.
func deferredAddrs(batch []*op) []string {
	var addrs []string
	for _, o := range batch {
		if o.addr != "" {
			addrs = append(addrs, o.addr)
		}
	}
	return addrs
}
