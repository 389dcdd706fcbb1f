package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-flume/git-flume/internal/git/ondisk"
)

// withIndex runs git in dir with a throwaway index file, so the
// repository's real index is never touched; it is removed after. With a
// seed, the throwaway index starts as a copy of that index file, its
// modification time kept: git then judges each entry's stat data exactly
// as it would against the seed (a racily clean entry is still hashed).
func (repo *Repo) withIndex(ctx context.Context, dir, seed string, do func(run func(stdin []byte, args ...string) ([]byte, error)) error) error {
	f, err := os.CreateTemp(repo.GitDir, "flume-index-")
	if err != nil {
		return err
	}
	index := f.Name()
	defer os.Remove(index)
	seeded := seed != "" && ondisk.CopyIndex(f, seed) == nil
	f.Close()
	if !seeded {
		os.Remove(index) // git makes it; an empty file is not an index
	}
	run := func(stdin []byte, args ...string) ([]byte, error) {
		return repo.r.run(ctx, repo.inTree(dir, call{args: args, stdin: stdin, env: []string{"GIT_INDEX_FILE=" + index}}))
	}
	if seed != "" && !seeded {
		return errNoSeed
	}
	return do(run)
}

// errNoSeed is a seed index that could not be copied.
var errNoSeed = errors.New("the work tree's index could not be read")

// SnapshotTree writes the tree of the work tree at dir as it is: tracked
// files as they are on disk and untracked files that are not ignored,
// through a throwaway index (SPEC W3). HEAD, the branch and the real
// index are untouched. The throwaway index starts as a copy of the work
// tree's own, so git re-reads only the files whose stat data moved, not
// every file of the tree; without one (or if it will not do), from HEAD.
func (repo *Repo) SnapshotTree(ctx context.Context, dir string) (string, error) {
	if gitDir, err := ondisk.GitDirOf(dir); err == nil {
		if tree, err := repo.seededTree(ctx, dir, filepath.Join(gitDir, "index")); err == nil {
			return tree, nil
		}
	}
	tree, err := repo.addedTree(ctx, dir, "HEAD", "-A")
	if err != nil {
		return "", fmt.Errorf("snapshot %s: %w", dir, err)
	}
	return tree, nil
}

// seededTree writes the tree of the work tree at dir (its top) by `git add
// -A` over a copy of index (`-- .` fails matching only skip-worktree ones).
func (repo *Repo) seededTree(ctx context.Context, dir, index string) (string, error) {
	var tree string
	err := repo.withIndex(ctx, dir, index, func(run func([]byte, ...string) ([]byte, error)) error {
		if _, err := run(nil, "add", "-A"); err != nil {
			return err
		}
		out, err := run(nil, "write-tree")
		tree = strings.TrimSpace(string(out))
		return err
	})
	return tree, err
}

// addedTree writes, through a throwaway index, the tree of start with the
// work tree at dir added over it by `git add <mode> -- .`.
func (repo *Repo) addedTree(ctx context.Context, dir, start, mode string) (string, error) {
	var tree string
	err := repo.withIndex(ctx, dir, "", func(run func([]byte, ...string) ([]byte, error)) error {
		if _, err := run(nil, "read-tree", "--end-of-options", start); err != nil {
			return err
		}
		if _, err := run(nil, "add", mode, "--", "."); err != nil {
			return err
		}
		out, err := run(nil, "write-tree")
		tree = strings.TrimSpace(string(out))
		return err
	})
	return tree, err
}

// CommitTreeWith makes a commit of tree with parents and message, with
// git-flume's fixed identity.
func (repo *Repo) CommitTreeWith(ctx context.Context, tree, message string, parents ...string) (string, error) {
	return repo.treeCommit(ctx, tree, message, nil, parents)
}

