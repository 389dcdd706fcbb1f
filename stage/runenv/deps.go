package runenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/lockfile"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// Dependencies without a full install: the ignored folders a repository names ([run] deps, e.g.
// node_modules) are built once per key (the install command, the folders
// and the whole tree of the place's base) by the install command run in a
// checkout of that tree no branch, worktree or agent controls, and kept
// as a template in the repository's git folder; every place with that key
// gets a clone of them: copy-on-write (FICLONE) where the file system
// clones, a full copy where it does not. Never a symlink to a shared
// folder, never a hard link: each place's folders are its own. A template
// holding a link that leaves its folder is never kept: that place runs its
// own install. A branch that changes any file gets its own install, since
// its base's tree differs. Tracked files stay git worktree add's job.

// depsKey is the template's key: the install command, the folders, and
// the tree of the place's base (every file the install could read).
func depsKey(ctx context.Context, repo *git.Repo, base string, d stage.RunDecl) (string, error) {
	tree, err := repo.TreeOf(ctx, base)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "install %q\nfolders %q\ntree %s\n", d.DepsInstall, d.Deps, tree)
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// setUpDeps gives a made place its dependency folders: cloned from the
// template of its key, built first when there is none yet (under the
// key's lock, so one launch builds and the others wait and clone). A
// folder the place has already (its branch tracks it, or an earlier setup
// made it) or that lies below a link in it is left, with why. Every copy
// is made in the repository's flume/tmp and renamed in whole: one cut
// short never shows, and what it left is removed by the next setup once
// its process is gone.
func setUpDeps(ctx context.Context, env *stage.Env, repo *git.Repo, p *record.Place, d stage.RunDecl) (*record.DepsSetup, error) {
	if len(d.Deps) == 0 {
		return nil, nil
	}
	if d.DepsInstall == "" {
		return nil, fmt.Errorf("[run] deps names %v but no depsInstall builds them", d.Deps)
	}
	key, err := depsKey(ctx, repo, p.Base, d)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(repo.CommonDir, "flume", "deps")
	tmp := filepath.Join(repo.CommonDir, "flume", "tmp")
	for _, dir := range []string{root, tmp} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	removeDeadPartials(tmp)
	setup := &record.DepsSetup{Key: key}
	setup.Folders, setup.Kept = depsWanted(p, d)
	if len(setup.Folders) == 0 {
		return setup, nil
	}
	l, err := lockfile.Take(ctx, filepath.Join(root, key+".lock"))
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	template := filepath.Join(root, key)
	if _, err := os.Stat(filepath.Join(template, ".complete")); err != nil {
		refused, err := buildTemplate(ctx, env, repo, p, d, template, tmp)
		if err != nil {
			return nil, err
		}
		if refused != "" {
			// never kept, never cloned; this place installs its own.
			setup.Method, setup.Refused = "install", refused
			return setup, installDeps(ctx, env, repo, p, d)
		}
		setup.Built = true
		pruneTemplates(root, key)
	}
	setup.Method = "reflink"
	for _, f := range setup.Folders {
		method, err := cloneInto(filepath.Join(template, f), filepath.Join(p.Path, f), tmp)
		if err != nil {
			return nil, fmt.Errorf("deps %s: %w", f, err)
		}
		if method == "copy" {
			setup.Method = "copy"
		}
	}
	return setup, nil
}

// keptTemplates is how many dependency templates a repository keeps: one
// a base tree, so each tip the places start from would otherwise add one.
const keptTemplates = 3

// pruneTemplates removes the templates of root beyond the newest
// keptTemplates (by when each was completed), never the one of key just
// built, and only one whose key's lock it takes at once: a launch cloning
// from it holds that lock.
func pruneTemplates(root, key string) {
	entries, _ := os.ReadDir(root)
	type template struct {
		key  string
		when time.Time
	}
	var all []template
	for _, e := range entries {
		if info, err := os.Stat(filepath.Join(root, e.Name(), ".complete")); err == nil && e.IsDir() && e.Name() != key {
			all = append(all, template{e.Name(), info.ModTime()})
		}
	}
	slices.SortFunc(all, func(a, b template) int { return b.when.Compare(a.when) })
	for _, t := range all[min(len(all), keptTemplates-1):] {
		l, err := lockfile.TryTake(filepath.Join(root, t.key+".lock"))
		if err != nil {
			continue // in use, or cannot be locked: the next prune tries again
		}
		_ = os.RemoveAll(filepath.Join(root, t.key))
		l.Unlock()
	}
}

// depsWanted are the dependency folders place p is to get, and those it
// keeps as it has them, with why: one it has already (its branch tracks
// it, an earlier setup made it), one below a link in it.
func depsWanted(p *record.Place, d stage.RunDecl) (want, kept []string) {
	for _, f := range d.Deps {
		if link := linkIn(p.Path, f); link != "" {
			kept = append(kept, f+": "+throughLink(link))
		} else if _, err := os.Lstat(filepath.Join(p.Path, f)); err == nil {
			kept = append(kept, f+": the place has one already")
		} else {
			want = append(want, f)
		}
	}
	return want, kept
}

