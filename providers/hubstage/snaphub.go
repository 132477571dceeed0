package hubstage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/sparkform/sparkform/providers/node"
)

// hubSource fetches from a Hugging Face hub endpoint. The node runs curl
// itself (it has the internet link, not the operator's machine): one curl
// for the listing, then the receiver's parallel curls.
type hubSource struct {
	endpoint string
	// cfg is the curl config that carries the token ("" none): it travels
	// on stdin only (curl -K -), never in argv, env, state or plan.
	cfg string
	// commit is what the last List resolved (the resolve URLs name it).
	mu     sync.Mutex
	commit string
}

// newHubSource reads the endpoint (endpoint, else HF_ENDPOINT, else the
// public hub) and the token from the operator's environment variable
// named by token_env.
func newHubSource(env *snapEnv, s *snapSpec) (snapSource, error) {
	ep := s.Endpoint
	if ep == "" {
		ep = env.getenv("HF_ENDPOINT")
		if ep != "" {
			if err := checkEndpoint(ep); err != nil {
				return nil, fmt.Errorf("the HF_ENDPOINT environment variable: %w", err)
			}
		}
	}
	if ep == "" {
		ep = defaultEndpoint
	}
	h := &hubSource{endpoint: strings.TrimRight(ep, "/")}
	if tok := env.getenv(s.TokenEnv); tok != "" {
		for _, c := range tok {
			if c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' {
				// Never echo any of it.
				return nil, fmt.Errorf("%w: the value of %s holds a space, quote, backslash or non-ASCII character; a hub token does not", ErrToken, s.TokenEnv)
			}
		}
		h.cfg = `header = "Authorization: Bearer ` + tok + `"`
	}
	return h, nil
}

func (h *hubSource) Describe() string { return "hub " + h.endpoint }

// repoPath is the repo in hub URLs: ORG/NAME, datasets/ORG/NAME.
func repoPath(s *snapSpec) string {
	var segs []string
	for _, p := range strings.Split(s.RepoID, "/") {
		segs = append(segs, url.PathEscape(p))
	}
	if s.RepoType == "dataset" {
		return "datasets/" + strings.Join(segs, "/")
	}
	return strings.Join(segs, "/")
}

// escapePath escapes each segment of a file path for a resolve URL.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// hubRevision is the API's answer for a revision with ?blobs=true.
type hubRevision struct {
	SHA      string `json:"sha"`
	Siblings []struct {
		RFilename string `json:"rfilename"`
		Size      *int64 `json:"size"`
		BlobID    string `json:"blobId"`
		LFS       *struct {
			SHA256 string `json:"sha256"`
			Size   int64  `json:"size"`
		} `json:"lfs"`
	} `json:"siblings"`
}

// List asks the hub, from the node, in ONE curl.
func (h *hubSource) List(ctx context.Context, dst node.Conn, s *snapSpec) (*snapListing, error) {
	u := h.endpoint + "/api/" + s.RepoType + "s/" + repoPath(s) + "/revision/" + url.PathEscape(s.Revision) + "?blobs=true"
	argv := []string{"curl", "-sS", "-L", "--max-time", "300", "-K", "-", "-w", "\n%{http_code}", u}
	res, err := dst.Run(ctx, node.Cmd{Argv: argv, Stdin: strings.NewReader(h.cfg + "\n")})
	if err != nil {
		if msg := exitStderr(err); msg != "" {
			return nil, fmt.Errorf("%w: curl on %s for %s: %s", ErrHub, dst.Name(), u, msg)
		}
		return nil, fmt.Errorf("%w: curl on %s for %s: %v", ErrHub, dst.Name(), u, err)
	}
	out := strings.TrimRight(string(res.Stdout), "\n")
	i := strings.LastIndexByte(out, '\n')
	code, body := out[i+1:], ""
	if i >= 0 {
		body = out[:i]
	}
	switch code {
	case "200":
	case "401", "403":
		return nil, fmt.Errorf("%w: %s answered %s for %s: the repository needs a token (put it in the environment variable %s, which token_env names) or the token lacks access",
			ErrHub, h.endpoint, code, s.RepoID, s.TokenEnv)
	case "404":
		return nil, fmt.Errorf("%w: %s answered 404: no repository %s (repo_type %q) or no revision %q there", ErrHub, h.endpoint, s.RepoID, s.RepoType, s.Revision)
	default:
		return nil, fmt.Errorf("%w: %s answered HTTP %s for %s: %.200s", ErrHub, h.endpoint, code, u, body)
	}
	var rv hubRevision
	if err := json.Unmarshal([]byte(body), &rv); err != nil {
		return nil, fmt.Errorf("%w: %s: the revision answer is not the hub API's JSON: %v", ErrHub, u, err)
	}
	l := &snapListing{Commit: rv.SHA}
	for _, f := range rv.Siblings {
		sf := snapFile{Path: f.RFilename, Etag: f.BlobID}
		if f.Size != nil {
			sf.Size = *f.Size
		}
		if f.LFS != nil {
			sf.Etag, sf.Size = f.LFS.SHA256, f.LFS.Size
		}
		if sf.Etag == "" {
			return nil, fmt.Errorf("%w: %s: file %q has no blobId (the endpoint ignored ?blobs=true)", ErrHub, u, f.RFilename)
		}
		l.Files = append(l.Files, sf)
	}
	if err := checkListing(l); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.commit = l.Commit
	h.mu.Unlock()
	return l, nil
}

