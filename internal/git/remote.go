package git

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/git-flume/git-flume/internal/git/gitconfig"
)

// FetchRefs fetches refspecs from remote in one atomic transaction: all
// the destination refs move, or none. prune deletes destination refs the
// remote no longer has. No tags, no FETCH_HEAD.
func (repo *Repo) FetchRefs(ctx context.Context, remote string, prune bool, refspecs ...string) error {
	args := []string{"fetch", "--quiet", "--atomic", "--no-tags", "--no-write-fetch-head"}
	if prune {
		args = append(args, "--prune")
	}
	args = append(args, "--end-of-options", remote)
	args = append(args, refspecs...)
	if _, err := repo.write(ctx, nil, nil, args...); err != nil {
		return fmt.Errorf("fetch %s: %w", remote, err)
	}
	return nil
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
	if len(updates) == 0 {
		return nil
	}
	// Every source is an object id: git would look each up as a ref name
	// too (six names each) only to warn when one exists.
	args := []string{"-c", "core.warnAmbiguousRefs=false", "push", "--atomic", "--porcelain", "--no-verify"}
	// git compares each lease given by name with every ref it pushes (six
	// formatted names a pair), most of a first sync of many records
	// (DESIGN.md, "Figures from code comments"). A new record's lease, absent, is what a bare one says where
	// git tracks no record: still one lease a record, as R7 asks.
	bare := repo.recordsUntracked(remote)
	if bare {
		args = append(args, "--force-with-lease")
	}
	for _, u := range updates {
		if !bare || u.Expect != "" {
			args = append(args, "--force-with-lease="+u.Ref+":"+u.Expect)
		}
	}
	args = append(args, "--end-of-options", remote)
	for _, u := range updates {
		args = append(args, u.Local+":"+u.Ref)
	}
	var env []string
	if len(updates) >= pushScratchAt {
		if dir, ok := repo.pushScratch(); ok {
			env = []string{"GIT_DIR=" + dir}
		}
	}
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

// recordsUntracked reports whether git pushing to remote holds no
// remote-tracking ref for any ref under refs/flume/, from the
// configuration read in process (no legacy remotes/ or branches/ file
// defines the remote either). A bare --force-with-lease then leases a ref
// with no lease of its own on being absent (git's apply_cas).
func (repo *Repo) recordsUntracked(remote string) bool {
	config, ok := repo.r.configInProcess(repo)
	if !ok || gitconfig.FetchMaps(config, remote, FlumePrefix) {
		return false
	}
	if strings.Contains(remote, "/") || remote == "." || remote == ".." {
		return true // git reads no legacy file for such a name
	}
	for _, dir := range []string{"remotes", "branches"} {
		if _, err := os.Lstat(filepath.Join(repo.CommonDir, dir, remote)); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}

// pushScratchAt is how many explicit refspecs make a push worth running
// from the scratch repository.
const pushScratchAt = 64

// pushScratchName is the scratch repository inside the common git dir.
const pushScratchName = "flume-push.git"

// pushScratch returns a repository that borrows this one's objects and
// configuration but holds no refs, creating it the first time. git push
// matches every explicit refspec against every local ref (a formatted
// comparison per ref-lookup rule), so pushing a thousand records from a
// clone with thousands of refs costs seconds before anything is sent; run
// from here, the same push (R7) costs what a glob push does. The
// remote, its URL rewriting and the transport settings still come from
// this repository's config, which the scratch config includes, and the push
// still runs in this work tree, so relative remote paths mean what they did.
//
// ok is false where borrowing is not exact and the push runs here as
// usual: a repository whose format the included config would change
// (extensions: another hash, a partial clone), or a shallow one.
func (repo *Repo) pushScratch() (string, bool) {
	if repo.ObjectFormat != "sha1" {
		return "", false
	}
	if _, err := os.Lstat(filepath.Join(repo.CommonDir, "shallow")); err == nil {
		return "", false
	}
	cfg, err := os.ReadFile(filepath.Join(repo.CommonDir, "config"))
	if err != nil || strings.Contains(strings.ToLower(string(cfg)), "extensions") {
		return "", false
	}
	dir := filepath.Join(repo.CommonDir, pushScratchName)
	if _, err := os.Stat(filepath.Join(dir, "objects", "info", "alternates")); err == nil {
		return dir, true
	}
	// Made whole in a temporary folder and renamed into place, so a
	// concurrent sync sees either no scratch repository or a complete one.
	tmp := dir + ".tmp-" + strconv.FormatUint(rand.Uint64(), 36)
	defer os.RemoveAll(tmp)
	files := map[string]string{
		"HEAD": "ref: refs/heads/scratch\n",
		// The repository's config first, then what makes this one bare.
		"config":                  "[include]\n\tpath = ../config\n[core]\n\trepositoryformatversion = 0\n\tbare = true\n",
		"objects/info/alternates": "../../objects\n",
		"description":             "git-flume: pushes run here; holds no refs, borrows the repository's objects\n",
	}
	if os.MkdirAll(filepath.Join(tmp, "refs", "heads"), 0o755) != nil {
		return "", false
	}
	for name, text := range files {
		path := filepath.Join(tmp, filepath.FromSlash(name))
		if os.MkdirAll(filepath.Dir(path), 0o755) != nil || os.WriteFile(path, []byte(text), 0o644) != nil {
			return "", false
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "objects", "info", "alternates")); serr != nil {
			return "", false
		}
	}
	return dir, true
}