// StableCommit is CommitTreeWith at a fixed date: the same tree, message
// and parents make the same commit, so a commit made of unchanged work
// again has the id it had.
func (repo *Repo) StableCommit(ctx context.Context, tree, message string, parents ...string) (string, error) {
	return repo.treeCommit(ctx, tree, message, []string{"GIT_AUTHOR_DATE=@0 +0000", "GIT_COMMITTER_DATE=@0 +0000"}, parents)
}

func (repo *Repo) treeCommit(ctx context.Context, tree, message string, env, parents []string) (string, error) {
	args := []string{"commit-tree", tree, "-m", message}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	out, err := repo.r.run(ctx, call{dir: repo.Dir, args: args, env: append([]string{
		"GIT_AUTHOR_NAME=git-flume", "GIT_AUTHOR_EMAIL=git-flume@localhost",
		"GIT_COMMITTER_NAME=git-flume", "GIT_COMMITTER_EMAIL=git-flume@localhost",
	}, env...)})
	if err != nil {
		return "", fmt.Errorf("commit snapshot: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// DiffTrees is the binary patch from one tree-ish to another, which
// `git apply` takes.
func (repo *Repo) DiffTrees(ctx context.Context, from, to string) ([]byte, error) {
	out, err := repo.read(ctx, nil, "diff", "--binary", "--full-index", "--no-color", "--no-ext-diff", "--no-textconv", from, to, "--")
	if err != nil {
		return nil, fmt.Errorf("diff %.12s %.12s: %w", from, to, err)
	}
	return out, nil
}

// RestoreTree makes the work tree at dir hold exactly tree's files: tracked
// files and the index go to base (the real index then matches base), files
// neither in base nor in tree are removed (ignored files stay), and tree's
// files are written over, through a throwaway index. HEAD is not moved
// here; the caller moves the branch.
func (repo *Repo) RestoreTree(ctx context.Context, dir, base, tree string) error {
	if _, err := repo.r.run(ctx, repo.inTree(dir, call{args: []string{"read-tree", "--reset", "-u", base}})); err != nil {
		return fmt.Errorf("restore %s to %.12s: %w", dir, base, err)
	}
	if _, err := repo.r.run(ctx, repo.inTree(dir, call{args: []string{"clean", "-f", "-d", "-q", "--", "."}})); err != nil {
		return fmt.Errorf("restore %s: remove untracked files: %w", dir, err)
	}
	if tree == "" {
		return nil
	}
	return repo.withIndex(ctx, dir, "", func(run func([]byte, ...string) ([]byte, error)) error {
		if _, err := run(nil, "read-tree", tree); err != nil {
			return err
		}
		_, err := run(nil, "checkout-index", "-a", "-f")
		return err
	})
}

// ExportTree writes commit's files into the empty folder dir, through a
// throwaway index: a checkout no branch, HEAD or worktree names.
func (repo *Repo) ExportTree(ctx context.Context, dir, commit string) error {
	at := []string{"--git-dir=" + repo.CommonDir, "--work-tree=" + dir}
	return repo.withIndex(ctx, dir, "", func(run func([]byte, ...string) ([]byte, error)) error {
		if _, err := run(nil, append(at, "read-tree", "--end-of-options", commit)...); err != nil {
			return err
		}
		_, err := run(nil, append(at, "checkout-index", "-a")...)
		return err
	})
}

// FilesBeyond reports whether the work tree at dir holds any file that base
// does not hold byte for byte: an untracked file that is not ignored, or a
// changed one. Files missing from the work tree do not count (nothing of
// them would be lost). Read through a throwaway index; HEAD, the branch and
// the real index are untouched.
func (repo *Repo) FilesBeyond(ctx context.Context, dir, base string) (bool, error) {
	tree, err := repo.addedTree(ctx, dir, base, "--ignore-removal")
	if err != nil {
		return false, fmt.Errorf("read %s against %s: %w", dir, base, err)
	}
	want, err := repo.ResolveRef(ctx, base+"^{tree}")
	if err != nil {
		return false, err
	}
	return tree != want, nil
}
