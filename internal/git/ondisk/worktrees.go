package ondisk

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Worktree is one entry of `git worktree list --porcelain`.
type Worktree struct {
	Path     string
	Head     string
	Branch   string // full ref name, "" when detached
	Bare     bool
	Detached bool
	Locked   bool
	// LockReason is why it is locked, when a reason was given.
	LockReason string
	Prunable   bool
	// Main reports the main worktree (git lists it first).
	Main bool
}

// Worktrees lists the worktrees of the repository at commonDir, a
// checkout's .git folder, as git 2.39's `git worktree list --porcelain`
// does (worktree.c: get_main_worktree, get_linked_worktree,
// add_head_info, worktree_lock_reason, should_prune_worktree): the main
// one first, the linked ones by path; a linked one whose gitdir file
// cannot be read, or is empty, is not listed; one whose gitdir file names
// a .git file that is gone is prunable unless locked; an unborn branch's
// head is all zeros. The branches' commits come from refs, the caller's
// reader of refs (git reads packed-refs again for every worktree, which
// grows with the square of the places: DESIGN.md, "Figures from code
// comments"): ids by name, none for a ref
// that does not exist, "" for a broken one, ok false when git must
// answer. ok is false for anything git would read otherwise or this reader
// does not judge: a common folder not named .git, reftable, a relative
// gitdir (newer git's worktree.useRelativePaths), a missing or empty
// commondir (on which git fails), a HEAD that is neither a branch nor an
// id, a broken ref, a file that cannot be read.
func Worktrees(commonDir string, refs func(names []string) (ids map[string]string, ok bool)) (wts []Worktree, ok bool) {
	real, err := filepath.EvalSymlinks(commonDir)
	if err != nil || filepath.Base(real) != ".git" {
		return nil, false
	}
	if _, err := os.Lstat(filepath.Join(commonDir, "reftable")); !errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	heads := []string{commonDir}
	wts = []Worktree{{Path: filepath.Dir(real), Main: true}}
	dir := filepath.Join(commonDir, "worktrees")
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	// Files read with ReadSmall, in three system calls each: at 10,000
	// worktrees os.ReadFile's five were most of the listing's time.
	var buf [4096]byte
	for _, e := range entries {
		admin := filepath.Join(dir, e.Name())
		wt, listed, ok := linkedWorktree(admin, buf[:])
		if !ok {
			return nil, false
		}
		if listed {
			wts, heads = append(wts, wt), append(heads, admin)
		}
	}
	// git sorts the linked worktrees by path (fspathcmp: bytes on Linux).
	order := make([]int, len(wts)-1)
	for i := range order {
		order[i] = i + 1
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(wts[a].Path, wts[b].Path) })
	sorted := []Worktree{wts[0]}
	sortedHeads := []string{heads[0]}
	for _, i := range order {
		sorted, sortedHeads = append(sorted, wts[i]), append(sortedHeads, heads[i])
	}
	if !readHeads(sorted, sortedHeads) {
		return nil, false
	}
	return sorted, branchHeads(sorted, refs)
}

// linkedWorktree reads the administrative folder admin of one linked
// worktree as Worktrees does, but for its head; listed is false where git
// lists none.
func linkedWorktree(admin string, buf []byte) (wt Worktree, listed, ok bool) {
	gitdir, err := ReadSmall(filepath.Join(admin, "gitdir"), buf)
	var pathErr *fs.PathError
	if err != nil && !errors.As(err, &pathErr) {
		return wt, false, false // too long to be git's
	}
	dotgit := strings.TrimRight(string(gitdir), asciiSpace)
	if err != nil || len(gitdir) == 0 {
		return wt, false, true // git lists no worktree here either
	}
	if !filepath.IsAbs(dotgit) {
		return wt, false, false
	}
	// git fails every listing over a folder whose commondir is missing
	// or empty ("failed to read …/commondir": a `worktree add` killed
	// while it wrote the folder), and flume repairs what made it fail:
	// that failure is git's to give.
	if common, err := ReadSmall(filepath.Join(admin, "commondir"), buf); err != nil || len(strings.Trim(string(common), asciiSpace)) == 0 {
		return wt, false, false
	}
	wt.Path = strings.TrimSuffix(dotgit, "/.git")
	switch reason, err := os.ReadFile(filepath.Join(admin, "locked")); {
	case err == nil:
		wt.Locked, wt.LockReason = true, strings.Trim(string(reason), asciiSpace)
	case !errors.Is(err, fs.ErrNotExist):
		return wt, false, false
	}
	if _, err := os.Stat(dotgit); errors.Is(err, fs.ErrNotExist) {
		wt.Prunable = !wt.Locked
	} else if err != nil {
		return wt, false, false
	}
	return wt, true, true
}

// asciiSpace is what C's isspace trims, as git's strbuf_trim does.
const asciiSpace = " \t\n\v\f\r"

