package ownobjects

import (
	"compress/zlib"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/git-flume/git-flume/internal/git"
)

// maxObject bounds a loose object's file: a larger one is refused.
const maxObject = 1 << 30

// Result is what one Import took in and refused.
type Result struct {
	// Taken counts the loose objects and packs taken in.
	Taken int
	// Refused names each file refused (and removed), and why.
	Refused []string
}

// Import takes the objects in the agent's own folder own into repo's
// shared store: its packs (those git finished: with an index beside
// them) each through index-pack, then its loose objects, hashed again, as
// one pack. A folder that is missing holds nothing.
func Import(ctx context.Context, repo *git.Repo, own string) (Result, error) {
	var res Result
	fd, err := unix.Open(own, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("open the agent's own objects %s: %w", own, err)
	}
	defer unix.Close(fd)
	if err := importPacks(ctx, repo, fd, own, &res); err != nil {
		return res, err
	}
	return res, importLoose(ctx, repo, fd, own, &res)
}

// importPacks takes in the finished packs of the folder fd's pack folder.
func importPacks(ctx context.Context, repo *git.Repo, fd int, own string, res *Result) error {
	names, dir, err := listDir(fd, "pack")
	if dir < 0 || err != nil {
		return err
	}
	defer unix.Close(dir)
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
	}
	for _, n := range names {
		base, ok := strings.CutSuffix(n, ".pack")
		if !ok || !strings.HasPrefix(base, "pack-") || !has[base+".idx"] {
			continue
		}
		f, err := openRegular(dir, n)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err == nil {
			err = repo.IndexPack(ctx, f)
			f.Close()
		}
		if err != nil {
			res.Refused = append(res.Refused, fmt.Sprintf("pack/%s: %v", n, err))
		} else {
			res.Taken++
		}
		for _, ext := range []string{".idx", ".rev", ".bitmap", ".keep", ".promisor", ".mtimes", ".pack"} {
			_ = unix.Unlinkat(dir, base+ext, 0)
		}
	}
	return nil
}

// listDir lists folder name in the folder fd and returns it open (-1
// where it is missing or not a folder).
func listDir(fd int, name string) ([]string, int, error) {
	dir, err := unix.Openat(fd, name, unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return nil, -1, nil
	}
	if err != nil {
		return nil, -1, err
	}
	f := os.NewFile(uintptr(dir), name)
	names, err := f.Readdirnames(-1)
	// f owns dir now: give the caller a descriptor of its own
	dup, derr := unix.Dup(dir)
	f.Close()
	if err == nil {
		err = derr
	}
	if err != nil {
		if derr == nil {
			unix.Close(dup)
		}
		return nil, -1, err
	}
	return names, dup, nil
}

// openRegular opens file name in the folder fd for reading: never
// through a link, never a fifo or device.
func openRegular(fd int, name string) (*os.File, error) {
	n, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(n), name)
	info, err := f.Stat()
	switch {
	case err != nil:
	case !info.Mode().IsRegular():
		err = errors.New("not a regular file")
	case info.Size() > maxObject:
		err = fmt.Errorf("%d bytes, more than %d", info.Size(), maxObject)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// loose is a loose object taken into the pack: its folder and name.
type loose struct {
	dir  int
	name string
}

// importLoose takes in the loose objects of the folder fd: each hashed
// again and written into one pack, which index-pack takes in.
func importLoose(ctx context.Context, repo *git.Repo, fd int, own string, res *Result) error {
	names, _, err := listDir(fd, ".")
	if err != nil {
		return err
	}
	tmpDir := filepath.Join(repo.CommonDir, "flume")
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return err
	}
	pack, err := os.CreateTemp(tmpDir, "own-objects-*.pack")
	if err != nil {
		return err
	}
	defer func() { pack.Close(); os.Remove(pack.Name()) }()
	w := newPackWriter(pack, repo.ObjectFormat)
	var taken []loose
	defer func() {
		for _, l := range taken {
			unix.Close(l.dir)
		}
	}()
	for _, sub := range names {
		if len(sub) == 2 && isHex(sub) {
			taken = w.addFolder(fd, sub, taken, res)
		}
	}
	if w.count == 0 {
		return nil
	}
	if err := w.finish(); err != nil {
		return fmt.Errorf("pack the agent's own objects %s: %w", own, err)
	}
	if err := repo.IndexPack(ctx, pack); err != nil {
		return fmt.Errorf("take in the agent's own objects %s: %w", own, err)
	}
	res.Taken += w.count
	removeTaken(taken)
	return nil
}

