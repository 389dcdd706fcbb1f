package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// FetchRefs fetches refspecs (on its standard input, however many) from
// remote atomically: all the destination refs move, or none; prune deletes
// those the remote no longer has; no tags, no FETCH_HEAD. An object id the
// remote advertised fetches it and its history, moving no ref (nothing
// is transferred where they are here and complete). Such a fetch is not
// --atomic: git would open a transaction for no ref, and hand the
// reference-transaction hook its empty phases.
func (repo *Repo) FetchRefs(ctx context.Context, remote string, prune bool, refspecs ...string) error {
	args := []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--stdin"}
	if prune || slices.ContainsFunc(refspecs, func(r string) bool { return strings.Contains(r, ":") }) {
		args = append(args, "--atomic")
	}
	if prune {
		args = append(args, "--prune")
	}
	in := []byte(strings.Join(refspecs, "\n") + "\n")
	if _, err := repo.write(ctx, in, nil, append(args, "--end-of-options", remote)...); err != nil {
		return fmt.Errorf("fetch %s: %w", remote, err)
	}
	return nil
}

// ListRemote lists the refs remote holds under prefix, by name (one `git
// ls-remote`, nothing written here), leaving out, as untrusted input,
// what is not a valid ref name and object id.
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
func (repo *Repo) PushLeased(ctx context.Context, remote string, updates []PushUpdate) error {
	return repo.PushLeasedAmong(ctx, remote, 0, updates)
}

// PushLeasedAmong is PushLeased to a remote holding listed refs. git
// compares each named refspec with every remote ref (~0.4 µs a pair): many
// updates go from a scratch repository (pushScratch), named where pairs
// are few, else staged there as refs and pushed by one glob.
func (repo *Repo) PushLeasedAmong(ctx context.Context, remote string, listed int, updates []PushUpdate) error {
	if len(updates) == 0 {
		return nil
	}
	// Every source is an object id: git would look each up as a ref name
	// too (six names each) only to warn when one exists.
	args := []string{"-c", "core.warnAmbiguousRefs=false", "push", "--atomic", "--porcelain", "--no-verify"}
	var env, refspecs []string
	staged := false
	if k := len(updates); k >= pushScratchAt {
		staged = k*(listed+k/2) > pushStageAt
		dir, done, err := repo.pushScratch(ctx, updates, staged)
		if err != nil {
			return fmt.Errorf("push to %s: %w", remote, err)
		}
		if staged = staged && dir != ""; dir != "" {
			defer done()
			env = []string{"GIT_DIR=" + dir}
			// No remote-tracking ref there: a bare lease is "absent" for
			// each ref not leased by name. Its refs are news to no hook.
			args = append([]string{"-c", "core.hooksPath=/dev/null"}, args...)
			args = append(args, "--force-with-lease")
		}
		if staged {
			refspecs = append(refspecs, "refs/*:refs/*")
		}
	}
	for _, u := range updates {
		if env == nil || u.Expect != "" {
			args = append(args, "--force-with-lease="+u.Ref+":"+u.Expect)
		}
		if !staged || u.Local == "" {
			refspecs = append(refspecs, u.Local+":"+u.Ref)
		}
	}
	args = append(append(args, "--end-of-options", remote), refspecs...)
	out, err := repo.write(ctx, nil, env, args...)
	return pushRefused(remote, out, err)
}

// pushRefused is a push's error: a *PushRejectedError naming each ref git
// refused and why, from its porcelain output, where it names any.
func pushRefused(remote string, out []byte, err error) error {
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
// scratch repository; pushStageAt how many pairs of a named refspec and a
// remote ref make staging them as refs cheaper.
const pushScratchAt, pushStageAt = 8, 2_000_000

// pushScratch makes a repository inside the common git dir that borrows
// this one's objects and configuration (included, so the remote, its URL
// rewriting and transport settings are this repository's, and the push
// still runs in this work tree) and holds no ref but, with stage, the refs
// updates push. done removes it (what a killed push left, a later one
// removes an hour on). Where borrowing is not exact (extensions: another
// hash, a partial clone; a shallow repository) dir is "".
func (repo *Repo) pushScratch(ctx context.Context, updates []PushUpdate, stage bool) (dir string, done func(), err error) {
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
	}
	for name, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := errors.Join(os.MkdirAll(filepath.Dir(path), 0o755), os.WriteFile(path, []byte(text), 0o644)); err != nil {
			return fail(err)
		}
	}
	if !stage {
		return dir, done, nil
	}
	var in bytes.Buffer
	for _, u := range updates {
		if u.Local != "" {
			fmt.Fprintf(&in, "create %s\x00%s\x00", u.Ref, u.Local)
		}
	}
	if _, err := repo.write(ctx, in.Bytes(), []string{"GIT_DIR=" + dir}, updateRefArgs("", false)...); err != nil {
		return fail(err)
	}
	return dir, done, nil
}

// sweepScratch removes what killed pushes left, an hour on, and the
// shared scratch repository of earlier versions.
func (repo *Repo) sweepScratch() {
	old, _ := filepath.Glob(filepath.Join(repo.CommonDir, "flume-push-*.git"))
	for _, dir := range old {
		if info, err := os.Lstat(dir); err == nil && time.Since(info.ModTime()) > time.Hour {
			_ = os.RemoveAll(dir)
		}
	}
	_ = os.RemoveAll(filepath.Join(repo.CommonDir, "flume-push.git"))
}
