//go:build !linux

package ondisk

import (
	"errors"
	"os"
)

// stampable: a stamp vouches for a work tree on Linux only; elsewhere the
// radar asks git each time.
const stampable = false

const atCWD = -100

var errNoStat = errors.New("no stamp on this system")

func lstatAt(int, string) (fileStat, error) { return fileStat{}, errNoStat }

func openDirAt(int, string, string) (*os.File, error) { return nil, errNoStat }
