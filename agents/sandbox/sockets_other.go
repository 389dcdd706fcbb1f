//go:build !linux

package sandbox

import "errors"

// refuseUnixSockets is Linux's: no sandbox is entered elsewhere.
func refuseUnixSockets() error { return errors.New("no sandbox on this system") }
