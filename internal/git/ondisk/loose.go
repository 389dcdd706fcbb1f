package ondisk

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// Encoded is an object encoded in memory: its type, content and id.
type Encoded struct {
	Type string
	Data []byte
	ID   string
}

// Encode is the object of type typ holding data, its id hashed as git
// hashes it (SHA-1, by go-git).
func Encode(typ string, data []byte) *Encoded {
	t, _ := plumbing.ParseObjectType(typ) // the callers' types are git's
	return &Encoded{Type: typ, Data: data, ID: plumbing.ComputeHash(t, data).String()}
}

// Write stores obj as git writes a loose object: "<type> <size>\x00<content>",
// zlib-deflated, into objects/<2 hex>/<38 hex> under commonDir, through a
// temporary file in that folder that is renamed into place, read-only. An
// object already there is left alone: an object's name is its content.
// Fewer file-system calls than go-git's writer (no second folder, no mode
// change after): a state record is three objects, and on a slow file
// system their writing was most of a record write.
func (s *Store) Write(commonDir string, obj *Encoded) error {
	return s.WriteAll(commonDir, obj)
}

// WriteAll stores objs as Write does, their files written side by side.
// An object whose loose file fits in one file-system block is stored
// without compression (storedLoose); a larger one is deflated, one after
// another through one deflater (a deflater is a megabyte of fresh memory
// per process, and one used three times was far cheaper than three made
// side by side). The files side by side were faster than one after
// another (DESIGN.md, "Figures from code comments").
func (s *Store) WriteAll(commonDir string, objs ...*Encoded) error {
	files := make([][]byte, len(objs))
	var zw *zlib.Writer
	for i, obj := range objs {
		if _, err := os.Lstat(loosePath(commonDir, obj.ID)); err == nil {
			continue
		}
		header := obj.Type + " " + strconv.Itoa(len(obj.Data)) + "\x00"
		if files[i] = storedLoose(header, obj.Data); files[i] != nil {
			continue
		}
		if zw == nil {
			zw = zlibWriters.Get().(*zlib.Writer)
			defer zlibWriters.Put(zw)
		}
		var buf bytes.Buffer
		zw.Reset(&buf)
		if _, err := io.WriteString(zw, header); err != nil {
			return err
		}
		if _, err := zw.Write(obj.Data); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		files[i] = buf.Bytes()
	}
	errs := make([]error, len(objs))
	var wg sync.WaitGroup
	for i, data := range files {
		switch {
		case data == nil:
		case i == len(files)-1:
			errs[i] = writeLoose(commonDir, objs[i].ID, data)
		default:
			wg.Go(func() { errs[i] = writeLoose(commonDir, objs[i].ID, data) })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// blockSize is the file-system block a small file takes whole (ext4's,
// APFS's and most others' 4 KiB).
const blockSize = 4096

// storedLoose is the loose file of an object (header and data) as a zlib
// stream of one stored, uncompressed deflate block, as git writes it with
// core.looseCompression=0, or nil when that file would not fit in one
// file-system block. Deflating what fits in one block saves no disk (a
// record's blob, tree and commit all do), and skipping it spares the
// deflater: in a launch, two deflaters were 2.3 MB of the 3.0 MB its
// process allocated. Packing recompresses every object anyway.
func storedLoose(header string, data []byte) []byte {
	n := len(header) + len(data)
	// zlib header (2), block header (1), LEN and NLEN (4), Adler-32 (4)
	if n+11 > blockSize {
		return nil
	}
	out := make([]byte, 0, n+11)
	// CMF 0x78 (deflate, 32 KiB window), FLG 0x01 (fastest; CMF·256+FLG
	// is a multiple of 31); then the final block, stored (BFINAL 1, BTYPE 00)
	out = append(out, 0x78, 0x01, 0x01, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
	out = append(out, header...)
	out = append(out, data...)
	sum := adler32.Checksum(out[7:])
	return binary.BigEndian.AppendUint32(out, sum)
}

// loosePath is where object id is stored loose under commonDir.
func loosePath(commonDir, id string) string {
	return filepath.Join(commonDir, "objects", id[:2], id[2:])
}

// writeLoose writes the deflated object id through a temporary file in
// its folder (made when missing), renamed into place.
func writeLoose(commonDir, id string, deflated []byte) error {
	dir := filepath.Join(commonDir, "objects", id[:2])
	tmp := filepath.Join(dir, "tmp_obj_"+strconv.FormatUint(rand.Uint64(), 36))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.Mkdir(dir, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
			f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
		}
	}
	if err != nil {
		return err
	}
	_, err = f.Write(deflated)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, id[2:]))
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// zlibWriters keeps deflaters for reuse: each holds a megabyte of state,
// too much to allocate per object. They deflate at level 1, as git writes
// loose objects (core.looseCompression's default).
var zlibWriters = sync.Pool{New: func() any {
	zw, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed) // a valid level: no error
	return zw
}}

// readLoose reads loose object id under commonDir: its type and, unless
// headerOnly (but for a commit of at most 4 KiB), its content. An object
// with no loose file is fs.ErrNotExist.
func readLoose(commonDir, id string, headerOnly bool) (typ string, data []byte, err error) {
	f, err := os.Open(loosePath(commonDir, id))
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	zr, err := inflater(bufio.NewReaderSize(f, 4096))
	if err != nil {
		return "", nil, fmt.Errorf("read object %s: %w", id, err)
	}
	defer zr.release()
	br := bufio.NewReaderSize(zr, 512)
	header, err := br.ReadString(0)
	if err != nil {
		return "", nil, fmt.Errorf("read object %s: header: %w", id, err)
	}
	typ, sizeText, ok := strings.Cut(strings.TrimSuffix(header, "\x00"), " ")
	size, serr := strconv.ParseInt(sizeText, 10, 64)
	if !ok || serr != nil || size < 0 || size > maxObject {
		return "", nil, fmt.Errorf("read object %s: header %q", id, header)
	}
	if headerOnly && (typ != "commit" || size > 4096) {
		return typ, nil, nil
	}
	data = make([]byte, size)
	if _, err := io.ReadFull(br, data); err != nil {
		return "", nil, fmt.Errorf("read object %s: %w", id, err)
	}
	return typ, data, nil
}

// maxObject bounds what is read into memory here: a record is a few
// kilobytes; anything larger is git's to read.
const maxObject = 64 << 20

// zlibReaders keeps inflaters for reuse: each holds a 32 KiB window.
var zlibReaders sync.Pool

// inflater is a zlib reader of r taken from a pool; release puts it back.
func inflater(r io.Reader) (pooled, error) {
	if zr, ok := zlibReaders.Get().(io.ReadCloser); ok {
		if err := zr.(zlib.Resetter).Reset(r, nil); err != nil {
			return pooled{}, err
		}
		return pooled{zr}, nil
	}
	zr, err := zlib.NewReader(r)
	if err != nil {
		return pooled{}, err
	}
	return pooled{zr}, nil
}

// pooled is an inflater taken from the pool.
type pooled struct{ io.ReadCloser }

// release returns the inflater to the pool (closing a zlib reader only
// marks it done, so nothing is lost by not closing it).
func (p pooled) release() { zlibReaders.Put(p.ReadCloser) }
