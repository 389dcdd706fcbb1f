package ondisk

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Reading refs in process (R2, R4): git's own files, replaced by rename
// and never rewritten in place, so a read sees one whole version of each.
// Whatever is not plainly the files backend sends the read back to git.

// LooseRefs adds the loose refs at or under name (a ref, or a folder of
// refs) under commonDir to ids. It reports false for anything git would have to judge.
func LooseRefs(commonDir, name string, ids map[string]string) bool {
	path := filepath.Join(commonDir, filepath.FromSlash(name))
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true
	case err != nil:
		return false
	case info.Mode().IsRegular():
		return looseRef(name, path, ids)
	case !info.IsDir():
		return false
	}
	entries, err := os.ReadDir(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true // removed since the Lstat: git removes empty folders
	}
	if err != nil {
		return false
	}
	for _, e := range entries {
		child := name + "/" + e.Name()
		switch {
		case e.IsDir():
			if !LooseRefs(commonDir, child, ids) {
				return false
			}
		case strings.HasSuffix(e.Name(), ".lock"):
			// A writer's lock, not a ref: git skips it too.
		case e.Type().IsRegular():
			if !looseRef(child, filepath.Join(path, e.Name()), ids) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// looseRef adds loose ref name, read from path, to ids unless a ref of
// that name is there already.
func looseRef(name, path string, ids map[string]string) bool {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true // packed or deleted since the folder was listed
	}
	if err != nil || CheckRefName(name) != nil {
		return false
	}
	id := strings.TrimSuffix(string(data), "\n")
	switch {
	case strings.HasPrefix(id, "ref:"):
		return false // a symbolic ref: git follows it
	case !isAnyHash(id) || strings.ToLower(id) != id:
		// Broken (git skips it with a warning): listed with no id, so
		// its reader names it instead of never seeing it (R5).
		id = ""
	}
	if _, seen := ids[name]; !seen {
		ids[name] = id
	}
	return true
}

// PackedRefs adds the refs of commonDir's packed-refs file that match
// reports and no loose ref in ids shadows. It reports false for anything
// git would have to judge.
func PackedRefs(commonDir string, match func(name string) bool, ids map[string]string) bool {
	f, err := os.Open(filepath.Join(commonDir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	first := true
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return false
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return false
		}
		if len(line) > 0 {
			line = bytes.TrimSuffix(line, []byte("\n"))
			switch {
			case first && bytes.HasPrefix(line, []byte("# pack-refs with:")):
			case bytes.HasPrefix(line, []byte("^")):
				// The peeled value of the tag above: not asked for.
			default:
				id, name, found := strings.Cut(string(line), " ")
				if !found || !isAnyHash(id) {
					return false
				}
				if match(name) {
					if _, loose := ids[name]; !loose {
						ids[name] = id
					}
				}
			}
			first = false
		}
		if err != nil {
			return true
		}
	}
}

// MatchesAny applies for-each-ref's rule for a pattern without glob
// characters: the ref itself, or a ref below it.
func MatchesAny(name string, patterns []string) bool {
	for _, p := range patterns {
		if name == p || strings.HasPrefix(name, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

// CheckRefName applies git's rules for ref names (git check-ref-format) in
// process, so that a bad name is refused at once with its reason instead of
// by a failed update-ref.
func CheckRefName(name string) error {
	bad := func(why string) error { return fmt.Errorf("invalid ref name %q: %s", name, why) }
	switch {
	case name == "" || name == "@":
		return bad("empty or @")
	case strings.HasSuffix(name, "/") || strings.HasSuffix(name, "."):
		return bad(`ends in "/" or "."`)
	case strings.Contains(name, "..") || strings.Contains(name, "@{") || strings.Contains(name, "//"):
		return bad(`contains "..", "@{" or "//"`)
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f || strings.ContainsRune(" ~^:?*[\\", c) {
			return bad(fmt.Sprintf("character %q not allowed", c))
		}
	}
	for part := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return bad(`a part begins with "." or ends in ".lock"`)
		}
	}
	return nil
}

// PackedRefsCache keeps one repository's packed-refs file as last read
// and reads it again only once the file is another one: its inode, size
// or modification time changed (git replaces the file by rename, and
// validates its own snapshot by the same stat, R3). A process that reads
// one ref after another (tidy judging every place, a watcher's every
// step) parsed the whole file for each, nearly all of a large tidy after
// gc (DESIGN.md, "Figures from code comments"). The zero value is empty.
type PackedRefsCache struct {
	mu   sync.Mutex
	read bool
	key  [3]int64
	// sorted is the file as read when git wrote it sorted (its header
	// says so): each ref is found in it by binary search, as git finds
	// one. refs is the file parsed whole when it is not.
	sorted []byte
	refs   map[string]string
}

// Lookup adds to ids each of names that packed-refs holds and that no
// loose ref already in ids shadows; false for anything git would have to
// judge.
func (c *PackedRefsCache) Lookup(commonDir string, names map[string]bool, ids map[string]string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	path := filepath.Join(commonDir, "packed-refs")
	var key [3]int64
	switch info, err := os.Stat(path); {
	case err == nil:
		key = [3]int64{info.Size(), info.ModTime().UnixNano()}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			key[2] = int64(st.Ino) // field of the same name on Linux and macOS
		}
	case !errors.Is(err, fs.ErrNotExist):
		return false
	}
	if !c.read || key != c.key {
		// Stat first, read after: a file replaced in between is newer
		// than its key, and the next lookup reads it again.
		c.read, c.sorted, c.refs = false, nil, nil
		data, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false
		}
		if sortedPacked(data) {
			c.sorted = data
		} else {
			c.refs = map[string]string{}
			if !PackedRefs(commonDir, func(string) bool { return true }, c.refs) {
				return false
			}
		}
		c.read, c.key = true, key
	}
	for name := range names {
		if _, loose := ids[name]; loose {
			continue
		}
		id, packed := c.refs[name]
		if c.sorted != nil {
			var ok bool
			if id, packed, ok = findPacked(c.sorted, name); !ok {
				return false
			}
		}
		if packed {
			ids[name] = id
		}
	}
	return true
}

