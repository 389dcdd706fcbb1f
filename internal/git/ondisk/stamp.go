package ondisk

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// stampRacy is how recent a change may be for a stamp to trust it: the
// kernel stamps files with a coarse clock (a tick of up to 10 ms), so two
// writes within one tick can leave the same time; a file changed that
// recently may change again unseen, as git's "racily clean" entries may.
const stampRacy = 100 * time.Millisecond

// stampMax bounds the entries a stamp looks at; a larger work tree is left
// to git.
const stampMax = 50000

// errNoStamp is a work tree a stamp cannot vouch for: git reads it.
var errNoStamp = errors.New("no stamp")

// WorkStamp is a digest of the stat data of all that `git add -A` reads
// in the linked or main work tree at dir, whose repository's common folder
// is commonDir: its index, the configuration and ignore files git reads
// there, every tracked file, and every folder and file of the work tree
// but those in folders its ignore files exclude (which git never enters;
// tracked files there are stamped from the index). Two equal stamps mean
// the snapshot of the work tree (SnapshotTree) is the same, so the radar
// takes it again without starting git (issue 46). ok is false when the
// stamp cannot vouch for that, and git must look: something changed
// within stampRacy of now, a repository nested in the work tree, more
// than stampMax entries, an ignore file with a negation or an escape
// (where matchers part ways; any folder is then entered), a file that
// cannot be read, or a system other than Linux (no change time read).
func WorkStamp(dir, commonDir string) (stamp string, ok bool) {
	if !stampable {
		return "", false
	}
	dir = filepath.Clean(dir) // paths below are dir + "/" + name
	gitDir, err := GitDirOf(dir)
	if err != nil {
		return "", false
	}
	s := &stamper{sum: sha256.New(), since: time.Now().Add(-stampRacy).UnixNano()}
	home, _ := os.UserHomeDir()
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" {
		xdg = filepath.Join(home, ".config")
	}
	for _, f := range []string{
		filepath.Join(gitDir, "index"), filepath.Join(gitDir, "HEAD"), filepath.Join(gitDir, "config.worktree"),
		filepath.Join(commonDir, "config"), filepath.Join(commonDir, "info", "exclude"), filepath.Join(commonDir, "info", "attributes"),
		filepath.Join(home, ".gitconfig"), filepath.Join(xdg, "git", "config"), filepath.Join(xdg, "git", "attributes"),
	} {
		s.file(atCWD, f, f)
	}
	exclude, err := s.patterns(filepath.Join(commonDir, "info", "exclude"), nil)
	if err != nil {
		return "", false
	}
	s.walked = map[string]bool{}
	s.file(atCWD, dir, dir)
	if err := s.walk(atCWD, dir, dir, nil, exclude); err != nil {
		return "", false
	}
	if err := s.tracked(dir, filepath.Join(gitDir, "index")); err != nil {
		return "", false
	}
	return hex.EncodeToString(s.sum.Sum(nil)), true
}

type stamper struct {
	sum     hash.Hash
	since   int64 // Unix nanoseconds: a change since is racy
	buf     []byte
	entries int
	// unsure: something seen that the stamp cannot vouch for (a change
	// within stampRacy): git looks.
	unsure bool
	// entered: an ignore file the matcher may read otherwise than git
	// (a negation, an escape): every folder is entered.
	entered bool
	// walked are the files the walk stamped, by path: a tracked one among
	// them is not stamped twice.
	walked map[string]bool
}

// fileStat is what a stamp takes of a file: its mode (st_mode), size,
// inode, device, and modification and change times in nanoseconds.
type fileStat struct {
	mode, size, ino, dev uint64
	mtime, ctime         int64
}

// file adds the stat data of name in the folder open as dirfd (atCWD:
// name is a path), or its absence, to the stamp under path.
func (s *stamper) file(dirfd int, name, path string) {
	st, err := lstatAt(dirfd, name)
	if err != nil {
		s.add(path, "-")
		return
	}
	var b [48]byte
	binary.LittleEndian.PutUint64(b[0:], st.mode)
	binary.LittleEndian.PutUint64(b[8:], st.size)
	binary.LittleEndian.PutUint64(b[16:], st.ino)
	binary.LittleEndian.PutUint64(b[24:], uint64(st.mtime))
	binary.LittleEndian.PutUint64(b[32:], uint64(st.ctime))
	binary.LittleEndian.PutUint64(b[40:], st.dev)
	if st.mtime >= s.since || st.ctime >= s.since {
		s.unsure = true // racy
	}
	s.add(path, string(b[:]))
}

func (s *stamper) add(path, data string) {
	s.entries++
	s.buf = append(append(append(s.buf[:0], path...), 0), data...)
	s.sum.Write(s.buf)
}

// tracked stamps every file the index tracks that the walk did not (one
// in an ignored folder, or one gone).
func (s *stamper) tracked(dir, indexFile string) error {
	f, err := os.Open(indexFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no index yet: nothing tracked
	}
	if err != nil {
		return err
	}
	defer f.Close()
	var idx index.Index
	if err := index.NewDecoder(bufio.NewReader(f)).Decode(&idx); err != nil {
		return err
	}
	for _, e := range idx.Entries {
		if e.SkipWorktree {
			continue // sparse: git reads no file for it
		}
		if path := dir + "/" + filepath.FromSlash(e.Name); !s.walked[path] {
			s.file(atCWD, path, path)
		}
	}
	return s.check()
}

func (s *stamper) check() error {
	if s.unsure || s.entries > stampMax {
		return errNoStamp
	}
	return nil
}

// patterns reads an ignore file's patterns in domain (the folder it is
// in, as path parts); a negation or an escape marks the stamper entered.
func (s *stamper) patterns(path string, domain []string) ([]gitignore.Pattern, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ps []gitignore.Pattern
	for line := range bytes.Lines(data) {
		l := strings.TrimRight(string(line), "\r\n")
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "!") || strings.Contains(l, `\`) || strings.TrimRight(l, " \t") != l {
			s.entered = true
		}
		ps = append(ps, gitignore.ParsePattern(l, domain))
	}
	return ps, nil
}

// walk stamps folder name in the folder open as parent (path its path,
// rel its path parts under the work tree; its own stat data the caller
// stamped): each entry's stat data, then each folder not excluded by ps
// and the ignore files met on the way.
func (s *stamper) walk(parent int, name, path string, rel []string, ps []gitignore.Pattern) error {
	d, err := openDirAt(parent, name, path)
	if err != nil {
		return err
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range entries {
		if e.Name() == ".gitignore" { // read only where the listing has one
			more, err := s.patterns(path+"/.gitignore", rel)
			if err != nil {
				return err
			}
			ps = append(ps[:len(ps):len(ps)], more...)
		}
	}
	m := gitignore.NewMatcher(ps)
	fd := int(d.Fd())
	for _, e := range entries {
		name := e.Name()
		if name == ".git" {
			if len(rel) > 0 {
				return errNoStamp // a repository nested in the work tree
			}
			continue
		}
		sub := path + "/" + name
		if !e.IsDir() {
			s.file(fd, name, sub)
			s.walked[sub] = true
			continue
		}
		parts := append(rel[:len(rel):len(rel)], name)
		if !s.entered && m.Match(parts, true) {
			continue // excluded: git never enters it
		}
		s.file(fd, name, sub)
		if err := s.walk(fd, name, sub, parts, ps); err != nil {
			return err
		}
	}
	return s.check()
}
