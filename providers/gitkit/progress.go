package gitkit

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sparkform/sparkform/providers/sdk"
)

// gitProgressRe matches one of git's --progress lines, e.g.
//
//	remote: Counting objects: 45% (450/1000)
//	Receiving objects:  45% (450/1000), 1.20 MiB | 500.00 KiB/s
//	Resolving deltas: 100% (5/5), done.
var gitProgressRe = regexp.MustCompile(`^(?:remote: )?([A-Z][a-z]+ (?:objects|deltas)):\s+(?:\d+%\s+)?\((\d+)/(\d+)\)(?:,\s*(.*?))?\s*$`)

// parseGitProgress turns one git progress line into a Progress event
// counted in objects; the transfer size and rate git prints (already
// human) stay in the message. Lines without a count ("Enumerating
// objects: 5, done.") are not reported.
func parseGitProgress(line string) (sdk.Progress, bool) {
	m := gitProgressRe.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return sdk.Progress{}, false
	}
	cur, err1 := strconv.ParseInt(m[2], 10, 64)
	tot, err2 := strconv.ParseInt(m[3], 10, 64)
	if err1 != nil || err2 != nil {
		return sdk.Progress{}, false
	}
	msg := "fetching: " + strings.ToLower(m[1][:1]) + m[1][1:]
	if extra := strings.TrimSuffix(strings.TrimSuffix(m[4], "done."), ", "); strings.TrimSpace(extra) != "" {
		msg += ", " + strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(extra), ","))
	}
	return sdk.Progress{Message: msg, Current: cur, Total: tot, Unit: sdk.UnitObjects}, true
}

// gitProgressThrottle passes a phase's first and last line and otherwise
// one line every progressEvery: git prints one per percent, and every
// event crosses the plugin connection.
type gitProgressThrottle struct {
	phase string
	last  time.Time
}

const progressEvery = 250 * time.Millisecond

func (t *gitProgressThrottle) due(p sdk.Progress) bool {
	phase, _, _ := strings.Cut(p.Message, ",")
	now := time.Now()
	if phase != t.phase || p.Current == p.Total || now.Sub(t.last) >= progressEvery {
		t.phase, t.last = phase, now
		return true
	}
	return false
}
