package hubstage

import (
	"context"
	"errors"

	"github.com/sparkform/sparkform/providers/node"
)

// hubSource fetches from a Hugging Face hub endpoint; the node runs curl.
type hubSource struct {
	env      *snapEnv
	endpoint string
	token    string
}

func newHubSource(env *snapEnv, s *snapSpec) (snapSource, error) {
	ep := s.Endpoint
	if ep == "" {
		ep = env.getenv("HF_ENDPOINT")
	}
	if ep == "" {
		ep = defaultEndpoint
	}
	return &hubSource{env: env, endpoint: ep, token: env.getenv(s.TokenEnv)}, nil
}

func (h *hubSource) Describe() string { return "hub " + h.endpoint }

func (h *hubSource) List(ctx context.Context, dst node.Conn, s *snapSpec) (*snapListing, error) {
	return nil, errors.New("not yet")
}

func (h *hubSource) Open(ctx context.Context, dst node.Conn, s *snapSpec) (snapTransfer, error) {
	return nil, errors.New("not yet")
}

