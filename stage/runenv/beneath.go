package runenv

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Writing into a place whose files a branch chose: the place's
// folders are whatever its branch tracks, a symbolic link to anywhere
// among them. A copy goes in by folder descriptors, each folder opened
// below the one before without following a link, and its file renamed in
// from flume's own temporary folder: a rename replaces whatever sits at
// the name, a link included, and never writes through it. Nothing is
// written outside the place, whatever the branch tracks or changes meanwhile.

// openDir opens folder path itself, never a link there.
func openDir(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, linkError(filepath.Base(path), err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// dirBeneath opens folder rel below root, making the folders missing on
// the way (0755), following no link and never stepping out ("..").
func dirBeneath(root *os.File, rel string) (*os.File, error) {
	dir, err := unix.Dup(int(root.Fd()))
	if err != nil {
		return nil, err
	}
	at := dir
	if rel == "." || rel == "" {
		return os.NewFile(uintptr(at), root.Name()), nil
	}
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		if name == "" || name == "." || name == ".." {
			_ = unix.Close(at)
			return nil, fmt.Errorf("%s steps out of the place", rel)
		}
		next, err := unix.Openat(at, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(at, name, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(at, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		_ = unix.Close(at)
		if err != nil {
			return nil, linkError(name, err)
		}
		at = next
	}
	return os.NewFile(uintptr(at), filepath.Join(root.Name(), rel)), nil
}

// linkError says what opening folder name as a folder met.
func linkError(name string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return errors.New(throughLink(name))
	}
	return err
}

// throughLink is why nothing goes to a path of the place below name, a
// link (or no folder) there.
func throughLink(name string) string {
	return name + " is a symbolic link or not a folder in the place: nothing is written through it"
}

// copyBeneath copies the regular file src (never a link) to rel below the
// place's folder root, mode 0600, through a new file of tmp renamed in.
func copyBeneath(src string, root, tmp *os.File, rel string) error {
	if rel == "" || filepath.IsAbs(rel) || rel != filepath.Clean(rel) || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("%s is not a path inside the place", rel)
	}
	in, err := os.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return linkError(filepath.Base(src), err)
	}
	defer in.Close()
	if info, err := in.Stat(); err != nil || !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	parent, err := dirBeneath(root, filepath.Dir(rel))
	if err != nil {
		return err
	}
	defer parent.Close()
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "env-" + hex.EncodeToString(b[:])
	fd, err := unix.Openat(int(tmp.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(fd), name)
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(int(tmp.Fd()), name, int(parent.Fd()), filepath.Base(rel))
	}
	if err != nil {
		_ = unix.Unlinkat(int(tmp.Fd()), name, 0)
		return fmt.Errorf("copy %s: %w", rel, err)
	}
	return nil
}
