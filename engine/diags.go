// This file holds how the engine builds diagnostics: plain errors,
// provider diagnostics placed on the configuration, and the messages
// several phases share.

package engine

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/providers/sdk"
)

// errDiag is an error diagnostic with no source range.
func errDiag(summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail}
}

// sdkDiags converts provider diagnostics into hcl ones, pointing at the
// attribute they name when the body has it. body is asked for only for a
// diagnostic that names an attribute: a walk lets most root blocks'
// bodies go (releaseRootBodies), and a call without one parses none
// again.
func sdkDiags(ds sdk.Diagnostics, addr string, body func() hcl.Body, rng *hcl.Range) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range ds {
		sev := hcl.DiagError
		if d.Severity == sdk.Warning {
			sev = hcl.DiagWarning
		}
		hd := &hcl.Diagnostic{Severity: sev, Summary: d.Summary, Detail: d.Detail}
		if addr != "" {
			hd.Detail = strings.TrimSpace(hd.Detail + "\n\n(" + addr + ")")
		}
		if body != nil && len(d.Path) > 0 {
			hd.Subject = config.AttributeRange(body(), d.Path)
		}
		if hd.Subject == nil && rng != nil {
			r := *rng
			hd.Subject = &r
		}
		out = append(out, hd)
	}
	return out
}

// cannotStart is the diagnostic for a provider that would not start.
func cannotStart(provider string, err error) *hcl.Diagnostic {
	return errDiag("Cannot start provider "+provider, err.Error())
}

// filterWarnings keeps the warnings of ds.
func filterWarnings(ds sdk.Diagnostics) sdk.Diagnostics {
	var out sdk.Diagnostics
	for _, d := range ds {
		if d.Severity == sdk.Warning {
			out = append(out, d)
		}
	}
	return out
}

// nodeLabel names a node in messages.
func nodeLabel(n sdk.Node) string {
	if n.Name != "" {
		return n.Name
	}
	if n.Transport == "local" {
		return "the local node"
	}
	return fmt.Sprintf("%s@%s:%d", n.User, n.Host, n.Port)
}
