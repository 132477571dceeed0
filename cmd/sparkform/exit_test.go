package main

import (
	"errors"
	"os/exec"
)

func asExit(err error, ee **exec.ExitError) bool { return errors.As(err, ee) }
