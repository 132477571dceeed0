package sdk

import (
	"fmt"
	"os"
	"sync"
)

// NoticePrefix starts a line a plugin writes to stderr for the user to
// see as it happens (the host shows it; other stderr lines are debug
// logs): "retrying the connection to node.x", not a diagnostic.
const NoticePrefix = "sparkform-notice: "

var noticeMu sync.Mutex

// Notice writes one notice line for the user to the plugin's stderr.
func Notice(msg string) {
	noticeMu.Lock()
	defer noticeMu.Unlock()
	fmt.Fprintln(os.Stderr, NoticePrefix+msg)
}
