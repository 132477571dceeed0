package kernelsim

import "errors"

// Sentinel errors.
var (
	// ErrCatalog: the module catalogue has a line the simulator cannot parse.
	ErrCatalog = errors.New("kernelsim: bad catalogue")
	// ErrNotFound: the module is not in the catalogue.
	ErrNotFound = errors.New("kernelsim: module not found")
	// ErrNotLoaded: the module is not loaded.
	ErrNotLoaded = errors.New("kernelsim: module not loaded")
	// ErrInUse: the module's refcount is not zero.
	ErrInUse = errors.New("kernelsim: module in use")
	// ErrInvalid: a parameter value the module rejects.
	ErrInvalid = errors.New("kernelsim: invalid argument")
)