// readHeads reads each worktree's HEAD file, in its git folder
// (adminDirs, in the same order): a branch's name, or a detached id. The
// branches' commits are the caller's to read.
func readHeads(wts []Worktree, adminDirs []string) bool {
	var buf [4096]byte
	for i, admin := range adminDirs {
		data, err := ReadSmall(filepath.Join(admin, "HEAD"), buf[:])
		if err != nil {
			return false
		}
		head := strings.Trim(string(data), asciiSpace)
		if ref, ok := strings.CutPrefix(head, "ref: "); ok {
			if !strings.HasPrefix(ref, "refs/") || CheckRefName(ref) != nil {
				return false
			}
			wts[i].Branch = ref
			continue
		}
		if !IsSHA1ID(head) {
			return false
		}
		wts[i].Head, wts[i].Detached = head, true
	}
	return true
}

// branchHeads reads the commits of the worktrees on a branch with refs:
// an unborn branch's head is all zeros, as git lists it; a broken ref is
// git's to judge.
func branchHeads(wts []Worktree, refs func([]string) (map[string]string, bool)) bool {
	var names []string
	for _, wt := range wts {
		if !wt.Detached {
			names = append(names, wt.Branch)
		}
	}
	ids, ok := refs(names)
	if !ok {
		return false
	}
	for i := range wts {
		if wts[i].Detached {
			continue
		}
		id, found := ids[wts[i].Branch]
		switch {
		case !found:
			id = strings.Repeat("0", 40)
		case id == "":
			return false
		}
		wts[i].Head = id
	}
	return true
}

// ParseWorktreeList reads the output of `git worktree list --porcelain -z`.
func ParseWorktreeList(out []byte) []Worktree {
	var wts []Worktree
	var cur *Worktree
	for field := range strings.SplitSeq(string(out), "\x00") {
		if field == "" {
			cur = nil
			continue
		}
		key, val, _ := strings.Cut(field, " ")
		if key == "worktree" {
			wts = append(wts, Worktree{Path: val, Main: len(wts) == 0})
			cur = &wts[len(wts)-1]
			continue
		}
		if cur == nil {
			continue
		}
		switch key {
		case "HEAD":
			cur.Head = val
		case "branch":
			cur.Branch = val
		case "bare":
			cur.Bare = true
		case "detached":
			cur.Detached = true
		case "locked":
			cur.Locked, cur.LockReason = true, val
		case "prunable":
			cur.Prunable = true
		}
	}
	return wts
}

// GitDirOf is the git directory of the checkout at path: its .git folder,
// or the folder its .git file names (relative to path when relative).
// Where there is neither, the error is fs.ErrNotExist.
func GitDirOf(path string) (string, error) {
	dotgit := filepath.Join(path, ".git")
	var buf [512]byte
	data, err := ReadSmall(dotgit, buf[:])
	switch {
	case errors.Is(err, syscall.EISDIR):
		return dotgit, nil // a checkout's own .git folder
	case err != nil:
		return "", fs.ErrNotExist
	}
	gitDir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok {
		return "", errors.New(".git is not a gitdir file")
	}
	if !filepath.IsAbs(gitDir) {
		gitDir = filepath.Join(path, gitDir)
	}
	return gitDir, nil
}

// WorktreeChanged says how the files that tie the linked worktree at dir,
// whose folder in git is admin, to the repository whose common folder is
// commonDir differ from what git wrote: dir/.git naming admin, admin's
// gitdir naming dir/.git, its commondir naming commonDir, and no
// config.worktree; "" when they agree. A path git wrote relative
// (worktree.useRelativePaths) is taken from the file's own folder.
func WorktreeChanged(commonDir, admin, dir string) string {
	read := func(path string) string {
		var buf [4096]byte
		data, err := ReadSmall(path, buf[:])
		if err != nil {
			return "(unreadable: " + err.Error() + ")"
		}
		return strings.TrimSpace(string(data))
	}
	abs := func(from, path string) string {
		if !filepath.IsAbs(path) {
			path = filepath.Join(from, path)
		}
		return filepath.Clean(path)
	}
	dotGit := filepath.Join(dir, ".git")
	if got := read(dotGit); !strings.HasPrefix(got, "gitdir: ") || !samePath(abs(dir, strings.TrimPrefix(got, "gitdir: ")), admin) {
		return fmt.Sprintf("%s holds %q, expected %q", dotGit, got, "gitdir: "+admin)
	}
	if got := read(filepath.Join(admin, "gitdir")); !samePath(abs(admin, got), dotGit) {
		return fmt.Sprintf("%s holds %q, expected %q", filepath.Join(admin, "gitdir"), got, dotGit)
	}
	if got := read(filepath.Join(admin, "commondir")); !samePath(abs(admin, got), commonDir) {
		return fmt.Sprintf("%s holds %q, expected the common folder %s", filepath.Join(admin, "commondir"), got, commonDir)
	}
	if _, err := os.Lstat(filepath.Join(admin, "config.worktree")); err == nil {
		return fmt.Sprintf("%s exists: git in the work tree may read it", filepath.Join(admin, "config.worktree"))
	}
	return ""
}

