// Package sshconfig answers what OpenSSH's client would use to reach a
// host, from an ssh_config file (~/.ssh/config): Host aliases and patterns,
// HostName (with %h), Port, User, IdentityFile, IdentitiesOnly,
// UserKnownHostsFile and ProxyJump. A ProxyJump chain is returned as hops
// in dialling order, each resolved through the same file: a comma list
// ("ProxyJump a,b"), and the first hop's own ProxyJump before it, as
// `ssh -J` does (later hops' own ProxyJump are overridden by the list).
//
// Parsing is github.com/kevinburke/ssh_config's (Include, Host patterns
// with negation, Match Host/all); a file it cannot read is an error with
// its line and column. Port and User are left empty when the file does
// not set them, so the caller can apply its own precedence and defaults.
package sshconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/kevinburke/ssh_config"
)

var posRE = regexp.MustCompile(`^\((\d+), (\d+)\): (.*)$`)

// maxHops bounds a ProxyJump chain; a longer one is almost surely a loop.
const maxHops = 8

// Host is what the config says for one host.
type Host struct {
	// Alias is the name asked for; HostName is where to connect (Alias
	// when the config has no HostName).
	Alias, HostName string
	// Port is 0 and User "" when the config does not set them.
	Port int
	User string
	// IdentityFiles are the keys to offer, ~ expanded, in config order.
	IdentityFiles []string
	// IdentitiesOnly: offer only IdentityFiles, not every agent key.
	IdentitiesOnly bool
	// KnownHostsFile is the first UserKnownHostsFile, ~ expanded, or "".
	KnownHostsFile string
	// Jumps are the ProxyJump hops, the first dialled first.
	Jumps []Host
}

// Config is one parsed ssh_config file; the zero value (no file) says
// nothing for every host.
type Config struct {
	Path string
	cfg  *ssh_config.Config
}

// Load parses path (~ expanded). A missing file is an empty Config unless
// mustExist.
func Load(path string, mustExist bool) (*Config, error) {
	path = ExpandHome(path)
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !mustExist {
			return &Config{Path: path}, nil
		}
		return nil, err
	}
	cfg, err := ssh_config.DecodeBytes(b)
	if err != nil {
		// The parser says "(LINE, COL): message"; editors want path:LINE:COL.
		if m := posRE.FindStringSubmatch(err.Error()); m != nil {
			return nil, fmt.Errorf("%s:%s:%s: %s", path, m[1], m[2], strings.TrimPrefix(m[3], "ssh_config: "))
		}
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &Config{Path: path, cfg: cfg}, nil
}

// Resolve returns what the config says for alias.
func (c *Config) Resolve(alias string) (Host, error) {
	return c.resolve(alias, 0)
}

func (c *Config) resolve(alias string, depth int) (Host, error) {
	h := Host{Alias: alias, HostName: alias}
	if c == nil || c.cfg == nil {
		return h, nil
	}
	if depth > maxHops {
		return h, fmt.Errorf("%s: the ProxyJump chain for %s is longer than %d hops (a loop?)", c.Path, alias, maxHops)
	}
	get := func(key string) string {
		v, _ := c.cfg.Get(alias, key)
		return strings.TrimSpace(v)
	}
	if hn := get("HostName"); hn != "" {
		h.HostName = expandTokens(hn, alias)
	}
	if p := get("Port"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return h, fmt.Errorf("%s: Port %q for host %s is not a number from 1 to 65535", c.Path, p, alias)
		}
		h.Port = n
	}
	h.User = get("User")
	ids, _ := c.cfg.GetAll(alias, "IdentityFile")
	seen := map[string]bool{}
	for _, id := range ids {
		id = ExpandHome(expandTokens(strings.TrimSpace(id), alias))
		if id != "" && !strings.EqualFold(id, "none") && !seen[id] {
			seen[id] = true
			h.IdentityFiles = append(h.IdentityFiles, id)
		}
	}
	h.IdentitiesOnly = strings.EqualFold(get("IdentitiesOnly"), "yes")
	if kh := strings.Fields(get("UserKnownHostsFile")); len(kh) > 0 && !strings.EqualFold(kh[0], "none") {
		h.KnownHostsFile = ExpandHome(kh[0])
	}
	pj := get("ProxyJump")
	if pj == "" || strings.EqualFold(pj, "none") {
		return h, nil
	}
	for i, spec := range strings.Split(pj, ",") {
		user, host, port, err := parseJump(strings.TrimSpace(spec))
		if err != nil {
			return h, fmt.Errorf("%s: ProxyJump for host %s: %w", c.Path, alias, err)
		}
		hop, err := c.resolve(host, depth+1)
		if err != nil {
			return h, err
		}
		if user != "" {
			hop.User = user
		}
		if port != 0 {
			hop.Port = port
		}
		if i == 0 {
			h.Jumps = append(h.Jumps, hop.Jumps...)
		}
		hop.Jumps = nil
		h.Jumps = append(h.Jumps, hop)
		if len(h.Jumps) > maxHops {
			return h, fmt.Errorf("%s: the ProxyJump chain for %s is longer than %d hops (a loop?)", c.Path, alias, maxHops)
		}
	}
	return h, nil
}

// parseJump reads one ProxyJump entry: [user@]host[:port] or
// ssh://[user@]host[:port].
func parseJump(s string) (user, host string, port int, err error) {
	s = strings.TrimPrefix(s, "ssh://")
	if i := strings.LastIndex(s, "@"); i >= 0 {
		user, s = s[:i], s[i+1:]
	}
	host = s
	if strings.HasPrefix(s, "[") { // [v6]:port
		end := strings.Index(s, "]")
		if end < 0 {
			return "", "", 0, fmt.Errorf("%q: missing ]", s)
		}
		host, s = s[1:end], s[end+1:]
		if !strings.HasPrefix(s, ":") {
			s = ""
		} else {
			s = s[1:]
		}
	} else if i := strings.LastIndex(s, ":"); i >= 0 && strings.Count(s, ":") == 1 {
		host, s = s[:i], s[i+1:]
	} else {
		s = ""
	}
	if s != "" {
		if port, err = strconv.Atoi(s); err != nil || port < 1 || port > 65535 {
			return "", "", 0, fmt.Errorf("%q: port %q is not a number from 1 to 65535", host, s)
		}
	}
	if host == "" {
		return "", "", 0, fmt.Errorf("an entry has no host")
	}
	return user, host, port, nil
}

// expandTokens expands the tokens of HostName and IdentityFile that do
// not need a connection: %h (the alias) and %%.
func expandTokens(s, alias string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+1 < len(s) {
			switch s[i+1] {
			case 'h':
				b.WriteString(alias)
				i++
				continue
			case '%':
				b.WriteByte('%')
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ExpandHome turns a leading ~ or ~/ into the home directory.
func ExpandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~"))
}
