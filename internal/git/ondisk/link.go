package ondisk

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-flume/git-flume/internal/git/gitconfig"
)

// LinkWorktree writes what git 2.39's `git worktree add PATH BRANCH`
// writes before it checks the branch out (builtin/worktree.c:
// add_worktree), in git's order, so that a process killed between two
// writes leaves what a killed git leaves: the administrative folder
// worktrees/<id> of the repository whose common folder is commonDir,
// made only if absent; its lock, "initializing"; the folder path; gitdir,
// naming path's .git file; that file, naming the folder; HEAD; commondir.
// One thing differs: HEAD names branchRef at once, written as git writes
// a loose ref (HEAD.lock, made only if absent, renamed over HEAD), where
// git writes a placeholder id and runs `git symbolic-ref` to replace it
// (a process, and an empty line in the new HEAD's reflog). Nothing there
// is a ref anyone could hold: the folder is new.
//
// wts are the repository's worktrees as listed now (nil: not listed in
// process). made is false, with nothing written, where git's own command
// must decide: they are not listed, path exists or
// is a worktree git knows (missing or not), branchRef is checked out,
// path's base name is not an id git keeps as it is, or the id is taken
// (git would number it). The caller checks the branch out, as git does
// (`git reset --hard` in the new worktree), then removes the lock
// (UnlockLinked).
func LinkWorktree(commonDir, path, branchRef string, wts []Worktree) (admin string, made bool, err error) {
	id := filepath.Base(path)
	if wts == nil || !plainID(id) {
		return "", false, nil
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	realCommon, err := filepath.EvalSymlinks(commonDir)
	if err != nil {
		return "", false, nil
	}
	for _, wt := range wts {
		if wt.Branch == branchRef || wt.Path == path || (parent != "" && wt.Path == filepath.Join(parent, id)) {
			return "", false, nil
		}
	}
	worktrees := filepath.Join(commonDir, "worktrees")
	if err := os.MkdirAll(worktrees, 0o777); err != nil {
		return "", false, err
	}
	admin = filepath.Join(worktrees, id)
	if err := os.Mkdir(admin, 0o777); errors.Is(err, fs.ErrExist) {
		return "", false, nil
	} else if err != nil {
		return "", false, err
	}
	return admin, true, linkFiles(admin, filepath.Join(realCommon, "worktrees", id), path, branchRef)
}

// LinkableConfig reports whether configuration (every scope, as git reads
// it) leaves git 2.39's `git worktree add` writing nothing but what
// LinkWorktree writes: no extension (reftable, per-worktree
// configuration, relative worktrees), no worktree.* setting, no sparse
// checkout (whose patterns git copies), no shared permissions (which git
// applies to what it makes), no core.worktree.
func LinkableConfig(config []gitconfig.Entry) bool {
	for _, e := range config {
		switch e.Key {
		case "core.sparsecheckout", "core.sharedrepository", "core.worktree":
			return false
		}
		if strings.HasPrefix(e.Key, "extensions.") || strings.HasPrefix(e.Key, "worktree.") {
			return false
		}
	}
	return true
}

// linkFiles writes a new worktree's files in git's order (LinkWorktree);
// realAdmin is admin with every link resolved, as git names it in the
// worktree's .git file.
func linkFiles(admin, realAdmin, path, branchRef string) error {
	if err := createFile(filepath.Join(admin, "locked"), "initializing\n"); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	if err := os.Mkdir(path, 0o777); err != nil {
		return err
	}
	realPath, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	if err := createFile(filepath.Join(admin, "gitdir"), filepath.Join(realPath, ".git")+"\n"); err != nil {
		return err
	}
	if err := createFile(filepath.Join(path, ".git"), "gitdir: "+realAdmin+"\n"); err != nil {
		return err
	}
	head := filepath.Join(admin, "HEAD")
	if err := createFile(head+".lock", "ref: "+branchRef+"\n"); err != nil {
		return err
	}
	if err := os.Rename(head+".lock", head); err != nil {
		return err
	}
	return createFile(filepath.Join(admin, "commondir"), "../..\n")
}

// UnlockLinked removes the lock LinkWorktree left on a worktree once it
// is checked out, as git does once its `reset --hard` succeeded.
func UnlockLinked(admin string) error {
	return os.Remove(filepath.Join(admin, "locked"))
}

// createFile writes a file that must not exist yet, in a folder made
// just now, as git's write_file writes it (mode 0666 less the umask).
func createFile(name, content string) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// plainID reports whether git keeps a worktree's base name as its id
// unchanged (refs.c: sanitize_refname_component changes nothing in
// letters, digits, '-' and '_'); anything else is git's to name.
func plainID(id string) bool {
	if id == "" {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}
