package git

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	args := []string{"push", "--atomic", "--porcelain", "--no-verify"}
	for _, u := range updates {
		args = append(args, "--force-with-lease="+u.Ref+":"+u.Expect)
	}
	args = append(args, "--end-of-options", remote)
	for _, u := range updates {
		args = append(args, u.Local+":"+u.Ref)
	}
	out, err := repo.write(ctx, nil, nil, args...)
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
