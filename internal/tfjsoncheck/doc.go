// Package tfjsoncheck reads sparkform's JSON documents with the client
// that tools written for Terraform use, github.com/hashicorp/terraform-json
// (terraform-exec, policy tools, plan summarisers), and checks what such a
// tool relies on: the document decodes and Validate()s; every resource
// change has a change object with valid actions whose before and after
// fit them; mode, type, name, provider_name and index agree with the
// address; module addresses nest; and no sensitive value is written
// (where a sensitive mask says true, the value is null).
//
// For tests only: the shipped binary never imports it (it brings
// terraform-json into the test build alone).
package tfjsoncheck
