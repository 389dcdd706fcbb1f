package stage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/go-multierror"

	"github.com/git-flume/git-flume/agent"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
)

// GateOptions identify the caller of a gate (R8).
type GateOptions struct {
	Session  refs.Session
	TakeOver bool
}

// Drop marks a launch dropped (T1): its work is over without landing. The
// place's worktree and branch go at the next tidy, by the usual rules.
func Drop(ctx context.Context, env *Env, repoDir, id string, gate GateOptions) (*Place, error) {
	_, store, err := env.open(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	var p Place
	err = refs.DefaultRetry.Retry(ctx, func(ctx context.Context) error {
		rec, cur, err := readPlace(ctx, store, id)
		if err != nil {
			return err
		}
		p = *cur
		if err := checkHome(ctx, env, store.Repo(), &p); err != nil {
			return err
		}
		if p.Phase == PhaseTidied {
			return fmt.Errorf("place %s was already tidied", id)
		}
		if p.Dropped != nil {
			return nil
		}
		cs, err := store.ReadClaim(ctx, id, env.Host)
		if err != nil {
			return err
		}
		if err := cs.Gate(id, gate.Session, gate.TakeOver); err != nil {
			return err
		}
		at := env.now()
		p.Dropped = &at
		_, err = savePlace(ctx, store, rec, &p, "drop "+id, cs.Verify(id))
		return err
	})
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// TidyOptions select what tidy does.
type TidyOptions struct {
	Repo   string
	DryRun bool
	Gate   GateOptions
}

// TidyResult is what tidying did, or would do, to one place whose work is
// over.
type TidyResult struct {
	Place    string `json:"place"`
	Reason   string `json:"reason"`   // "landed" or "dropped"
	Worktree string `json:"worktree"` // removed, kept, absent, would-remove
	Branch   string `json:"branch"`   // deleted, kept, absent, would-delete
	Kept     string `json:"kept,omitempty"`
	Tidied   bool   `json:"tidied"`
}

// Tidy removes the worktrees and branches of places whose work is over, by
// T1–T4, and never anything else. What it keeps it names, with the reason,
// in the result and in the place's record. Errors for single places (a
// claimed place, a failing git) are collected; the others are still tidied.
func Tidy(ctx context.Context, env *Env, opts TidyOptions) ([]TidyResult, error) {
	repo, store, err := env.open(ctx, opts.Repo)
	if err != nil {
		return nil, err
	}
	// One tidy at a time per repository, and never beside a launch making
	// a worktree (L2b): two passes judging the same place would race each
	// other's removals and report each other's work as failures. The
	// records are read under the lock.
	lock, err := lockRepo(ctx, repo.CommonDir)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	records, _, err := store.List(ctx, PlacePrefix)
	if err != nil {
		return nil, err
	}
	wts, err := listWorktrees(ctx, env, repo, records)
	if err != nil {
		return nil, err
	}
	var results []TidyResult
	var errs *multierror.Error
	for _, rec := range records {
		decoded, err := decodePlace(rec)
		if err != nil {
			errs = multierror.Append(errs, err)
			continue
		}
		p := *decoded
		if p.Host != env.Host {
			continue // another host's place: its owner tidies it (R7)
		}
		if err := checkHome(ctx, env, repo, &p); err != nil {
			errs = multierror.Append(errs, err)
			continue
		}
		if p.Phase == PhaseMaking {
			if _, err := reconcileMaking(ctx, env, repo, store, rec, &p, true); err != nil {
				errs = multierror.Append(errs, fmt.Errorf("%s: %w", p.ID, err))
			}
			continue
		}
		if p.Phase != PhaseMade {
			continue
		}
		res, err := tidyPlace(ctx, env, repo, store, rec, &p, wts, opts)
		if err != nil {
			errs = multierror.Append(errs, fmt.Errorf("%s: %w", p.ID, err))
		}
		if res != nil {
			results = append(results, *res)
		}
	}
	if errs != nil {
		errs.ErrorFormat = listErrors
	}
	return results, errs.ErrorOrNil()
}

// listErrors formats several independent failures one per line.
func listErrors(es []error) string {
	if len(es) == 1 {
		return es[0].Error()
	}
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = "  " + e.Error()
	}
	return fmt.Sprintf("%d places could not be tidied:\n%s", len(es), strings.Join(lines, "\n"))
}

// judgement is how a place's branch stands against its target (T4).
type judgement struct {
	head     string // the branch head judged; "" when the branch is gone
	landed   bool
	unlanded int  // commits whose patch the target lacks
	unknown  bool // the target is missing: flume cannot tell
}

// judge reads the branch once and decides, at that head, whether its work
// has landed on the target: merged (head is an ancestor), rebased or
// cherry-picked (git cherry finds every patch upstream), or squash-merged
// (the whole branch diff's patch id equals one target commit's).
func judge(ctx context.Context, repo *git.Repo, p *Place) (judgement, error) {
	var j judgement
	head, err := repo.ResolveRef(ctx, p.branchRef())
	if errors.Is(err, git.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return j, err
	}
	j.head = head
	if head == p.Base {
		return j, nil // no work was committed: nothing to land
	}
	target, err := repo.ResolveCommit(ctx, "refs/heads/"+p.Target)
	if errors.Is(err, git.ErrNotExist) {
		j.unknown = true
		return j, nil
	}
	if err != nil {
		return j, err
	}
	if j.landed, err = repo.IsAncestor(ctx, head, target); err != nil || j.landed {
		return j, err
	}
	cherry, err := repo.Cherry(ctx, target, head)
	if err != nil {
		return j, err
	}
	for _, c := range cherry {
		if !c.Upstream {
			j.unlanded++
		}
	}
	if j.unlanded == 0 {
		j.landed = true
		return j, nil
	}
	mb, err := repo.MergeBase(ctx, target, head)
	if err != nil {
		return j, err
	}
	whole, err := repo.DiffPatchID(ctx, mb, head)
	if err != nil || whole == "" {
		return j, err
	}
	onTarget, err := repo.CommitPatchIDs(ctx, mb, target)
	if err != nil {
		return j, err
	}
	if slices.Contains(onTarget, whole) {
		j.landed, j.unlanded = true, 0
	}
	return j, nil
}

func tidyPlace(ctx context.Context, env *Env, repo *git.Repo, store *refs.Store, rec *refs.Record, p *Place, wts []git.Worktree, opts TidyOptions) (*TidyResult, error) {
	j, err := judge(ctx, repo, p)
	if err != nil {
		return nil, err
	}
	res := &TidyResult{Place: p.ID}
	switch {
	case j.landed:
		res.Reason = "landed"
	case p.Dropped != nil:
		res.Reason = "dropped"
	case j.unknown:
		// T1: when flume cannot tell, it removes nothing.
		return nil, nil
	default:
		return nil, nil // work goes on
	}
	cs, err := store.ReadClaim(ctx, p.ID, env.Host)
	if err != nil {
		return nil, err
	}
	if err := cs.Gate(p.ID, opts.Gate.Session, opts.Gate.TakeOver); err != nil {
		res.Worktree, res.Branch, res.Kept = "kept", "kept", "claimed by "+cs.Claim.Key
		return res, err
	}
	if a := p.Stages[p.Current].Agent; !opts.DryRun && a != nil && !a.Ended {
		// X5: a place whose agent may still run is never removed under
		// it; the agent is ended and verified gone, or the place stays.
		if kept := endPlaceAgent(ctx, env, p); kept != "" {
			res.Worktree, res.Branch, res.Kept = "kept", "kept", kept
			return res, keepPlace(ctx, store, rec, p, kept, cs, false)
		}
		// Its end is recorded at once, on its own: the place's watcher
		// may record it too as it sees the pane go, and the tidy below
		// then works from the record as it stands.
		if rec, err = markAgentEnded(ctx, store, p.ID); err != nil {
			return nil, err
		}
		decoded, err := decodePlace(rec)
		if err != nil {
			return nil, err
		}
		*p = *decoded
	}

	// T2: the worktree goes only if git lists it as a linked worktree
	// directly under places/, on the place's branch, unlocked and clean.
	var wt *git.Worktree
	for i := range wts {
		if wts[i].Path == p.Path {
			wt = &wts[i]
		}
	}
	kept := ""
	switch {
	case wt == nil:
		res.Worktree = "absent"
	case wt.Main || filepath.Dir(wt.Path) != filepath.Join(p.Repo, PlacesDir):
		kept = "worktree " + wt.Path + " is not a place flume made"
	case wt.Branch != p.branchRef():
		kept = fmt.Sprintf("worktree is on %s, not on %s", orDetached(wt.Branch), p.branchRef())
	case wt.Locked:
		kept = "worktree is locked"
		if wt.LockReason != "" {
			kept += ": " + wt.LockReason
		}
	default:
		dirty, err := repo.Dirty(ctx, wt.Path)
		if err != nil {
			return nil, err
		}
		if len(dirty) > 0 {
			kept = "worktree has uncommitted or untracked files: " + listSome(dirty, 5)
		}
	}
	if kept == "" && wt != nil {
		if opts.DryRun {
			res.Worktree = "would-remove"
		} else if kept, err = removeWorktree(ctx, env, repo, p); err != nil {
			return nil, err
		} else if kept == "" {
			res.Worktree = "removed"
		}
	}
	if kept != "" {
		res.Worktree, res.Branch, res.Kept = "kept", "kept", kept
		return res, keepPlace(ctx, store, rec, p, kept, cs, opts.DryRun)
	}

	// T4: the branch goes only if its work landed (or it holds none), with
	// a compare-and-swap on the head that was judged.
	deleteBranch := j.head != "" && (j.landed || j.head == p.Base)
	switch {
	case j.head == "":
		res.Branch = "absent"
	case !deleteBranch && j.unknown:
		kept = fmt.Sprintf("branch %s holds commits and its target %s is missing", p.Branch, p.Target)
	case !deleteBranch:
		kept = fmt.Sprintf("branch %s holds %d unlanded commit%s", p.Branch, j.unlanded, plural(j.unlanded))
	case opts.DryRun:
		res.Branch = "would-delete"
	default:
		err := repo.UpdateRefs(ctx, []git.RefUpdate{{Op: git.Delete, Name: p.branchRef(), Old: j.head}})
		var conflict *git.ConflictError
		if errors.As(err, &conflict) {
			kept = fmt.Sprintf("branch %s moved while it was judged", p.Branch)
		} else if err != nil {
			return nil, err
		} else {
			res.Branch = "deleted"
		}
	}
	if kept != "" {
		res.Branch, res.Kept = "kept", kept
		return res, keepPlace(ctx, store, rec, p, kept, cs, opts.DryRun)
	}
	if opts.DryRun {
		return res, nil
	}
	res.Tidied = true
	p.Phase, p.Kept = PhaseTidied, ""
	p.Tidied = &TidyRecord{At: env.now(), Reason: res.Reason, BranchHead: j.head}
	changes := []refs.Change{{Ref: rec.Ref, Old: rec, State: p, Message: fmt.Sprintf("tidy %s: %s", p.ID, res.Reason)}}
	if res.Branch == "deleted" {
		// X2: the deleted branch's commits stay reachable from the record,
		// its base too: a base nothing else holds (a record's base is
		// input) is not lost with the branch.
		changes[0].Hold = []string{j.head}
		changes[0].Message += fmt.Sprintf("; branch %s was at %s, held as second parent", p.Branch, j.head)
	}
	extra := []git.RefUpdate{}
	if cs.Record != nil {
		changes = append(changes, refs.Change{Ref: cs.Record.Ref, Old: cs.Record, Delete: true})
	} else {
		extra = append(extra, cs.Verify(p.ID))
	}
	_, err = store.Write(ctx, changes, extra...)
	return res, err
}

// endPlaceAgent ends the current stage's agent of a place whose work is
// over and verifies it gone. It returns why the place must stay instead:
// the agent could not be ended, its pane is still up, or it runs in the
// operator's own terminal, which flume does not end.
func endPlaceAgent(ctx context.Context, env *Env, p *Place) string {
	a := p.Stages[p.Current].Agent
	if a == nil || a.Ended {
		return ""
	}
	if a.Pane == "print" {
		if left := agent.SessionProcesses(a.Session); len(left) > 0 {
			return fmt.Sprintf("its agent, started by the operator from a printed command, still runs (pids %v); end it, then tidy again", left)
		}
		a.Ended = true
		return ""
	}
	if err := endAgent(ctx, env, a); err != nil {
		a.Ended = false
		return "its agent could not be ended: " + firstLine(err.Error())
	}
	if env.Engine.up(ctx, a) {
		a.Ended = false
		return fmt.Sprintf("its agent's pane %s is still up after it was ended", a.Pane)
	}
	return ""
}

// markAgentEnded records that the current stage's agent ended (tidy ended
// it and verified it gone), re-reading on a lost race.
func markAgentEnded(ctx context.Context, store *refs.Store, id string) (*refs.Record, error) {
	return store.Edit(ctx, PlaceRef(id), func(cur *refs.Record) (refs.Change, error) {
		if cur == nil {
			return refs.Change{}, &NotFoundError{Place: id}
		}
		p, err := decodePlace(cur)
		if err != nil {
			return refs.Change{}, err
		}
		a := p.Stages[p.Current].Agent
		if a == nil || a.Ended {
			return refs.Change{}, refs.ErrNoChange
		}
		a.Ended = true
		return refs.Change{State: p, Message: fmt.Sprintf("tidy %s: its agent ended and verified gone", id)}, nil
	})
}

// removeWorktree runs the repository's remove steps (T3), then
// `git worktree remove` without force. It returns why it kept the worktree,
// or "". A failed removal is never followed by a recursive delete.
func removeWorktree(ctx context.Context, env *Env, repo *git.Repo, p *Place) (string, error) {
	rev := "refs/heads/" + p.Target
	if _, err := repo.ResolveCommit(ctx, rev); err != nil {
		rev = p.Base
	}
	cfg, err := LoadConfig(ctx, env.Runner, repo, rev, "")
	if err != nil {
		return "", err
	}
	if len(cfg.Remove) > 0 {
		log, err := openLog(repo.CommonDir, p.ID)
		if err != nil {
			return "", err
		}
		defer log.Close()
		var failure *StepFailure
		if err := runSteps(cfg.Remove, p.Path, StepEnv(env.CallerEnv, p), "remove", env.Out, log); errors.As(err, &failure) {
			return fmt.Sprintf("remove step %q exited %d", failure.Step, failure.Exit), nil
		}
	}
	if err := repo.RemoveWorktree(ctx, p.Path, false); err != nil {
		return "git worktree remove failed: " + firstLine(err.Error()), nil
	}
	return "", nil
}

// keepPlace records why tidying kept a place, so status shows it.
func keepPlace(ctx context.Context, store *refs.Store, rec *refs.Record, p *Place, kept string, cs refs.ClaimState, dryRun bool) error {
	if dryRun || p.Kept == kept {
		return nil
	}
	p.Kept = kept
	_, err := savePlace(ctx, store, rec, p, "tidy "+p.ID+": kept: "+kept, cs.Verify(p.ID))
	var conflict *refs.ConflictError
	if errors.As(err, &conflict) {
		return nil // moved meanwhile; the next tidy judges again
	}
	return err
}

func orDetached(ref string) string {
	if ref == "" {
		return "a detached HEAD"
	}
	return ref
}

func listSome(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return fmt.Sprintf("%s (+%d more)", strings.Join(xs[:n], ", "), len(xs)-n)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// WriteTidy prints what tidy did for people.
func WriteTidy(w io.Writer, results []TidyResult, dryRun bool) {
	if len(results) == 0 {
		fmt.Fprintln(w, "nothing to tidy")
		return
	}
	for _, r := range results {
		verdict := "tidied"
		switch {
		case r.Kept != "":
			verdict = "kept"
		case dryRun:
			verdict = "would tidy"
		}
		fmt.Fprintf(w, "%s %s (%s): worktree %s, branch %s", verdict, r.Place, r.Reason, r.Worktree, r.Branch)
		if r.Kept != "" {
			fmt.Fprintf(w, ": %s", r.Kept)
		}
		fmt.Fprintln(w)
	}
}
