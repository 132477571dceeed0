package sdk

// StoredOf is stored (encodestored_test.go) for the external tests.
var StoredOf = stored
