// Package ctyval holds the small readers and builders for cty values that
// every provider needs: read an attribute as a Go string, list or map, and
// build a list, set or map value back. Providers share it so "null",
// "unknown" and "empty" mean the same thing in each.
//
// The contract: a reader never panics on a null, unknown or wrongly typed
// value; it returns the zero value (nil for slices and maps). Callers that
// must tell "unknown" from "unset" check Known or IsSet first. A null or
// unknown element of a map is left out, as a null map element means "not
// set". The *OrNull builders turn a nil Go value into a null cty value and
// an empty one into an empty cty value; ListVal and MapVal never build null.
package ctyval
