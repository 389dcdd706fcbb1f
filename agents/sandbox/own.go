package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// prepareOwn makes the agent's own object folder own beside the shared
// store shared: a pack folder, the folder the shared store shows at in
// the view, and the alternates file naming it (with the shared store's
// own alternates, made absolute). Everything in own is the agent's to
// write and is read as hostile: no link in it is followed, a file or link
// where a folder belongs is removed, and the alternates file is replaced
// whole, never written through.
func prepareOwn(own, shared string) error {
	if err := os.MkdirAll(own, 0o755); err != nil {
		return err
	}
	fd, err := unix.Open(own, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var info int
	for _, name := range []string{"pack", filepath.Base(Below(shared)), "info"} {
		sub, err := ownFolder(fd, name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if name != "info" {
			unix.Close(sub)
			continue
		}
		info = sub
	}
	defer unix.Close(info)
	return replaceFile(info, "alternates", alternates(shared))
}

// ownFolder opens folder name in the folder fd, made when missing; a file
// or link there is removed first.
func ownFolder(fd int, name string) (int, error) {
	for range 2 {
		sub, err := unix.Openat(fd, name, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		switch {
		case err == nil:
			return sub, nil
		case errors.Is(err, unix.ENOENT):
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
			if err := unix.Unlinkat(fd, name, 0); err != nil {
				return -1, err
			}
		default:
			return -1, err
		}
		if err := unix.Mkdirat(fd, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, err
		}
	}
	return -1, errors.New("changed while it was made")
}

// replaceFile writes data as file name in the folder fd: a new file,
// renamed over what is there (a link is replaced, not followed).
func replaceFile(fd int, name string, data []byte) error {
	tmp := fmt.Sprintf(".%s.flume-%d", name, os.Getpid())
	_ = unix.Unlinkat(fd, tmp, 0)
	f, err := unix.Openat(fd, tmp, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	_, err = unix.Write(f, data)
	if cerr := unix.Close(f); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(fd, tmp, fd, name)
	}
	if err != nil {
		_ = unix.Unlinkat(fd, tmp, 0)
	}
	return err
}

// alternates is the agent's alternates file: the shared store as the
// view shows it, then the stores the shared store borrows from, each made
// absolute (a relative one is read by git from the folder that names it,
// which in the view is not where it is).
func alternates(shared string) []byte {
	var b bytes.Buffer
	b.WriteString(Below(shared) + "\n")
	data, err := os.ReadFile(filepath.Join(shared, "info", "alternates"))
	if err != nil {
		return b.Bytes()
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, `"`) {
			continue
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(shared, line)
		}
		b.WriteString(filepath.Clean(line) + "\n")
	}
	return b.Bytes()
}