// buildTemplate builds place p's dependency folders as template: its
// base's tree written into a folder of tmp, the install run there, its
// folders moved into the template in whole. refused says why they were
// not kept (a link leaving its folder); then no template is made.
func buildTemplate(ctx context.Context, env *stage.Env, repo *git.Repo, p *record.Place, d stage.RunDecl, template, tmp string) (string, error) {
	part, err := os.MkdirTemp(tmp, partialName())
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(part) // the template is renamed out of it first
	src, out := filepath.Join(part, "checkout"), filepath.Join(part, "template")
	for _, dir := range []string{src, out} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			return "", err
		}
	}
	if err := repo.ExportTree(ctx, src, p.Base); err != nil {
		return "", fmt.Errorf("deps: a checkout of %.12s to install in: %w", p.Base, err)
	}
	if err := runInstall(ctx, env, repo, p, d, src); err != nil {
		return "", fmt.Errorf("deps install: %w", err)
	}
	for _, f := range d.Deps {
		from := filepath.Join(src, f)
		if _, err := os.Lstat(from); errors.Is(err, fs.ErrNotExist) {
			continue // the install made no such folder: the template has none either
		}
		if why := leavesFolder(from); why != "" {
			return f + ": " + why, nil
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(out, f)), 0o700); err != nil {
			return "", err
		}
		if err := os.Rename(from, filepath.Join(out, f)); err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(filepath.Join(out, ".complete"), nil, 0o600); err != nil {
		return "", err
	}
	return "", os.Rename(out, template)
}

// leavesFolder says how folder dir is no folder of its own to share: it
// is a link, or holds a link that leads out of it; "" when it is not.
func leavesFolder(dir string) string {
	if info, err := os.Lstat(dir); err != nil || !info.IsDir() {
		return "it is a symbolic link or not a folder"
	}
	var why string
	_ = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.Type()&fs.ModeSymlink == 0 {
			return err
		}
		target, err := os.Readlink(path)
		if err != nil {
			return err
		}
		to := target
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(path), to)
		}
		if rel, err := filepath.Rel(dir, filepath.Clean(to)); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			inside, _ := filepath.Rel(dir, path)
			why = fmt.Sprintf("%s links to %s, outside it", inside, target)
			return filepath.SkipAll
		}
		return nil
	})
	return why
}

// installDeps runs the install command in the place itself: for a place
// whose key's template was refused.
func installDeps(ctx context.Context, env *stage.Env, repo *git.Repo, p *record.Place, d stage.RunDecl) error {
	return runInstall(ctx, env, repo, p, d, p.Path)
}

// runInstall runs the install command in dir, as a repository step of
// place p (its output to the place's log), through /bin/sh -c.
func runInstall(ctx context.Context, env *stage.Env, repo *git.Repo, p *record.Place, d stage.RunDecl, dir string) error {
	log, err := stage.OpenLog(repo.CommonDir, p.ID)
	if err != nil {
		return err
	}
	defer log.Close()
	return stage.RunSteps(ctx, nil, []stage.Step{{Command: d.DepsInstall, Shell: true}}, dir, stage.StepEnv(env.CallerEnv, p), "deps", env.Out, log)
}

// partialName names a folder a copy is made in: the process's pid, so
// that a later setup knows whether its maker still runs.
func partialName() string { return "deps-" + strconv.Itoa(os.Getpid()) + "-*" }

// removeDeadPartials removes what copies cut short left: folders of
// processes that are gone.
func removeDeadPartials(tmp string) {
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "deps-")
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		if pid, err := strconv.Atoi(pidText); err == nil && !proc.Alive(pid) {
			_ = os.RemoveAll(filepath.Join(tmp, e.Name())) // scratch; the next setup tries again
		}
	}
}

// cloneInto clones folder src to dst (which must not exist) through a
// partial folder in tmp, renamed into place in whole.
func cloneInto(src, dst, tmp string) (string, error) {
	if _, err := os.Lstat(dst); err == nil {
		return "", fmt.Errorf("%s exists in the place already", dst)
	}
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return "reflink", nil // the template has none: nothing to clone
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	part, err := os.MkdirTemp(tmp, partialName())
	if err != nil {
		return "", err
	}
	method, err := cloneTree(src, filepath.Join(part, "f"))
	if err == nil {
		err = os.Rename(filepath.Join(part, "f"), dst)
	}
	_ = os.RemoveAll(part) // empty once renamed; scratch otherwise
	return method, err
}

// cloneTree copies the folder src to dst: folders made, symlinks made
// again as they read, regular files cloned copy-on-write where the file
// system can, copied in full where it cannot; never a hard link. It says
// "reflink" when every file was cloned, "copy" otherwise.
func cloneTree(src, dst string) (string, error) {
	method := "reflink"
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case info.Mode().IsRegular():
			cloned, err := cloneFile(path, to, info.Mode().Perm())
			if !cloned {
				method = "copy"
			}
			return err
		}
		return nil // sockets, devices: not dependencies
	})
	return method, err
}

// cloneFile clones a regular file copy-on-write (FICLONE), or copies it in
// full where the file system cannot clone; it reports whether it cloned.
func cloneFile(src, dst string, mode fs.FileMode) (bool, error) {
	in, err := os.Open(src)
	if err != nil {
		return false, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return false, err
	}
	cloned := fileClone(out, in) == nil
	if !cloned {
		_, err = io.Copy(out, in)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return cloned, err
}

// CloneProbe reports whether the file system under dir clones files
// copy-on-write, and if not why, by cloning a small file there.
func CloneProbe(dir string) (bool, string) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err.Error()
	}
	src, err := os.CreateTemp(dir, "probe-*")
	if err != nil {
		return false, err.Error()
	}
	defer os.Remove(src.Name())
	_, _ = src.WriteString("flume clone probe") // a short write shows in the clone below
	defer src.Close()
	dst, err := os.CreateTemp(dir, "probe-*")
	if err != nil {
		return false, err.Error()
	}
	defer os.Remove(dst.Name())
	defer dst.Close()
	if err := fileClone(dst, src); err != nil {
		return false, err.Error()
	}
	return true, ""
}
