// Package jsonui is the format of sparkform's machine-readable output:
// Terraform's "machine-readable UI" (the -json stream of plan, apply and
// destroy) and its validate -json document, field for field, so that
// clients of Terraform's (terraform-json, terraform-exec) read them.
//
// It holds the message writer (Stream), the shapes Terraform documents
// (Diagnostic with its range, snippet and values; the resource object;
// Terraform's actions, reasons and hook texts; id_key/id_value) and
// nothing about when a message is sent: that is the CLI's views'
// (cmd/sparkform/views_json.go). sparkform's own messages and fields use
// names Terraform does not; docs/cli.md lists them and what still differs.
package jsonui
