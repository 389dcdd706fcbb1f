package ondisk

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Reading packed objects in process, as git does: the pack and its index
// mapped read-only, an object found by binary search of the index, its
// deltas applied here. go-git decoded a pack's whole index
// into memory at its first packed read (a cost that grows with the
// repository's history, not with flume's records; DESIGN.md, "Figures
// from code comments"), listed the
// objects folder for every read, and allowed one reader at a time.
// Anything unexpected (an index version other than 2, an object in no
// local pack, a malformed entry) is an error, which sends the read to
// git.

// packSet is a repository's packs, found on first use and found again
// when an object is in none of them (a repack since).
type packSet struct {
	mu      sync.Mutex
	packs   []*pack
	scanned bool

	// bases caches delta bases by pack and offset: a record's blob is
	// often a delta on another record's, in chains up to git's depth.
	cacheMu   sync.Mutex
	cache     map[baseKey][]byte
	cacheSize int
}

type baseKey struct {
	p   *pack
	off int
}

// maxBaseCache bounds the delta bases kept; past it the cache starts over.
const maxBaseCache = 32 << 20

type pack struct {
	name  string
	idx   []byte // the .idx, version 2
	data  []byte // the .pack
	count int
}

// Object types in a pack entry's header.
const (
	packCommit   = 1
	packTree     = 2
	packBlob     = 3
	packTag      = 4
	packOfsDelta = 6
	packRefDelta = 7
)

var packTypeNames = map[int]string{packCommit: "commit", packTree: "tree", packBlob: "blob", packTag: "tag"}

// errNotPacked is an object in no local pack.
var errNotPacked = errors.New("not in a local pack")

// read reads object id (hex) from the packs of the repository whose
// common directory is commonDir: its type and content. With headerOnly it
// reads the type alone, but for a commit of at most 4 KiB, whose content
// it returns too: a record's commit, read on next, costs one inflate.
func (ps *packSet) read(commonDir, id string, headerOnly bool) (string, []byte, error) {
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != 20 {
		return "", nil, fmt.Errorf("read object %q: not a SHA-1 id", id)
	}
	p, off, err := ps.find(commonDir, raw)
	if err != nil {
		return "", nil, fmt.Errorf("read object %s: %w", id, err)
	}
	typ, size, err := ps.typeAt(p, off)
	if err != nil {
		return "", nil, fmt.Errorf("read object %s: %w", id, err)
	}
	if headerOnly && (typ != packCommit || size > 4096) {
		return packTypeNames[typ], nil, nil
	}
	_, data, err := ps.readAt(p, off, 0)
	if err != nil {
		return "", nil, fmt.Errorf("read object %s: %w", id, err)
	}
	return packTypeNames[typ], data, nil
}

// known reports whether an object is in one of the packs known
// (the folder scanned once, at the first read), without scanning again.
func (ps *packSet) known(commonDir, id string) bool {
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != 20 {
		return false
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !ps.scanned && ps.scan(commonDir) != nil {
		return false
	}
	for _, p := range ps.packs {
		if _, ok := p.lookup(raw); ok {
			return true
		}
	}
	return false
}

// find returns the pack and offset of an object, scanning the pack folder
// again once when the packs known do not have it.
func (ps *packSet) find(commonDir string, id []byte) (*pack, int, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for again := false; ; again = true {
		if !ps.scanned || again {
			if err := ps.scan(commonDir); err != nil {
				return nil, 0, err
			}
		}
		for _, p := range ps.packs {
			if off, ok := p.lookup(id); ok {
				return p, off, nil
			}
		}
		if again {
			return nil, 0, errNotPacked
		}
	}
}

// scan maps the packs of the folder not mapped yet. A pack once mapped
// stays readable while this process lives, even after a repack deletes
// its files: git never rewrites a pack in place.
func (ps *packSet) scan(commonDir string) error {
	ps.scanned = true
	dir := filepath.Join(commonDir, "objects", "pack")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, p := range ps.packs {
		known[p.name] = true
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".idx")
		if !ok || !strings.HasPrefix(name, "pack-") || known[name] {
			continue
		}
		p, err := openPack(dir, name)
		if err != nil {
			continue // half-written, or removed meanwhile: git's to read
		}
		ps.packs = append(ps.packs, p)
	}
	return nil
}

