package git

import (
	"errors"
	"io"
	"os"
	"path"
	"runtime"
	"strings"
	"syscall"

	"github.com/go-git/go-billy/v5"
)

// packFS hands go-git its pack files as read-only memory maps, as git
// itself reads them (issue 26). go-git reads a packed object by seeking
// and reading its file: two system calls or more an object, most of a
// status after `git gc`. A pack is never rewritten in place (git writes a
// new one and renames it), so a map stays whole for as long as it lives,
// even after a repack removes the file.
type packFS struct {
	billy.Filesystem
}

func (p packFS) Open(name string) (billy.File, error) {
	if path.Dir(name) != "objects/pack" || !strings.HasSuffix(name, ".pack") {
		return p.Filesystem.Open(name)
	}
	f, err := os.Open(p.Join(p.Root(), name))
	if err != nil {
		return p.Filesystem.Open(name) // its error, in go-git's words
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.Size() <= 0 || int64(int(info.Size())) != info.Size() {
		return p.Filesystem.Open(name)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(info.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return p.Filesystem.Open(name)
	}
	m := &mappedFile{name: name, data: data}
	// A process that forgets its storage (a watcher's earlier repository
	// value) gives the map back when the file is unreachable.
	m.cleanup = runtime.AddCleanup(m, func(b []byte) { syscall.Munmap(b) }, data)
	return m, nil
}

// mappedFile is a read-only billy.File over a memory map.
type mappedFile struct {
	name    string
	data    []byte
	off     int64
	cleanup runtime.Cleanup
}

var errReadOnly = errors.New("pack map is read-only")

func (m *mappedFile) Name() string { return m.name }

func (m *mappedFile) Read(b []byte) (int, error) {
	if m.data == nil {
		return 0, os.ErrClosed
	}
	if m.off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	n := copy(b, m.data[m.off:])
	m.off += int64(n)
	return n, nil
}

func (m *mappedFile) ReadAt(b []byte, off int64) (int, error) {
	if m.data == nil {
		return 0, os.ErrClosed
	}
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	n := copy(b, m.data[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (m *mappedFile) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = m.off + offset
	case io.SeekEnd:
		abs = int64(len(m.data)) + offset
	default:
		return 0, errors.New("bad whence")
	}
	if abs < 0 {
		return 0, errors.New("negative position")
	}
	m.off = abs
	return abs, nil
}

func (m *mappedFile) Close() error {
	if m.data == nil {
		return nil
	}
	m.cleanup.Stop()
	err := syscall.Munmap(m.data)
	m.data = nil
	return err
}

func (m *mappedFile) Write([]byte) (int, error) { return 0, errReadOnly }
func (m *mappedFile) Truncate(int64) error      { return errReadOnly }
func (m *mappedFile) Lock() error               { return nil }
func (m *mappedFile) Unlock() error             { return nil }
