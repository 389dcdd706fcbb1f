package refs

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/git-flume/git-flume/internal/git"
)

// Backend holds a store's records: git's refs and objects (a *git.Repo,
// as git-flume runs) or memory (NewMemory), for a test of a workflow's
// records that needs no git. Each move is a compare-and-swap transaction
// either way (R2): all of its refs or none, a ref not where it was read
// is a *ConflictError.
type Backend interface {
	ReadRefFile(ctx context.Context, ref, file string) (git.RefFile, error)
	ListRefs(ctx context.Context, prefixes ...string) ([]git.Ref, error)
	FilesAt(ctx context.Context, commits []string, file string) ([]git.Object, error)
	WriteState(ctx context.Context, file string, data []byte, c git.CommitSpec) (string, error)
	UpdateRefsLogged(ctx context.Context, message string, updates []git.RefUpdate) error
}

var _ Backend = (*git.Repo)(nil)

// NewMemory returns a store that knows kinds over records kept in memory:
// reads, lists, writes and compare-and-swap as a repository's store does,
// no git started. It has no repository (Repo is nil) and does not sync.
func NewMemory(kinds Kinds) *Store {
	s := New(nil, kinds)
	s.backend = &memory{refs: map[string]string{}, commits: map[string]memoryCommit{}}
	return s
}

// memory is a Backend in memory: refs by name, and the state commits they
// point at, each holding one file.
type memory struct {
	mu      sync.Mutex
	refs    map[string]string
	commits map[string]memoryCommit
}

type memoryCommit struct {
	file string
	data []byte
}

func (m *memory) ReadRefFile(_ context.Context, ref, file string) (git.RefFile, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.refs[ref]
	if !ok {
		return git.RefFile{}, fmt.Errorf("%s: %w", ref, git.ErrNotExist)
	}
	c := m.commits[id]
	found := c.file == file
	return git.RefFile{ID: id, Type: "commit", Found: found, IsFile: found, Data: slices.Clone(c.data)}, nil
}

func (m *memory) ListRefs(_ context.Context, prefixes ...string) ([]git.Ref, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []git.Ref
	for name, id := range m.refs {
		if slices.ContainsFunc(prefixes, func(p string) bool { return name == p || strings.HasPrefix(name, p) }) {
			out = append(out, git.Ref{Name: name, ID: id, Type: "commit"})
		}
	}
	slices.SortFunc(out, func(a, b git.Ref) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (m *memory) FilesAt(_ context.Context, commits []string, file string) ([]git.Object, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]git.Object, len(commits))
	for i, id := range commits {
		if c, ok := m.commits[id]; ok && c.file == file {
			out[i] = git.Object{ID: id, Type: "blob", Data: slices.Clone(c.data)}
		}
	}
	return out, nil
}

// WriteState stores data as a commit of its own, named by a digest of it,
// its parents and its time, as git names one by its content.
func (m *memory) WriteState(_ context.Context, file string, data []byte, c git.CommitSpec) (string, error) {
	h := sha1.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%s\n", file, strings.Join(c.Parents, " "), c.When.Format(time.RFC3339Nano), c.Message)
	h.Write(data)
	id := hex.EncodeToString(h.Sum(nil))
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commits[id] = memoryCommit{file: file, data: slices.Clone(data)}
	return id, nil
}

// UpdateRefsLogged applies updates all or none: every ref must be where
// its update expects it.
func (m *memory) UpdateRefsLogged(_ context.Context, _ string, updates []git.RefUpdate) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var conflicts []git.RefConflict
	for _, u := range updates {
		found := m.refs[u.Name]
		expected := u.Old
		if u.Op == git.Create {
			expected = ""
		}
		if found != expected {
			conflicts = append(conflicts, git.RefConflict{Name: u.Name, Expected: expected, Found: found})
		}
	}
	if len(conflicts) > 0 {
		return &git.ConflictError{Conflicts: conflicts}
	}
	for _, u := range updates {
		switch u.Op {
		case git.Create, git.Update:
			m.refs[u.Name] = u.New
		case git.Delete:
			delete(m.refs, u.Name)
		}
	}
	return nil
}
