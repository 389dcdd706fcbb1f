//go:build !linux

package sandbox

import "errors"

// refuseSideDoors is Linux's: no sandbox is entered elsewhere.
func refuseSideDoors() error { return errors.New("no sandbox on this system") }
