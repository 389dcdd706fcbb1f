package git

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/git-flume/git-flume/internal/git/gitconfig"
	"github.com/git-flume/git-flume/internal/git/ondisk"
)

// Git's formats behind one boundary (R2, R4). A repository's objects,
// refs and worktree listing are read, and its objects written, through
// the storer chosen for it once, when it is first asked (Repo.reads,
// Repo.writes), never by a test at each call site:
//
//   - *ondisk.Storer reads git's own files in process where the repository
//     is plainly the files backend of a SHA-1 repository (go-git encodes
//     and decodes the objects; the packs are mapped and read here, see
//     DESIGN.md for the measurement that keeps that reader);
//   - byGit is every other repository's: it answers nothing, and git does.
//
// Each Repo method asks its storer first and git for what the storer
// leaves (ok false, or an error for an object): whatever is not plainly
// known (a symbolic or broken loose ref, an object in an alternate, a
// packed-refs line we do not know) goes to git, which decides exactly as
// it always did. The methods are go-git's storer.EncodedObjectStorer and
// storer.ReferenceStorer narrowed to what flume asks.
type storer interface {
	EncodedObject(id string, headerOnly bool) (typ string, data []byte, err error)
	SetEncodedObjects(objs ...*ondisk.Encoded) error
	CommitTree(id string) (tree string, ok bool)
	BlobAt(commit, path string) (blob string, ok bool)
	References(names []string) (ids map[string]string, ok bool)
	IterReferences(patterns []string) (refs []Ref, ok bool)
	FilesAt(commits []string, file string) (objs []Object, ok bool)
	FileAt(id, file string, obj *Object) (ok bool)
	HasCommit(id string) bool
	Worktrees() (wts []Worktree, ok bool)
}

// errByGit is every answer of byGit: git's to give.
var errByGit = errors.New("read by git")

// byGit is the storer of a repository whose files are not read here: a
// SHA-256 or reftable one, or one whose objects git must write.
type byGit struct{}

func (byGit) EncodedObject(string, bool) (string, []byte, error) { return "", nil, errByGit }
func (byGit) SetEncodedObjects(...*ondisk.Encoded) error         { return errByGit }
func (byGit) CommitTree(string) (string, bool)                   { return "", false }
func (byGit) BlobAt(string, string) (string, bool)               { return "", false }
func (byGit) References([]string) (map[string]string, bool)      { return nil, false }
func (byGit) IterReferences([]string) ([]Ref, bool)              { return nil, false }
func (byGit) FilesAt([]string, string) ([]Object, bool)          { return nil, false }
func (byGit) FileAt(string, string, *Object) bool                { return false }
func (byGit) HasCommit(string) bool                              { return false }
func (byGit) Worktrees() ([]Worktree, bool)                      { return nil, false }

// storers are a repository's two, chosen once.
type storers struct {
	readOnce, writeOnce sync.Once
	read, write         storer
	files               *ondisk.Storer
}

// reads is the storer the repository is read through: its files, for
// the files backend of a SHA-1 repository; else git.
func (repo *Repo) reads() storer {
	repo.store.readOnce.Do(func() {
		repo.store.read = byGit{}
		if repo.ObjectFormat != "sha1" {
			return
		}
		if _, err := os.Stat(filepath.Join(repo.CommonDir, "reftable")); err == nil {
			return // refs in a reftable: git reads them
		}
		repo.store.files = ondisk.NewStorer(repo.CommonDir)
		repo.store.read = repo.store.files
	})
	return repo.store.read
}

// writes is the storer objects are written through: in process in a
// SHA-1 repository whose configuration sets no core.sharedRepository,
// where git would give the files and folders it makes the same modes as
// the writer here. Where it is set, or the configuration cannot be read
// in process, git writes them.
func (repo *Repo) writes() storer {
	repo.store.writeOnce.Do(func() {
		repo.store.write = byGit{}
		if repo.ObjectFormat != "sha1" {
			return
		}
		repo.reads() // its files' storer, when there is one, writes too
		entries, ok := repo.r.configInProcess(repo)
		if !ok {
			files := append(gitconfig.GlobalFiles(repo.r.envLookup), filepath.Join(repo.CommonDir, "config"))
			entries, ok = gitconfig.ReadFiles(files)
		}
		if ok && !sharedRepository(entries) {
			if repo.store.files == nil {
				repo.store.files = ondisk.NewStorer(repo.CommonDir)
			}
			repo.store.write = repo.store.files
		}
	})
	return repo.store.write
}

// sharedRepository reports a core.sharedRepository that makes git give
// what it writes modes other than the user's umask.
func sharedRepository(entries []gitconfig.Entry) bool {
	shared := false
	for _, e := range entries {
		if strings.EqualFold(e.Key, "core.sharedrepository") {
			switch strings.ToLower(e.Value) {
			case "false", "umask", "0", "no", "off":
				shared = false
			default:
				shared = true
			}
		}
	}
	return shared
}

// inProcess reports a storer that answers here: not byGit.
func inProcess(s storer) bool {
	_, git := s.(byGit)
	return !git
}
