//go:build !linux

package runenv

import (
	"errors"
	"os"
)

// fileClone is Linux's FICLONE only: elsewhere files are copied in full.
func fileClone(dst, src *os.File) error {
	return errors.ErrUnsupported
}