// addFolder adds the loose objects of folder sub of the folder fd to the
// pack, and to taken those added; each one refused is removed.
func (w *packWriter) addFolder(fd int, sub string, taken []loose, res *Result) []loose {
	files, dir, err := listDir(fd, sub)
	if dir < 0 || err != nil {
		return taken
	}
	defer unix.Close(dir)
	first := true
	for _, name := range files {
		if len(name) != w.hexLen-2 || !isHex(name) {
			continue
		}
		if err := w.addLoose(dir, sub+name, name); err != nil {
			if !errors.Is(err, unix.ENOENT) {
				res.Refused = append(res.Refused, fmt.Sprintf("%s/%s: %v", sub, name, err))
				_ = unix.Unlinkat(dir, name, 0)
			}
			continue
		}
		if first {
			d, _ := unix.Dup(dir)
			taken, first = append(taken, loose{dir: d}), false
		}
		taken = append(taken, loose{dir: -1, name: name})
	}
	return taken
}

// removeTaken removes the loose objects taken in: each folder's
// descriptor comes first, then the names in it.
func removeTaken(taken []loose) {
	dir := -1
	for _, l := range taken {
		if l.dir >= 0 {
			dir = l.dir
			continue
		}
		_ = unix.Unlinkat(dir, l.name, 0)
	}
}

func isHex(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// packWriter writes a pack of whole objects (version 2, no deltas) to a
// file: the count in its header is set when it is finished.
type packWriter struct {
	f      *os.File
	newH   func() hash.Hash
	hexLen int
	count  int
	end    int64
}

func newPackWriter(f *os.File, format string) *packWriter {
	w := &packWriter{f: f, newH: sha1.New, hexLen: 40, end: 12}
	if format == "sha256" {
		w.newH, w.hexLen = sha256.New, 64
	}
	return w
}

var packTypes = map[string]byte{"commit": 1, "tree": 2, "blob": 3, "tag": 4}

// addLoose adds the loose object file name in the folder dir, whose id
// must be id: its content is hashed again, and an object whose content
// is not what its id says is refused and leaves the pack as it was.
func (w *packWriter) addLoose(dir int, id, name string) error {
	f, err := openRegular(dir, name)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := zlib.NewReader(io.LimitReader(f, maxObject))
	if err != nil {
		return fmt.Errorf("not a loose object: %w", err)
	}
	typ, size, err := looseHeader(zr)
	if err != nil {
		return err
	}
	h := w.newH()
	fmt.Fprintf(h, "%s %d\x00", typ, size)
	if _, err := w.f.Seek(w.end, io.SeekStart); err != nil {
		return err
	}
	if _, err := w.f.Write(entryHeader(packTypes[typ], size)); err != nil {
		return err
	}
	zw := zlib.NewWriter(w.f)
	n, err := io.Copy(zw, io.TeeReader(io.LimitReader(zr, size+1), h))
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	switch got := hex.EncodeToString(h.Sum(nil)); {
	case err != nil:
	case n != size:
		err = fmt.Errorf("its header says %d bytes, it holds %d", size, n)
	case got != id:
		err = fmt.Errorf("its content hashes to %s, not to its name", got)
	}
	if err != nil {
		return err
	}
	end, err := w.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	w.end = end
	w.count++
	return nil
}

// looseHeader reads a loose object's header: "<type> <size>\0".
func looseHeader(r io.Reader) (string, int64, error) {
	var b [64]byte
	for i := range b {
		if _, err := io.ReadFull(r, b[i:i+1]); err != nil {
			return "", 0, fmt.Errorf("not a loose object: %w", err)
		}
		if b[i] != 0 {
			continue
		}
		typ, sz, ok := strings.Cut(string(b[:i]), " ")
		size, err := strconv.ParseInt(sz, 10, 64)
		if _, known := packTypes[typ]; !ok || !known || err != nil || size < 0 || size > maxObject {
			return "", 0, fmt.Errorf("not a loose object: header %q", b[:i])
		}
		return typ, size, nil
	}
	return "", 0, errors.New("not a loose object: no header")
}

// entryHeader is a pack entry's header: its type and size.
func entryHeader(typ byte, size int64) []byte {
	c := typ<<4 | byte(size&0x0f)
	size >>= 4
	var out []byte
	for size > 0 {
		out = append(out, c|0x80)
		c = byte(size & 0x7f)
		size >>= 7
	}
	return append(out, c)
}

// finish writes the pack's header and its trailing checksum, and leaves
// the file at its start.
func (w *packWriter) finish() error {
	if err := w.f.Truncate(w.end); err != nil {
		return err
	}
	hdr := make([]byte, 12)
	copy(hdr, "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(w.count))
	if _, err := w.f.WriteAt(hdr, 0); err != nil {
		return err
	}
	if _, err := w.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	h := w.newH()
	if _, err := io.Copy(h, w.f); err != nil {
		return err
	}
	if _, err := w.f.Write(h.Sum(nil)); err != nil {
		return err
	}
	_, err := w.f.Seek(0, io.SeekStart)
	return err
}
