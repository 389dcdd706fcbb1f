package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// FetchRefs fetches refspecs (given on its standard input, however many)
// from remote in one atomic transaction: all the destination refs move,
// or none. prune deletes destination refs the remote no longer has. No
// tags, no FETCH_HEAD. A refspec that is an object id the remote
// advertised fetches it and its history, moving no ref; git checks first
// whether they are here and complete, and transfers nothing then.
func (repo *Repo) FetchRefs(ctx context.Context, remote string, prune bool, refspecs ...string) error {
	args := []string{"fetch", "--quiet", "--atomic", "--no-tags", "--no-write-fetch-head", "--stdin"}
	if prune {
		args = append(args, "--prune")
	}
	in := []byte(strings.Join(refspecs, "\n") + "\n")
	if _, err := repo.write(ctx, in, nil, append(args, "--end-of-options", remote)...); err != nil {
		return fmt.Errorf("fetch %s: %w", remote, err)
	}
	return nil
}

// ListRemote lists the refs remote holds under prefix, by name, as one
// `git ls-remote` reads them: nothing here is written. A name that is
// not a valid ref name, or an id that is not an object id, is left out:
// the remote's answer is untrusted input.
func (repo *Repo) ListRemote(ctx context.Context, remote, prefix string) (map[string]string, error) {
	out, err := repo.read(ctx, nil, "ls-remote", "--refs", "--end-of-options", remote, prefix+"*")
	if err != nil {
		return nil, fmt.Errorf("list %s's refs: %w", remote, err)
	}
	refs := map[string]string{}
	for line := range strings.SplitSeq(string(out), "\n") {
		id, name, ok := strings.Cut(line, "\t")
		if ok && strings.HasPrefix(name, prefix) && IsObjectID(id) && CheckRefName(name) == nil {
			refs[name] = id
		}
	}
	return refs, nil
}

// PushUpdate is one ref a push moves on the remote, leased: it moves only
// if the remote ref is at Expect ("" for must not exist). An empty Local
// deletes the remote ref.
type PushUpdate struct {
	Ref    string
	Local  string // the object to push, "" to delete
	Expect string
}

// PushRejectedError is a push the remote refused, at least in part: with
// --atomic nothing moved.
type PushRejectedError struct {
	Remote string
	// Rejected maps each refused ref to git's reason ("stale info",
	// "non-fast-forward", "atomic push failed", …).
	Rejected map[string]string
}

func (e *PushRejectedError) Error() string {
	var parts []string
	for ref, why := range e.Rejected {
		parts = append(parts, ref+" ("+why+")")
	}
	return fmt.Sprintf("push to %s rejected: %s", e.Remote, strings.Join(parts, ", "))
}

// PushLeased pushes updates to remote atomically, each with its own
// --force-with-lease (the remote's compare-and-swap against what the
// caller last saw). It never touches any other ref. A refusal is a
// *PushRejectedError naming each ref and why.
//
// Many updates are pushed from a scratch repository of their own (see
// pushScratch); a few from here, each named, each leased by name.
func (repo *Repo) PushLeased(ctx context.Context, remote string, updates []PushUpdate) error {
	if len(updates) == 0 {
		return nil
	}
	// Every source is an object id: git would look each up as a ref name
	// too (six names each) only to warn when one exists.
	args := []string{"-c", "core.warnAmbiguousRefs=false", "push", "--atomic", "--porcelain", "--no-verify"}
	var env, refspecs []string
	if len(updates) >= pushScratchAt {
		dir, done, err := repo.pushScratch(ctx, updates)
		if err != nil {
			return fmt.Errorf("push to %s: %w", remote, err)
		}
		if dir != "" {
			defer done()
			env = []string{"GIT_DIR=" + dir}
			// The scratch repository holds exactly the refs to push, and
			// no remote-tracking ref: a bare lease is "absent" for each.
			// The tracking refs git may write there are news to no hook.
			args = append([]string{"-c", "core.hooksPath=/dev/null"}, args...)
			args = append(args, "--force-with-lease")
			refspecs = append(refspecs, "refs/*:refs/*")
		}
	}
	for _, u := range updates {
		if env == nil || u.Expect != "" {
			args = append(args, "--force-with-lease="+u.Ref+":"+u.Expect)
		}
		if env == nil || u.Local == "" {
			refspecs = append(refspecs, u.Local+":"+u.Ref)
		}
	}
	args = append(append(args, "--end-of-options", remote), refspecs...)
	out, err := repo.write(ctx, nil, env, args...)
	if err == nil {
		return nil
	}
	rejected := map[string]string{}
	for line := range strings.SplitSeq(string(out), "\n") {
		// <flag> \t <from>:<to> \t <summary> (<reason>)
		fields := strings.Split(line, "\t")
		if len(fields) < 3 || fields[0] != "!" {
			continue
		}
		_, to, _ := strings.Cut(fields[1], ":")
		why := fields[2]
		if i := strings.IndexByte(why, '('); i >= 0 {
			why = strings.TrimSuffix(why[i+1:], ")")
		}
		rejected[to] = why
	}
	if len(rejected) > 0 {
		return &PushRejectedError{Remote: remote, Rejected: rejected}
	}
	var gerr *Error
	if errors.As(err, &gerr) {
		return fmt.Errorf("push to %s: %w", remote, err)
	}
	return err
}

