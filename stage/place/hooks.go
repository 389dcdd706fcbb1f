package place

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// hookMarker identifies hooks git-flume wrote.
const hookMarker = "# git-flume hook"

// chainedSuffix is where a hook that was there before ours is kept; ours
// runs it first.
const chainedSuffix = ".pre-flume"

// postCommitHook ends stages on commit (K7). Outside a place it returns at
// once, without starting git-flume; in a place it asks git-flume to advance
// the place in the background, so the commit never waits on agent work.
const postCommitHook = `#!/bin/sh
` + hookMarker + ` v2: post-commit; ` + "`git flume install`" + ` wrote it
case "$PWD" in
*/places/*--*) command -v git-flume >/dev/null 2>&1 && { git-flume hook post-commit </dev/null >/dev/null 2>&1 & } ;;
esac
if [ -x "${0%/*}/post-commit` + chainedSuffix + `" ]; then exec "${0%/*}/post-commit` + chainedSuffix + `" "$@"; fi
exit 0
`

// postMergeHook notices landings (T1): a merge or pull in the main
// checkout may land a place's branch, so git-flume advances every place in
// the background (a submit stage sees its branch landed) and tidies what
// landed.
const postMergeHook = `#!/bin/sh
` + hookMarker + ` v2: post-merge; ` + "`git flume install`" + ` wrote it
case "$PWD" in
*/places/*--*) ;;
*) command -v git-flume >/dev/null 2>&1 && { git-flume hook post-merge </dev/null >/dev/null 2>&1 & } ;;
esac
if [ -x "${0%/*}/post-merge` + chainedSuffix + `" ]; then exec "${0%/*}/post-merge` + chainedSuffix + `" "$@"; fi
exit 0
`

// referenceTransactionHook notices the landings no other hook sees (T1):
// a branch of the main checkout moved by reset, rebase, update-ref,
// branch -f or a promotion. Once a transaction that moved an existing
// branch (not one created or deleted: a launch's new branch lands
// nothing) is committed, outside a place (a place's own commits are post-commit's) and
// in a checkout that has places at all, git-flume advances and tidies in
// the background. What git hands the hook
// on its standard input is handed on to a hook that was there before.
// flume's own ref writes run with hooks off, so they never start it.
const referenceTransactionHook = `#!/bin/sh
` + hookMarker + ` v2: reference-transaction; ` + "`git flume install`" + ` wrote it
in=$(cat)
moved=
if [ "$1" = committed ] && [ -d places ]; then
	case "$PWD" in
	*/places/*--*) ;;
	*) while read -r old new ref; do
		case "$old$new" in *0000000000000000000000000000000000000000*) continue ;; esac
		case "$ref" in refs/heads/*) moved=1 ;; esac
	done <<IN
$in
IN
	;;
	esac
fi
if [ -n "$moved" ]; then
	command -v git-flume >/dev/null 2>&1 && { git-flume hook reference-transaction </dev/null >/dev/null 2>&1 & }
fi
if [ -x "${0%/*}/reference-transaction` + chainedSuffix + `" ]; then printf '%s\n' "$in" | exec "${0%/*}/reference-transaction` + chainedSuffix + `" "$@"; fi
exit 0
`

// InstallHooks installs the post-commit, post-merge and
// reference-transaction hooks where git
// looks for hooks (honouring core.hooksPath), chaining a hook already there
// rather than replacing it, and upgrading its own earlier versions. It
// returns the paths it wrote.
func (ps *Places) InstallHooks(ctx context.Context) ([]string, error) {
	env, repo := ps.r.Env, ps.r.Git
	if repo.Bare {
		// Its hooks would fire for nothing flume acts on: places are
		// worktrees of a repository with a work tree.
		return nil, fmt.Errorf("%s is a bare repository: flume's hooks act on commits made in places, which need a work tree; install them in a clone", repo.Dir)
	}
	dir, err := repo.HooksDir(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, h := range Hooks {
		path, err := installHook(env, dir, h.Name, h.Body)
		if err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// Hooks are the hooks git flume install writes, by name.
var Hooks = []struct{ Name, Body string }{
	{"post-commit", postCommitHook},
	{"post-merge", postMergeHook},
	{"reference-transaction", referenceTransactionHook},
}

func installHook(env *stage.Env, dir, name, body string) (string, error) {
	path := filepath.Join(dir, name)
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return "", err
	case bytes.Contains(old, []byte(hookMarker)):
		// ours: rewrite below
	default:
		chained := path + chainedSuffix
		if _, err := os.Stat(chained); err == nil {
			return "", fmt.Errorf("%s exists and is not git-flume's, and %s is taken too; merge them by hand", path, chained)
		}
		if err := os.Rename(path, chained); err != nil {
			return "", err
		}
		fmt.Fprintf(env.Out, "kept your %s hook as %s; git-flume's hook runs it too\n", name, chained)
	}
	return path, stage.ReplaceFile(path, []byte(body), 0o755)
}

// OfDir returns the place id of a place's top directory
// (<repo>/places/<kind>--<name>), or "" — without running git.
func OfDir(dir string) string {
	if filepath.Base(filepath.Dir(dir)) != record.PlacesDir {
		return ""
	}
	id := filepath.Base(dir)
	if _, err := record.PlaceID(id); err != nil || !strings.Contains(id, "--") {
		return ""
	}
	return id
}

// branchUnhooked reports whether no reference-transaction hook would act
// on a branch made here: git is known to run none, or only flume's own as
// this binary writes it, with no hook chained to it, which acts on
// branches moved and not on one made (T1). A launch then makes its branch
// with its records, hooks off, sparing git's `git branch` and the hook's
// runs (L1).
func branchUnhooked(repo *git.Repo) bool {
	path, ok := repo.HookFile("reference-transaction")
	if !ok {
		return false
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return true
	case err != nil || string(data) != referenceTransactionHook:
		return false
	}
	_, err = os.Lstat(path + chainedSuffix)
	return errors.Is(err, os.ErrNotExist)
}

// HookAdvance is the advance an installed hook starts, detached, for a
// hook run in directory cwd, and the directory to start it in; nil when
// it starts none. post-commit in a place advances that place from the main
// checkout (a process working inside the place would hold off its tidy,
// T3, by a landing meanwhile), except in a sandboxed agent, whose watcher
// sees the commit (A12); post-merge and reference-transaction in the main
// checkout advance every place with tidying, since any place's branch may
// have landed (T1).
func HookAdvance(hook, cwd string, sandboxed bool) (args []string, dir string) {
	switch hook {
	case "post-commit":
		id := OfDir(cwd)
		if id == "" || sandboxed {
			return nil, ""
		}
		main := filepath.Dir(filepath.Dir(cwd))
		return []string{"advance", "--from-hook", "--repo", main, id}, main
	case "post-merge", "reference-transaction":
		return []string{"advance", "--from-hook", "--tidy", "--repo", cwd}, cwd
	}
	return nil, ""
}

// HookInstalled reports whether the hook name in dir is one flume wrote.
func HookInstalled(dir, name string) bool {
	data, err := os.ReadFile(filepath.Join(dir, name))
	return err == nil && bytes.Contains(data, []byte(hookMarker))
}
