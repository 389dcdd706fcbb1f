package ondisk

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// stampable: a stamp vouches for a work tree on Linux, where a file's
// change time is read (which no tool sets back).
const stampable = true

// atCWD, as the folder of lstatAt and openDirAt, takes name as a path.
const atCWD = unix.AT_FDCWD

// lstatAt reads what a stamp takes of name in the folder open as dirfd,
// not following a link. Read relative to its open folder, a file costs
// the kernel one lookup, where its whole path costs one per folder on
// the way.
func lstatAt(dirfd int, name string) (fileStat, error) {
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return fileStat{}, err
	}
	return fileStat{
		mode: uint64(st.Mode), size: uint64(st.Size), ino: st.Ino, dev: st.Dev,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(),
	}, nil
}

// openDirAt opens folder name in the folder open as dirfd, never through
// a link, for reading its entries (path names it in errors). Opened
// blocking, it is not handed to Go's poller, which would try and fail
// for a folder (two more system calls each).
func openDirAt(dirfd int, name, path string) (*os.File, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

func retryEINTR(call func() error) error {
	for {
		if err := call(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
