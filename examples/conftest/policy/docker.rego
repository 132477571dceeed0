# A conftest policy for sparkform plans, written as people write them for
# Terraform plans: it reads `sparkform show -json PLANFILE` (Terraform's
# JSON plan format) and denies
#   - a plan that destroys a docker_container (a delete, or a replacement:
#     a serving container going away needs a person's review), and
#   - a docker_container that would run an image not pinned by digest
#     (NAME@sha256:..., or an image id sha256:...): a tag can move.
#
#   sparkform plan -out plan.bin
#   sparkform show -json plan.bin > plan.json
#   conftest test plan.json            # policy/ is conftest's default
package main

import rego.v1

deny contains msg if {
	some rc in input.resource_changes
	rc.type == "docker_container"
	"delete" in rc.change.actions
	msg := sprintf("%s would be destroyed (actions %v): a serving container going away needs review", [rc.address, rc.change.actions])
}

deny contains msg if {
	some rc in input.resource_changes
	rc.type == "docker_container"
	some action in rc.change.actions
	action in {"create", "update"}
	image := object.get(rc.change.after, "image", "")
	not pinned(image)
	msg := sprintf("%s runs image %q, which is not pinned by digest (NAME@sha256:...)", [rc.address, image])
}

pinned(image) if contains(image, "@sha256:")

pinned(image) if startswith(image, "sha256:")