// pushScratchAt is how many updates make a push worth running from a
// scratch repository.
const pushScratchAt = 8

// pushScratch makes a repository, inside the common git dir, that borrows
// this one's objects and configuration and holds exactly the refs a push
// moves (made by one `git update-ref --stdin`), for one push of them
// by a glob. git push matches each named refspec against every ref on
// both sides (six formatted names a pair): a first sync of 10,000 records
// named one by one spent 20 s there before anything was sent; by a glob it
// costs what a plain `git push` of them does. The remote, its URL
// rewriting and the transport settings still come from this
// repository's config, which the scratch config includes, and the push
// still runs in this work tree, so relative remote paths mean what they
// did. done removes it; one a killed push left is removed by a later
// push, an hour on.
//
// Where borrowing is not exact the push runs here, each ref named: a
// repository whose format the included config would change (extensions:
// another hash, a partial clone), or a shallow one.
func (repo *Repo) pushScratch(ctx context.Context, updates []PushUpdate) (dir string, done func(), err error) {
	cfg, err := os.ReadFile(filepath.Join(repo.CommonDir, "config"))
	_, shallow := os.Lstat(filepath.Join(repo.CommonDir, "shallow"))
	if err != nil || repo.ObjectFormat != "sha1" || shallow == nil || strings.Contains(strings.ToLower(string(cfg)), "extensions") {
		return "", nil, nil
	}
	repo.sweepScratch()
	if dir, err = os.MkdirTemp(repo.CommonDir, "flume-push-*.git"); err != nil {
		return "", nil, err
	}
	done = func() { _ = os.RemoveAll(dir) }
	fail := func(err error) (string, func(), error) { done(); return "", nil, err }
	if err := os.MkdirAll(filepath.Join(dir, "refs", "heads"), 0o755); err != nil {
		return fail(err)
	}
	files := map[string]string{
		"HEAD": "ref: refs/heads/scratch\n",
		// The repository's config first, then what makes this one bare.
		"config":                  "[include]\n\tpath = ../config\n[core]\n\trepositoryformatversion = 0\n\tbare = true\n",
		"objects/info/alternates": "../../objects\n",
		"description":             "git-flume: one push runs here; borrows the repository's objects\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fail(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return fail(err)
		}
	}
	var in bytes.Buffer
	for _, u := range updates {
		if u.Local != "" {
			fmt.Fprintf(&in, "create %s\x00%s\x00", u.Ref, u.Local)
		}
	}
	// Hooks off: the scratch's refs are news to no one.
	if _, err := repo.write(ctx, in.Bytes(), []string{"GIT_DIR=" + dir}, updateRefArgs("", false)...); err != nil {
		return fail(err)
	}
	return dir, done, nil
}

// sweepScratch removes the scratch repositories pushes killed before
// their end left, an hour on, and the one shared scratch repository
// earlier versions kept.
func (repo *Repo) sweepScratch() {
	old, _ := filepath.Glob(filepath.Join(repo.CommonDir, "flume-push-*.git"))
	for _, dir := range old {
		if info, err := os.Lstat(dir); err == nil && time.Since(info.ModTime()) > time.Hour {
			_ = os.RemoveAll(dir)
		}
	}
	_ = os.RemoveAll(filepath.Join(repo.CommonDir, "flume-push.git"))
}