func openPack(dir, name string) (*pack, error) {
	idx, err := mapFile(filepath.Join(dir, name+".idx"))
	if err != nil {
		return nil, err
	}
	data, err := mapFile(filepath.Join(dir, name+".pack"))
	if err != nil {
		syscall.Munmap(idx)
		return nil, err
	}
	p := &pack{name: name, idx: idx, data: data}
	if err := p.check(); err != nil {
		syscall.Munmap(idx)
		syscall.Munmap(data)
		return nil, err
	}
	return p, nil
}

// mapFile maps a whole file read-only. The map outlives the file
// descriptor and the file's removal. A process maps a repository's packs
// once (Runner.OpenOnce keeps one Repo per folder), so maps are not given
// back before it ends.
func mapFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := info.Size()
	if size <= 0 || int64(int(size)) != size {
		return nil, fmt.Errorf("%s: size %d", path, size)
	}
	return syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
}

// check validates an index's header and that its tables fit the file.
func (p *pack) check() error {
	if len(p.idx) < 8+256*4+40 || !bytes.Equal(p.idx[:8], []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}) {
		return errors.New("not a version 2 pack index")
	}
	if len(p.data) < 12+20 || !bytes.Equal(p.data[:4], []byte("PACK")) {
		return errors.New("not a pack")
	}
	p.count = int(binary.BigEndian.Uint32(p.idx[8+255*4:]))
	if min := 8 + 256*4 + p.count*(20+4+4) + 40; len(p.idx) < min {
		return errors.New("pack index shorter than its table")
	}
	return nil
}

