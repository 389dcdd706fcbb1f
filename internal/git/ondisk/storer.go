package ondisk

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/git-flume/git-flume/internal/par"
)

// Storer is one repository's objects, refs and worktrees read from git's
// own files in process, and its objects written there: the in-process
// side of internal/git's storer boundary. Its methods are go-git's
// storer.EncodedObjectStorer and storer.ReferenceStorer narrowed to what
// flume asks. Each reports ok false (or an error, for an object) for
// anything it does not plainly know, and git answers then. Make one with
// NewStorer; it is safe for concurrent use.
type Storer struct {
	// Dir is the repository's common directory.
	Dir string

	packedRefs PackedRefsCache
	Store
}

// NewStorer is the in-process storer of the repository whose common
// directory is commonDir.
func NewStorer(commonDir string) *Storer { return &Storer{Dir: commonDir} }

// Ref is a ref as listed: its name, the object it names, and that
// object's type (TypeMissing, TypeBroken when it cannot be read).
type Ref struct {
	Name string
	ID   string
	Type string
}

// TypeBroken is the type of a listed loose ref whose file holds no object
// id; its ID is "".
const TypeBroken = "broken"

// Object is one object read: its id, type and content.
type Object struct {
	ID   string
	Type string
	Data []byte
}

// SetEncodedObjects writes objs as loose objects, side by side
// (Store.WriteAll).
func (s *Storer) SetEncodedObjects(objs ...*Encoded) error { return s.WriteAll(s.Dir, objs...) }

// CommitTree returns the tree commit id names; false when git must
// answer.
func (s *Storer) CommitTree(id string) (string, bool) { return s.Store.CommitTree(s.Dir, id) }

// BlobAt returns the blob at path in commit ("" when there is none);
// false when git must answer.
func (s *Storer) BlobAt(commit, path string) (string, bool) {
	return s.Store.BlobAt(s.Dir, commit, path)
}

// References reads each named ref: its id, "" when it does not exist
// (a name absent from the map). ok is false when git must answer. Loose
// refs are read side by side, 64 names to a step: status's radar reads a
// branch and a target for every place (10,000 branches took an eighth of
// status at 10,000 places, one after another).
func (s *Storer) References(names []string) (map[string]string, bool) {
	want := make(map[string]bool, len(names))
	uniq := make([]string, 0, len(names))
	for _, n := range names {
		if want[n] {
			continue // many places name one target
		}
		if !strings.HasPrefix(n, "refs/") {
			return nil, false
		}
		want[n] = true
		uniq = append(uniq, n)
	}
	const step = 64
	ids := map[string]string{}
	var mu sync.Mutex
	ok := par.Each((len(uniq)+step-1)/step, func(c int) bool {
		part := map[string]string{}
		for _, n := range uniq[c*step : min(len(uniq), (c+1)*step)] {
			if !LooseRefs(s.Dir, n, part) {
				return false
			}
		}
		mu.Lock()
		maps.Copy(ids, part)
		mu.Unlock()
		return true
	})
	if !ok {
		return nil, false
	}
	return ids, s.packedRefs.Lookup(s.Dir, want, ids)
}

// IterReferences lists the refs under the patterns (ref names or folders
// of them, no globs) as `git for-each-ref` does, sorted by name, each with
// its object's type. ok is false when git must answer instead.
//
// Loose refs are read before packed-refs, the order git's own iterator
// keeps (refs/files-backend.c): a ref `git pack-refs` moves while we read
// was loose when its folder was listed, so it is either still loose or
// already in the packed-refs file read after.
func (s *Storer) IterReferences(patterns []string) (refs []Ref, ok bool) {
	for _, p := range patterns {
		if !strings.HasPrefix(p, "refs/") || strings.ContainsAny(p, "*?[\\") {
			return nil, false
		}
	}
	ids := map[string]string{}
	for _, p := range patterns {
		if !LooseRefs(s.Dir, strings.TrimSuffix(p, "/"), ids) {
			return nil, false
		}
	}
	if !PackedRefs(s.Dir, func(name string) bool { return MatchesAny(name, patterns) }, ids) {
		return nil, false
	}
	refs = make([]Ref, 0, len(ids))
	for name, id := range ids {
		refs = append(refs, Ref{Name: name, ID: id})
	}
	slices.SortFunc(refs, func(a, b Ref) int { return strings.Compare(a.Name, b.Name) })
	ok = par.Each(len(refs), func(i int) bool {
		if refs[i].ID == "" {
			refs[i].Type = TypeBroken
			return true
		}
		typ, _, err := s.EncodedObject(refs[i].ID, true)
		refs[i].Type = typ
		return err == nil
	})
	return refs, ok
}

// FilesAt reads the top-level file of each commit as `git cat-file
// --batch` reads "<commit>:<file>": an Object with no type where there is
// none. ok is false when git must answer instead.
func (s *Storer) FilesAt(commits []string, file string) (objs []Object, ok bool) {
	objs = make([]Object, len(commits))
	ok = par.Each(len(commits), func(n int) bool {
		return s.FileAt(commits[n], file, &objs[n])
	})
	s.packs.forgetBases() // not held while the caller works on what was read
	return objs, ok
}

// FileAt reads the top-level file of one commit into obj, as FilesAt
// does; false when git must answer.
func (s *Storer) FileAt(id, file string, obj *Object) bool {
	tree, ok := s.CommitTree(id)
	if !ok {
		return false
	}
	typ, data, err := s.EncodedObject(tree, false)
	if err != nil || typ != "tree" {
		return false
	}
	kind, entry, err := FindInTree(data, file)
	switch {
	case err != nil:
		return false
	case entry == "":
	case kind == EntryDir:
		*obj = Object{ID: entry, Type: "tree"}
	case kind == EntrySubmodule:
		// A submodule's commit is not in this repository: cat-file
		// calls it missing.
	default:
		typ, data, err := s.EncodedObject(entry, false)
		if err != nil {
			return false
		}
		*obj = Object{ID: entry, Type: typ, Data: data}
	}
	return true
}

// HasCommit reports whether commit id is in this repository; false too
// where only git could tell.
func (s *Storer) HasCommit(id string) bool {
	typ, _, err := s.EncodedObject(id, true)
	return err == nil && typ == "commit"
}

// Worktrees lists the repository's worktrees (see Worktrees); false when
// git must answer.
func (s *Storer) Worktrees() ([]Worktree, bool) { return Worktrees(s.Dir, s.References) }