// hubFetchScript ($1 endpoint $2 repo path $3 commit, then ETAG OFFSET
// URLPATH) streams one file from OFFSET to stdout; the curl config (the
// token) comes on stdin. Redirects are followed (LFS files live on a
// CDN); curl sends the Authorization header to the hub host only.
//
// With "- - -" (snapBatcher, kind "files") it fetches every "ETAG<TAB>URLPATH" line of
// stdin after the config line into ./ETAG, in parallel (curl -Z, at most
// $4 at once), resuming files already there; the config with the token
// is written by printf (a builtin) and reaches curl on stdin, the URL
// lines by one awk (URL paths are escaped: no quote, no backslash).
const hubFetchScript = `ep=$1 rp=$2 c=$3 par=$4 e=$5 off=$6 p=$7
if [ "$e" = - ]; then
  IFS= read -r cfg || cfg=
  { printf '%s\n' "$cfg"
    u="$ep/$rp/resolve/$c/" awk -F '\t' '{ printf "url = \"%s%s\"\noutput = \"%s\"\n", ENVIRON["u"], $2, $1 }'; } | exec curl -sS -f -L --connect-timeout 30 --speed-limit 1 --speed-time 120 -Z --parallel-max "$par" -C - -K -
  exit
fi
set -- curl -sS -f -L --connect-timeout 30 --speed-limit 1 --speed-time 120 -K -
if [ "$off" -gt 0 ]; then set -- "$@" -C "$off"; fi
exec "$@" "$ep/$rp/resolve/$c/$p"
`

// Open returns the transfer: curl on the node, nothing to set up.
// The resolve URLs name the commit List resolved (or the pinned one).
func (h *hubSource) Open(_ context.Context, _ node.Conn, s *snapSpec) (snapTransfer, error) {
	h.mu.Lock()
	c := h.commit
	h.mu.Unlock()
	if c == "" && hex40.MatchString(s.Revision) {
		c = s.Revision
	}
	if c == "" {
		return nil, fmt.Errorf("%w: open before list", ErrHub)
	}
	return &hubTransfer{argv: []string{"sh", "-c", hubFetchScript, "sh", h.endpoint, repoPath(s), c, strconv.Itoa(s.Parallel)}, cfg: []byte(h.cfg),
		base: h.endpoint + "/" + repoPath(s) + "/resolve/" + c + "/"}, nil
}

type hubTransfer struct {
	argv []string
	cfg  []byte
	base string // the resolve URLs' prefix: the helper's URLBASE
}

// HelperFetch implements snapHelperFetcher: the helper fetches base+URLPATH
// with the config line's header, as hubFetchScript's curl does.
func (t *hubTransfer) HelperFetch() []string { return []string{t.base} }

func (t *hubTransfer) NodeFetch() ([]string, []byte, bool) { return t.argv, t.cfg, true }

// NodeBatch implements snapBatcher: small blobs go in one curl.
func (t *hubTransfer) NodeBatch() ([]string, string, bool) {
	return append(append([]string(nil), t.argv...), "-", "-", "-"), "files", true
}

func (t *hubTransfer) Stream(context.Context, snapFile, int64) (io.ReadCloser, error) {
	return nil, errors.New("the hub source is fetched by the node")
}

func (t *hubTransfer) Relayed() int64              { return 0 }
func (t *hubTransfer) Close(context.Context) error { return nil }
