package docker

import (
	"github.com/sparkform/sparkform/providers/sdk"
)

// New returns the docker provider: docker_image and docker_container.
func New() sdk.Provider {
	cs := newClients()
	return &sdk.Router{
		Name: "docker",
		Resources: map[string]sdk.Resource{
			"docker_image":     &imageResource{clients: cs},
			"docker_container": &containerResource{clients: cs},
		},
	}
}
