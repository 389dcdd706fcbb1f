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
	"strconv"
	"strings"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/lockfile"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/stage"
)

// Dependencies without a full install (issue 29, point 4): the ignored
// folders a repository names ([run] deps, e.g. node_modules) are built
// once per key (the install command, the folders, and the content of the
// key files at the place's base) into a template in the repository's git
// folder, and every later place with that key gets a clone of them:
// copy-on-write (FICLONE) where the file system clones, a full copy where
// it does not. Never a symlink to a shared folder, never a hard link: each
// place's folders are its own. Tracked files stay git worktree add's job.

// depsKey is the template's key: the install command, the folders, and
// each key file's blob at the place's base (or its absence).
func depsKey(ctx context.Context, repo *git.Repo, base string, d stage.RunDecl) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "install %q\nfolders %q\n", d.DepsInstall, d.Deps)
	for _, f := range d.DepsKey {
		blob, err := repo.BlobAt(ctx, base, f)
		if err != nil && !errors.Is(err, git.ErrNotExist) {
			return "", err
		}
		fmt.Fprintf(h, "key %q %s\n", f, blob)
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// setUpDeps gives a made place its dependency folders: cloned from the
// template of its key, or, when there is none yet, installed in the place
// by the install command and then kept as the template (under the key's
// lock, so one place installs and the others wait and clone). Every copy
// is made beside the place, in the repository's flume/tmp, and renamed in
// whole: a copy cut short never shows, and what it left is removed by the
// next setup once its process is gone.
func setUpDeps(ctx context.Context, env *stage.Env, repo *git.Repo, p *stage.Place, d stage.RunDecl) (*stage.DepsSetup, error) {
	if len(d.Deps) == 0 {
		return nil, nil
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
	l, err := lockfile.Take(ctx, filepath.Join(root, key+".lock"))
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	setup := &stage.DepsSetup{Key: key, Folders: d.Deps}
	template := filepath.Join(root, key)
	if _, err := os.Stat(filepath.Join(template, ".complete")); err == nil {
		setup.Method = "reflink"
		for _, f := range d.Deps {
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
	if err := installDeps(ctx, env, repo, p, d); err != nil {
		return nil, err
	}
	setup.Method = "install"
	part, err := os.MkdirTemp(tmp, partialName())
	if err != nil {
		return nil, err
	}
	for _, f := range d.Deps {
		if _, err := os.Lstat(filepath.Join(p.Path, f)); errors.Is(err, fs.ErrNotExist) {
			continue // the install made no such folder: the template has none either
		}
		if _, err := cloneTree(filepath.Join(p.Path, f), filepath.Join(part, f)); err != nil {
			return nil, fmt.Errorf("deps %s: keep the template: %w", f, err)
		}
	}
	if err := os.WriteFile(filepath.Join(part, ".complete"), nil, 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(part, template); err != nil {
		return nil, err
	}
	return setup, nil
}

// installDeps runs the install command in the place, as a repository step
// (its output to the place's log), through /bin/sh -c.
func installDeps(ctx context.Context, env *stage.Env, repo *git.Repo, p *stage.Place, d stage.RunDecl) error {
	if d.DepsInstall == "" {
		return fmt.Errorf("[run] deps names %v but no depsInstall builds them", d.Deps)
	}
	log, err := stage.OpenLog(repo.CommonDir, p.ID)
	if err != nil {
		return err
	}
	defer log.Close()
	return stage.RunSteps(ctx, []stage.Step{{Command: d.DepsInstall, Shell: true}}, p.Path, stage.StepEnv(env.CallerEnv, p), "deps", env.Out, log)
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