// PlaceFilesChanged says how the git files of the linked worktree at dir,
// on branch (a full ref name), that its agent may write differ from what
// git and flume wrote (A13): a config.worktree (its fsmonitor, hooks and
// filters would run), the branch's own file made a symbolic ref, or its
// HEAD (read from git's folder, never through dir/.git) naming another
// branch. git run there, or a move of the branch, would follow them; ""
// when they agree or git has no folder for dir. A detached HEAD (a rebase
// under way) is still the place's; a missing one (a worktree git was
// stopped making) and the files that tie the worktree to its repository
// are WorktreeChanged's, judged where a half-made worktree is repaired.
func PlaceFilesChanged(commonDir, dir, branch string) string {
	admin := WorktreeAdmin(commonDir, dir)
	if admin == "" {
		return ""
	}
	if _, err := os.Lstat(filepath.Join(admin, "config.worktree")); err == nil {
		return filepath.Join(admin, "config.worktree") + " exists: git in the work tree may read it"
	}
	if target := SymbolicTarget(commonDir, branch); target != "" {
		return fmt.Sprintf("its branch %s is a symbolic ref to %s", strings.TrimPrefix(branch, "refs/heads/"), target)
	}
	var buf [512]byte
	head, err := ReadSmall(filepath.Join(admin, "HEAD"), buf[:])
	if ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: "); err == nil && ok && ref != branch {
		return fmt.Sprintf("its HEAD names %s, not its branch %s", ref, strings.TrimPrefix(branch, "refs/heads/"))
	}
	return ""
}

// WorktreeBranch returns the branch (full ref name) checked out in the
// worktree at path, "" when its HEAD is detached: path/.git names the
// worktree's git folder, whose HEAD is read. A worktree that is not one of
// the repository whose common folder is commonDir is an error wrapping
// fs.ErrNotExist.
func WorktreeBranch(commonDir, path string) (string, error) {
	gitDir, err := GitDirOf(path)
	if err != nil {
		return "", fmt.Errorf("worktree %s: %w", path, err)
	}
	owner := filepath.Clean(commonDir)
	if g := filepath.Clean(gitDir); g != owner && filepath.Dir(g) != filepath.Join(owner, "worktrees") {
		return "", fmt.Errorf("worktree %s belongs to %s, not %s: %w", path, g, owner, fs.ErrNotExist)
	}
	var buf [512]byte
	head, err := ReadSmall(filepath.Join(gitDir, "HEAD"), buf[:])
	if err != nil {
		return "", fmt.Errorf("worktree %s: %w", path, fs.ErrNotExist)
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
	if !ok {
		return "", nil
	}
	return ref, nil
}

// WorktreeAdmin is git's folder in commonDir for the linked worktree at
// dir: the one whose gitdir names dir/.git, looked for first under dir's
// own name (git's choice unless taken), then among them all; else the one
// under dir's name, whose files then disagree (WorktreeChanged says how);
// "" when there is none.
func WorktreeAdmin(commonDir, dir string) string {
	root := filepath.Join(commonDir, "worktrees")
	dotGit := filepath.Join(filepath.Clean(dir), ".git")
	names := func(admin string) bool {
		var buf [4096]byte
		data, err := ReadSmall(filepath.Join(admin, "gitdir"), buf[:])
		path := strings.TrimSpace(string(data))
		if err == nil && !filepath.IsAbs(path) {
			path = filepath.Join(admin, path)
		}
		return err == nil && samePath(path, dotGit)
	}
	own := filepath.Join(root, filepath.Base(dir))
	if names(own) {
		return own
	}
	if entries, err := os.ReadDir(root); err == nil {
		for _, e := range entries {
			if admin := filepath.Join(root, e.Name()); e.IsDir() && names(admin) {
				return admin
			}
		}
	}
	if info, err := os.Lstat(own); err == nil && info.IsDir() {
		return own
	}
	return ""
}

// samePath reports whether a and b name the same file: equal once cleaned,
// or once their symbolic links are followed (git may write a worktree's
// real path, /private/tmp for /tmp on macOS).
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// CopyIndex copies the index file seed into f, and gives f seed's
// modification time: git judges the copy's entries' stat data exactly as
// the original's (racily clean ones alike).
func CopyIndex(f *os.File, seed string) error {
	src, err := os.Open(seed)
	if err != nil {
		return err
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, src); err != nil {
		return err
	}
	return os.Chtimes(f.Name(), info.ModTime(), info.ModTime())
}