// lookup finds an object's offset by binary search of the index.
func (p *pack) lookup(id []byte) (int, bool) {
	fanout := p.idx[8:]
	lo := 0
	if id[0] > 0 {
		lo = int(binary.BigEndian.Uint32(fanout[(int(id[0])-1)*4:]))
	}
	hi := int(binary.BigEndian.Uint32(fanout[int(id[0])*4:]))
	names := p.idx[8+256*4:]
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch bytes.Compare(names[mid*20:mid*20+20], id) {
		case 0:
			return p.offset(mid)
		case -1:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0, false
}

// offset is the pack offset of the index's i-th object.
func (p *pack) offset(i int) (int, bool) {
	offsets := p.idx[8+256*4+p.count*24:]
	off := binary.BigEndian.Uint32(offsets[i*4:])
	if off&0x80000000 == 0 {
		return int(off), int(off) < len(p.data)
	}
	large := p.idx[8+256*4+p.count*28:]
	j := int(off & 0x7fffffff)
	if (j+1)*8 > len(large)-40 {
		return 0, false
	}
	big := binary.BigEndian.Uint64(large[j*8:])
	if big >= uint64(len(p.data)) {
		return 0, false
	}
	return int(big), true
}

// entry reads the header of the entry at off: its type, its inflated
// size, where its data (or, for a delta, its base reference) starts.
func (p *pack) entry(off int) (typ, size, next int, err error) {
	if off < 12 || off >= len(p.data)-20 {
		return 0, 0, 0, fmt.Errorf("pack %s: offset %d out of range", p.name, off)
	}
	c := p.data[off]
	typ, size = int(c>>4)&7, int(c&15)
	shift := 4
	for i := off + 1; ; i++ {
		if c&0x80 == 0 {
			return typ, size, i, nil
		}
		if i >= len(p.data) || shift > 56 {
			return 0, 0, 0, fmt.Errorf("pack %s: bad header at %d", p.name, off)
		}
		c = p.data[i]
		size |= int(c&0x7f) << shift
		shift += 7
	}
}

// base returns where the base of the delta entry at off is: in the same
// pack, before it (OFS_DELTA), or an object named by id (REF_DELTA); and
// where the delta's data starts. at is where the entry's header ended.
func (p *pack) base(typ, off, at int) (baseOff int, baseID []byte, data int, err error) {
	if typ == packRefDelta {
		if at+20 > len(p.data) {
			return 0, nil, 0, fmt.Errorf("pack %s: truncated delta at %d", p.name, at)
		}
		return 0, p.data[at : at+20], at + 20, nil
	}
	i := at
	if i >= len(p.data) {
		return 0, nil, 0, fmt.Errorf("pack %s: truncated delta at %d", p.name, at)
	}
	c := p.data[i]
	rel := int(c & 0x7f)
	for c&0x80 != 0 {
		i++
		if i >= len(p.data) || rel > 1<<48 {
			return 0, nil, 0, fmt.Errorf("pack %s: bad delta offset at %d", p.name, at)
		}
		c = p.data[i]
		rel = (rel+1)<<7 | int(c&0x7f)
	}
	if rel <= 0 || rel > off {
		return 0, nil, 0, fmt.Errorf("pack %s: delta at %d names a base outside the pack", p.name, off)
	}
	return off - rel, nil, i + 1, nil
}

// typeAt is the type of the object at off, following deltas' bases
// without inflating anything, and its size (a delta's own: only a small
// commit's size matters, and a commit is rarely a delta).
func (ps *packSet) typeAt(p *pack, off int) (typ, size int, err error) {
	for range maxDeltaDepth {
		var at int
		if typ, size, at, err = p.entry(off); err != nil {
			return 0, 0, err
		}
		switch typ {
		case packCommit, packTree, packBlob, packTag:
			return typ, size, nil
		case packOfsDelta, packRefDelta:
		default:
			return 0, 0, fmt.Errorf("pack %s: type %d at %d", p.name, typ, off)
		}
		baseOff, baseID, _, err := p.base(typ, off, at)
		if err != nil {
			return 0, 0, err
		}
		if baseID != nil {
			if p, baseOff, err = ps.findLocked(baseID); err != nil {
				return 0, 0, err
			}
		}
		off = baseOff
	}
	return 0, 0, errors.New("delta chain too deep")
}

// maxDeltaDepth bounds a delta chain (git's deepest default is 50; an
// aggressive repack's 250).
const maxDeltaDepth = 4096

func (ps *packSet) findLocked(id []byte) (*pack, int, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.packs {
		if off, ok := p.lookup(id); ok {
			return p, off, nil
		}
	}
	return nil, 0, errNotPacked // a base in no pack (thin, or loose): git's to read
}

// readAt inflates the object at off, applying deltas down to it; depth
// counts the deltas above.
func (ps *packSet) readAt(p *pack, off, depth int) (int, []byte, error) {
	if depth > maxDeltaDepth {
		return 0, nil, errors.New("delta chain too deep")
	}
	typ, size, at, err := p.entry(off)
	if err != nil {
		return 0, nil, err
	}
	if size > maxObject {
		return 0, nil, fmt.Errorf("pack %s: object at %d is %d bytes", p.name, off, size)
	}
	switch typ {
	case packCommit, packTree, packBlob, packTag:
		data, err := p.inflate(at, size)
		return typ, data, err
	case packOfsDelta, packRefDelta:
	default:
		return 0, nil, fmt.Errorf("pack %s: type %d at %d", p.name, typ, off)
	}
	baseOff, baseID, at, err := p.base(typ, off, at)
	if err != nil {
		return 0, nil, err
	}
	bp := p
	if baseID != nil {
		if bp, baseOff, err = ps.findLocked(baseID); err != nil {
			return 0, nil, err
		}
	}
	baseType, base, err := ps.cachedBase(bp, baseOff, depth)
	if err != nil {
		return 0, nil, err
	}
	delta, err := p.inflate(at, size)
	if err != nil {
		return 0, nil, err
	}
	data, err := applyDelta(base, delta)
	return baseType, data, err
}

// cachedBase reads a delta's base, through the cache.
func (ps *packSet) cachedBase(p *pack, off, depth int) (int, []byte, error) {
	key := baseKey{p, off}
	ps.cacheMu.Lock()
	data, ok := ps.cache[key]
	ps.cacheMu.Unlock()
	if ok {
		typ, err := ps.baseType(p, off)
		return typ, data, err
	}
	typ, data, err := ps.readAt(p, off, depth+1)
	if err != nil {
		return 0, nil, err
	}
	ps.cacheMu.Lock()
	if ps.cache == nil || ps.cacheSize+len(data) > maxBaseCache {
		ps.cache, ps.cacheSize = map[baseKey][]byte{}, 0
	}
	ps.cache[key] = data
	ps.cacheSize += len(data)
	ps.cacheMu.Unlock()
	return typ, data, nil
}

// forgetBases lets the delta bases cached go: a batch read is over.
func (ps *packSet) forgetBases() {
	ps.cacheMu.Lock()
	ps.cache, ps.cacheSize = nil, 0
	ps.cacheMu.Unlock()
}

func (ps *packSet) baseType(p *pack, off int) (int, error) {
	typ, _, err := ps.typeAt(p, off)
	return typ, err
}

// inflate reads size bytes of zlib data starting at at.
func (p *pack) inflate(at, size int) ([]byte, error) {
	zr, err := inflater(bytes.NewReader(p.data[at:]))
	if err != nil {
		return nil, fmt.Errorf("pack %s: at %d: %w", p.name, at, err)
	}
	defer zr.release()
	data := make([]byte, size)
	if _, err := io.ReadFull(zr, data); err != nil {
		return nil, fmt.Errorf("pack %s: at %d: %w", p.name, at, err)
	}
	return data, nil
}

// errBadDelta is a delta that does not apply to its base.
var errBadDelta = errors.New("malformed delta")

// applyDelta builds an object from its base and a git delta: the base's
// size, the result's size, then copies from the base and inserted bytes.
func applyDelta(base, delta []byte) ([]byte, error) {
	src, delta, ok1 := deltaSize(delta)
	dst, delta, ok2 := deltaSize(delta)
	if !ok1 || !ok2 || src != len(base) || dst > maxObject {
		return nil, errBadDelta
	}
	out := make([]byte, 0, dst)
	for len(delta) > 0 {
		c := delta[0]
		delta = delta[1:]
		var chunk []byte
		switch {
		case c&0x80 != 0: // copy: offset in up to 4 bytes, size in up to 3
			var off, n int
			var ok bool
			if off, delta, ok = deltaBytes(delta, c, 4); !ok {
				return nil, errBadDelta
			}
			if n, delta, ok = deltaBytes(delta, c>>4, 3); !ok {
				return nil, errBadDelta
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > len(base) {
				return nil, errBadDelta
			}
			chunk = base[off : off+n]
		case c != 0: // insert the next c bytes
			if int(c) > len(delta) {
				return nil, errBadDelta
			}
			chunk, delta = delta[:c], delta[c:]
		default:
			return nil, errBadDelta
		}
		if len(out)+len(chunk) > dst {
			return nil, errBadDelta
		}
		out = append(out, chunk...)
	}
	if len(out) != dst {
		return nil, errBadDelta
	}
	return out, nil
}

// deltaSize reads a delta header's size: 7 bits a byte, low first, the
// high bit saying another follows; bounded to sizes read in process.
func deltaSize(d []byte) (n int, rest []byte, ok bool) {
	for shift := 0; len(d) > 0 && shift < 35; shift += 7 {
		c := d[0]
		d = d[1:]
		n |= int(c&0x7f) << shift
		if c&0x80 == 0 {
			return n, d, true
		}
	}
	return 0, d, false
}

// deltaBytes reads a copy instruction's little-endian value: byte i is
// present when bit i of mask is set, for the first count bits.
func deltaBytes(d []byte, mask byte, count int) (v int, rest []byte, ok bool) {
	for i := range count {
		if mask&(1<<i) == 0 {
			continue
		}
		if len(d) == 0 {
			return 0, d, false
		}
		v |= int(d[0]) << (8 * i)
		d = d[1:]
	}
	return v, d, true
}