// sortedPacked reports a packed-refs file whose header says git wrote it
// sorted by name ("# pack-refs with: … sorted").
func sortedPacked(data []byte) bool {
	header, _, _ := bytes.Cut(data, []byte("\n"))
	traits, ok := bytes.CutPrefix(header, []byte("# pack-refs with:"))
	return ok && bytes.Contains(append(append([]byte(" "), traits...), ' '), []byte(" sorted "))
}

// findPacked finds ref name in sorted packed-refs data by binary search
// over its records (a ref's line and, after a tag's, its "^" line): a
// few refs looked up among 20,000 read no other line than those the
// search lands on. ok is false for a line git would have to judge.
func findPacked(data []byte, name string) (id string, found, ok bool) {
	lo, hi := 0, len(data)
	if bytes.HasPrefix(data, []byte("#")) {
		lo = lineEnd(data, 0)
	}
	for lo < hi {
		start := recordStart(data, lo, lo+(hi-lo)/2)
		end := lineEnd(data, start)
		rid, rname, cut := bytes.Cut(bytes.TrimSuffix(data[start:end], []byte("\n")), []byte(" "))
		if !cut || !isAnyHash(string(rid)) {
			return "", false, false
		}
		switch c := bytes.Compare(rname, []byte(name)); {
		case c == 0:
			return string(rid), true, true
		case c < 0:
			lo = end
			if lo < len(data) && data[lo] == '^' {
				lo = lineEnd(data, lo) // the tag's peeled value
			}
		default:
			hi = start
		}
	}
	return "", false, true
}

// recordStart is where the record holding byte pos begins, lo being one's
// start: its line's start, or the line before when that is a "^" line.
func recordStart(data []byte, lo, pos int) int {
	start := lo + bytes.LastIndexByte(data[lo:pos], '\n') + 1
	if data[start] == '^' && start > lo {
		start = lo + bytes.LastIndexByte(data[lo:start-1], '\n') + 1
	}
	return start
}

// lineEnd is the index just past the newline ending the line at start.
func lineEnd(data []byte, start int) int {
	if i := bytes.IndexByte(data[start:], '\n'); i >= 0 {
		return start + i + 1
	}
	return len(data)
}

// reflogLimit bounds how much of a reflog ReflogHas reads: its newest
// entries, which is where a place's branch's life is.
const reflogLimit = 1 << 20

// ReflogPath is the file of ref's reflog in commonDir.
func ReflogPath(commonDir, ref string) string {
	return filepath.Join(commonDir, "logs", filepath.FromSlash(ref))
}

// ReflogHas reports whether id is a value git gave ref: the new value of an
// entry of its reflog in commonDir (its newest MiB). known is false where
// the reflog says nothing: it is missing or empty.
func ReflogHas(commonDir, ref, id string) (known, has bool) {
	f, err := os.Open(ReflogPath(commonDir, ref))
	if err != nil {
		return false, false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.Size() == 0 {
		return false, false
	}
	off := max(0, info.Size()-reflogLimit)
	data := make([]byte, info.Size()-off)
	if _, err := f.ReadAt(data, off); err != nil && !errors.Is(err, io.EOF) {
		return false, false
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		// "<old> <new> <name> <email> <time> <zone>\t<message>"
		if f := bytes.Fields(line); len(f) >= 2 {
			known = true
			if string(f[1]) == id {
				return true, true
			}
		}
	}
	return known, false
}

// SymbolicTarget is the ref a loose ref file of commonDir points to when
// it holds "ref: …" (a symbolic ref; git follows it, writes included), ""
// when it holds an id or is not a loose file. A place's branch is never
// symbolic as flume made it: one that is was written by another hand.
func SymbolicTarget(commonDir, ref string) string {
	var buf [512]byte
	data, err := ReadSmall(filepath.Join(commonDir, filepath.FromSlash(ref)), buf[:])
	if err != nil {
		return ""
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "ref:")
	if !ok {
		return ""
	}
	return cmp.Or(strings.TrimSpace(target), "(nothing)")
}

// OwnObjects is the object folder of its own an agent in the linked
// worktree whose folder in git is admin writes new objects in (A13): in
// flume's folder of the repository, named as git names the worktree.
func OwnObjects(commonDir, admin string) string {
	return filepath.Join(commonDir, "flume", "objects", filepath.Base(admin))
}

// OwnObjectFolders are the agents' own object folders of the repository
// at commonDir that hold objects flume has not taken in yet (A13): git
// run by flume to read is shown them as alternates, so that a place's
// commit reads at once, before its objects are taken in.
func OwnObjectFolders(commonDir string) []string {
	root := filepath.Join(commonDir, "flume", "objects")
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if e.IsDir() && holdsObjects(dir) {
			out = append(out, dir)
		}
	}
	return out
}

// holdsObjects reports an object folder with a loose object folder or a
// pack in it.
func holdsObjects(dir string) bool {
	names, err := readNames(dir)
	if err != nil {
		return false
	}
	for _, n := range names {
		if len(n) == 2 && n != ".." {
			return true
		}
	}
	packs, _ := readNames(filepath.Join(dir, "pack"))
	return len(packs) > 0
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
