package place

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-multierror"

	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/words"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/runenv"
)

// TidyOptions select what tidy does.
type TidyOptions struct {
	// Place, when set, is the one place tidied (accept, rollback).
	Place  string
	DryRun bool
	Gate   stage.GateOptions
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
func (ps *Places) Tidy(ctx context.Context, opts TidyOptions) ([]TidyResult, error) {
	store := ps.r.Store
	// One tidy at a time per repository, and never beside a launch making
	// a worktree (L2b): two passes judging the same place would race each
	// other's removals and report each other's work as failures. The
	// records are read under the lock.
	unlock, err := ps.wt.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	records, _, err := store.List(ctx, record.PlacePrefix)
	if err != nil {
		return nil, err
	}
	wts, err := ps.wt.List(ctx, records)
	if err != nil {
		return nil, err
	}
	places, derrs := record.DecodeEach(records)
	errs := multierror.Append((*multierror.Error)(nil), derrs...)
	var cache *stage.UnlandedCache
	if ps.r.Git != nil && !opts.DryRun {
		cache = stage.ReadUnlandedCache(ps.r.Git.CommonDir)
		defer cache.Save()
		var tips []string
		for _, p := range places {
			if p != nil && p.Host == ps.r.Env.Host {
				tips = append(tips, p.BranchRef(), "refs/heads/"+p.Target)
			}
		}
		cache.ReadTips(ctx, ps.r.Git, tips)
	}
	var results []TidyResult
	for i, rec := range records {
		if places[i] == nil {
			continue // not a place record: said in errs
		}
		res, err := ps.tidyRecord(ctx, rec, places[i], wts, opts, cache)
		if err != nil {
			errs = multierror.Append(errs, err)
		}
		if res != nil {
			results = append(results, *res)
		}
	}
	if opts.Place == "" && ps.r.Git != nil {
		left, err := ps.landLeftovers(ctx, opts.DryRun)
		results = append(results, left...)
		errs = multierror.Append(errs, err)
	}
	if errs != nil {
		errs.ErrorFormat = listErrors
	}
	return results, errs.ErrorOrNil()
}

// landLeftovers removes the check worktrees a lander killed mid-check
// left (stage.RemoveLandLeftovers), or names them in a dry run.
func (ps *Places) landLeftovers(ctx context.Context, dryRun bool) ([]TidyResult, error) {
	paths, verdict, err := stage.LandLeftovers(ps.r.Git.CommonDir, ps.r.Env.Host), "would-remove", error(nil)
	if !dryRun {
		paths, err = stage.RemoveLandLeftovers(ctx, ps.r.Git)
		verdict = "removed"
	}
	var out []TidyResult
	for _, path := range paths {
		out = append(out, TidyResult{Place: filepath.Base(path), Reason: "the check worktree " + path + " a killed lander left",
			Worktree: verdict, Branch: "none", Tidied: !dryRun})
	}
	return out, err
}

// tidyRecord tidies the place of record rec if opts select it and this host
// owns it (R7): a launch cut short is finished or undone, a made place
// judged and cleared. It returns nil for a place it leaves alone.
func (ps *Places) tidyRecord(ctx context.Context, rec *refs.Record, decoded *record.Place, wts []git.Worktree, opts TidyOptions, cache *stage.UnlandedCache) (*TidyResult, error) {
	env := ps.r.Env
	p := *decoded
	if opts.Place != "" && p.ID != opts.Place || p.Host != env.Host {
		return nil, nil // not asked for, or another host's place: its owner tidies it (R7)
	}
	if err := ps.wt.CheckHome(ctx, &p); err != nil {
		return nil, err
	}
	switch p.Phase {
	case record.PhaseMaking:
		return ps.tidyMaking(ctx, rec, &p, opts.DryRun)
	case record.PhaseMade:
		res, err := ps.tidyPlace(ctx, rec, &p, wts, opts, cache)
		if err != nil {
			err = fmt.Errorf("%s: %w", p.ID, err)
		}
		return res, err
	}
	return nil, nil
}

// tidyMaking settles an interrupted launch of p (ReconcileMaking) and
// says what it removed; a dry run moves nothing and names it.
func (ps *Places) tidyMaking(ctx context.Context, rec *refs.Record, p *record.Place, dryRun bool) (*TidyResult, error) {
	env, repo := ps.r.Env, ps.r.Git
	res := &TidyResult{Place: p.ID, Reason: "launch interrupted", Worktree: "absent", Branch: "absent"}
	if dryRun {
		if p.Launcher != nil && p.Launcher.Alive(env.Host) {
			return nil, nil // its launch still runs
		}
		res.Worktree, res.Branch = "would-settle", "would-settle"
		return res, nil
	}
	_, err := os.Lstat(p.Path)
	was := err == nil
	if head, err := repo.ResolveRef(ctx, p.BranchRef()); err == nil && head == p.Base {
		res.Branch = "deleted"
	}
	cleaned, err := ReconcileMaking(ctx, env, repo, ps.r.Store, rec, p, true)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.ID, err)
	}
	if !cleaned {
		return nil, nil // its launch still runs, kept as made (it held work), or settled by another
	}
	if _, err := os.Lstat(p.Path); was && err != nil {
		res.Worktree = "removed"
	} else if err == nil {
		res.Worktree = "left: " + p.Path + " holds what flume did not make"
	}
	res.Tidied = true
	return res, nil
}

func (ps *Places) tidyPlace(ctx context.Context, rec *refs.Record, p *record.Place, wts []git.Worktree, opts TidyOptions, cache *stage.UnlandedCache) (*TidyResult, error) {
	env, store := ps.r.Env, ps.r.Store
	j, err := ps.judge(ctx, cache, p)
	if err != nil {
		return nil, err
	}
	res := &TidyResult{Place: p.ID, Reason: tidyReason(p, j)}
	if res.Reason == "" {
		return nil, nil
	}
	cs, err := store.ReadClaim(ctx, p.ID, env.Host)
	if err != nil {
		return nil, err
	}
	if err := cs.Gate(p.ID, opts.Gate.Session, opts.Gate.TakeOver); err != nil {
		res.Worktree, res.Branch, res.Kept = "kept", "kept", "claimed by "+cs.Claim.Key
		return res, err
	}
	rec, kept, err := ps.clearPlace(ctx, rec, p, j, opts.DryRun)
	if err != nil {
		return nil, err
	}
	if kept == "" {
		kept, err = ps.tidyWorktree(ctx, p, wts, opts.DryRun, res)
		if err != nil {
			return nil, err
		}
	}
	if kept != "" {
		res.Worktree, res.Branch, res.Kept = "kept", "kept", kept
		return res, ps.keepPlace(ctx, rec, p, kept, cs, opts.DryRun)
	}
	if kept, err = ps.tidyBranch(ctx, p, j, opts.DryRun, res); err != nil {
		return nil, err
	}
	if kept != "" {
		res.Branch, res.Kept = "kept", kept
		err := ps.keepPlace(ctx, rec, p, kept, cs, opts.DryRun)
		if !opts.DryRun {
			// its worktree is gone, so nothing of it runs on its
			// ports; a branch kept holds none.
			err = errors.Join(err, runenv.ReleaseLease(ctx, store, p))
		}
		return res, err
	}
	if opts.DryRun {
		return res, nil
	}
	env.FaultAt("tidy:removed")
	if err := recordTidy(ctx, env, store, rec, p, j, cs, res); err != nil {
		return res, err
	}
	// Its ports go back once the place is recorded tidied; a tidy killed
	// in between leaves a lease of a tidied place, which the next lease
	// takes over (leaseLive).
	return res, runenv.ReleaseLease(ctx, store, p)
}

// tidyReason is why tidy may remove a place (T1): "landed" or "dropped";
// "" when it may not: its work goes on, flume cannot tell whether it
// landed (then it removes nothing), or a rollback under way restores it
// (the rollback tidies it once both work trees are back).
func tidyReason(p *record.Place, j engine.LandingJudgement) string {
	switch {
	case p.Parent != nil && p.Parent.Outcome == record.OutcomeRolledBack && !p.Parent.Restored:
		return ""
	case j.Landed:
		return "landed"
	case p.Dropped != nil:
		return "dropped"
	}
	return ""
}

// clearPlace makes sure nothing runs in or depends on a place tidy is
// about to remove, or says why it stays: a delegation it still has open,
// its agent (ended and verified gone, X5, its end recorded at
// once, since the place's watcher may record it too), and what the place
// started. A landing the engine has not seen yet is recorded
// first. A dry run only reads. It returns the record as it then stands.
func (ps *Places) clearPlace(ctx context.Context, rec *refs.Record, p *record.Place, j engine.LandingJudgement, dryRun bool) (*refs.Record, string, error) {
	env, store := ps.r.Env, ps.r.Store
	if open, err := OpenChild(ctx, store, p); err != nil {
		return rec, "", err
	} else if open != "" {
		return rec, "its delegated place " + open + " is still open", nil
	}
	if dryRun {
		return rec, "", nil
	}
	var err error
	if st := &p.Stages[p.Current]; j.Landed && engine.Watched(st) {
		if rec, err = ps.recordLanding(ctx, rec, p); err != nil {
			return rec, "", err
		}
	}
	if a := p.Stages[p.Current].Agent; a != nil && !a.Ended {
		if kept := endPlaceAgent(ctx, env, p); kept != "" {
			return rec, kept, nil
		}
		if rec, err = markAgentEnded(ctx, env, store, p.ID); err != nil {
			return rec, "", err
		}
		decoded, err := record.DecodePlace(rec)
		if err != nil {
			return rec, "", err
		}
		*p = *decoded
	}
	return rec, runenv.StopPlaceProcesses(p), nil
}

// recordLanding lets the engine record a landing it has not seen yet,
// before tidy judges what is left: a landing is a stage's deliverable too
// (a submit stage's, K6), and the engine ends that stage's agent, verified,
// as for any delivery, with no report grace (tidy would end it anyway). It
// starts no agent. It returns the record as it then stands, p decoded
// from it.
func (ps *Places) recordLanding(ctx context.Context, rec *refs.Record, p *record.Place) (*refs.Record, error) {
	look := ps.r.With(func(e *stage.Env) { e.Engine.NoStart, e.Engine.NoGrace = true, true })
	if _, err := engine.Advance(ctx, look, p.ID); err != nil {
		return rec, nil // tidy judges the place as it was read
	}
	rec, err := ps.r.Store.Read(ctx, rec.Ref)
	if err != nil {
		return nil, err
	}
	decoded, err := record.DecodePlace(rec)
	if err != nil {
		return nil, err
	}
	*p = *decoded
	return rec, nil
}

// tidyWorktree removes the place's worktree (T2) only if git lists it as
// a linked worktree directly under places/, on the place's branch,
// unlocked and clean, after the repository's remove steps (T3). It sets
// res.Worktree, or returns why the worktree is kept.
func (ps *Places) tidyWorktree(ctx context.Context, p *record.Place, wts []git.Worktree, dryRun bool, res *TidyResult) (string, error) {
	var wt *git.Worktree
	for i := range wts {
		if wts[i].Path == p.Path {
			wt = &wts[i]
		}
	}
	switch {
	case wt == nil:
		res.Worktree = "absent"
		return "", nil
	case wt.Main || filepath.Dir(wt.Path) != filepath.Join(p.Repo, record.PlacesDir):
		return "worktree " + wt.Path + " is not a place flume made", nil
	case wt.Branch != p.BranchRef():
		return fmt.Sprintf("worktree is on %s, not on %s", orDetached(wt.Branch), p.BranchRef()), nil
	case wt.Locked:
		kept := "worktree is locked"
		if wt.LockReason != "" {
			kept += ": " + wt.LockReason
		}
		return kept, nil
	}
	if _, err := os.Stat(wt.Path); errors.Is(err, os.ErrNotExist) {
		// Its folder was deleted by hand: nothing is left in it to lose
		// or to run a remove step in; git's own record of it goes.
		if dryRun {
			res.Worktree = "would-remove"
			return "", nil
		}
		if err := ps.wt.Remove(ctx, p.Path); err != nil {
			return "git worktree remove failed: " + words.FirstLine(err.Error()), nil
		}
		res.Worktree = "removed"
		return "", nil
	}
	if changed := ps.wt.Changed(wt.Path); changed != "" {
		// A12: git worktree remove reads them; so would any git run there.
		return "the worktree's git files were changed: " + changed, nil
	}
	dirty, err := ps.wt.Dirty(ctx, wt.Path)
	if err != nil {
		return "", err
	}
	if len(dirty) > 0 {
		return "worktree has uncommitted or untracked files: " + words.ListSome(dirty, 5), nil
	}
	if dryRun {
		res.Worktree = "would-remove"
		return "", nil
	}
	kept, err := ps.wt.RemoveWithSteps(ctx, p)
	if err == nil && kept == "" {
		res.Worktree = "removed"
	}
	return kept, err
}

// tidyBranch deletes the place's branch (T4) only if its work landed (or
// it holds none), with a compare-and-swap on the head that was judged. It
// sets res.Branch, or returns why the branch is kept.
func (ps *Places) tidyBranch(ctx context.Context, p *record.Place, j engine.LandingJudgement, dryRun bool, res *TidyResult) (string, error) {
	deleteBranch := j.Head != "" && (j.Landed || j.Head == p.Base)
	switch {
	case j.Head == "":
		res.Branch = "absent"
	case !deleteBranch && j.Unknown:
		return fmt.Sprintf("branch %s holds commits and its target %s is missing", p.Branch, p.Target), nil
	case !deleteBranch:
		return fmt.Sprintf("branch %s holds %d unlanded commit%s", p.Branch, j.Unlanded, words.Plural(j.Unlanded)), nil
	case dryRun:
		res.Branch = "would-delete"
	default:
		ps.r.Env.FaultAt("tidy:branch")
		err := ps.wt.DeleteBranch(ctx, p.BranchRef(), j.Head)
		var conflict *git.ConflictError
		if errors.As(err, &conflict) {
			return fmt.Sprintf("branch %s moved while it was judged", p.Branch), nil
		}
		if err != nil {
			return "", err
		}
		res.Branch = "deleted"
	}
	return "", nil
}

// recordTidy records the place tidied and drops its claim in one
// transaction; a deleted branch's head is held by the record (X2).
func recordTidy(ctx context.Context, env *stage.Env, store *refs.Store, rec *refs.Record, p *record.Place, j engine.LandingJudgement, cs refs.ClaimState, res *TidyResult) error {
	res.Tidied = true
	first := true
	// The worktree and branch are gone by now: what is left is to record
	// it. A record another process moved meanwhile (a watcher, a hook's
	// advance, the radar taking a fingerprint) is read again and the tidy
	// recorded over it, not reported as this tidy's failure.
	return refs.DefaultRetry.Retry(ctx, func(ctx context.Context) error {
		if !first {
			var err error
			if rec, p, err = record.ReadPlace(ctx, store, p.ID); err != nil {
				return err
			}
			if p.Phase == record.PhaseTidied {
				return nil // recorded by another tidy
			}
			now, err := store.ReadClaim(ctx, p.ID, env.Host)
			if err != nil {
				return err
			}
			if claimCommit(now) != claimCommit(cs) {
				// A claim taken or let go meanwhile was not what this tidy
				// was gated on: nothing of it is overwritten.
				return fmt.Errorf("%s: its claim changed while it was tidied; run git flume tidy again", p.ID)
			}
			cs = now
		}
		first = false
		p.Phase, p.Kept = record.PhaseTidied, ""
		p.Tidied = &record.TidyRecord{At: env.NowUTC(), Reason: res.Reason, BranchHead: j.Head}
		// A stage still under way ends with its place: status never shows
		// a tidied place starting, its clock ticking.
		engine.EndStage(&p.Stages[p.Current], agentrun.StateCut, "the place was tidied ("+res.Reason+") while the stage was under way", env.ClockNow())
		changes := []refs.Change{record.PlaceChange(rec, p, fmt.Sprintf("tidy %s: %s", p.ID, res.Reason))}
		if res.Branch == "deleted" {
			// X2: the deleted branch's commits stay reachable from the
			// record, its base too: a base nothing else holds (a record's
			// base is input) is not lost with the branch.
			changes[0].Hold = []string{j.Head}
			changes[0].Message += fmt.Sprintf("; branch %s was at %s, held as second parent", p.Branch, j.Head)
		}
		extra := []git.RefUpdate{}
		if cs.Record != nil {
			changes = append(changes, cs.Record.Deletion(""))
		} else {
			extra = append(extra, cs.Verify(p.ID))
		}
		_, err := store.Write(ctx, changes, extra...)
		return err
	})
}

// claimCommit names the claim record cs read, "" for none.
func claimCommit(cs refs.ClaimState) string {
	if cs.Record == nil {
		return ""
	}
	return cs.Record.Commit
}

// RemoveWithSteps runs the repository's remove steps (T3), then `git
// worktree remove` without force. It returns why it kept the worktree, or
// "". A failed removal is never followed by a recursive delete.
func (w repoWorktrees) RemoveWithSteps(ctx context.Context, p *record.Place) (string, error) {
	env, repo := w.env, w.repo
	// The target's remove steps as it stands now; a delegated place's
	// target is its commissioner's branch, an agent's, so its steps are
	// those it was launched with (A13).
	rev := "refs/heads/" + p.Target
	if _, err := repo.ResolveCommit(ctx, rev); err != nil || p.Parent != nil {
		rev = p.ConfigRev()
	}
	cfg, err := stage.LoadConfig(ctx, env.Runner, repo, rev, "")
	if err != nil {
		return "", err
	}
	if len(cfg.Remove)+len(cfg.RemoveOutside) > 0 {
		if kept, err := removeSteps(ctx, env, repo, p, cfg); kept != "" || err != nil {
			return kept, err
		}
	}
	if err := removeTree(ctx, repo, p.Path, p.ID); err != nil {
		return "git worktree remove failed: " + words.FirstLine(err.Error()), nil
	}
	return "", nil
}

// removeSteps runs the repository's remove steps for place p (T3): those
// declared outside as the person, in an empty folder of flume's, never the
// place; then those in the place, behind an agent's boundary, since its
// tree is its agent's (A13). It returns why the worktree is kept, or "".
func removeSteps(ctx context.Context, env *stage.Env, repo *git.Repo, p *record.Place, cfg *stage.Config) (string, error) {
	log, err := stage.OpenLog(repo.CommonDir, p.ID)
	if err != nil {
		return "", err
	}
	defer log.Close()
	stepEnv := stage.StepEnv(env.CallerEnv, p)
	var failure *stage.StepFailure
	if len(cfg.RemoveOutside) > 0 {
		empty, err := os.MkdirTemp("", "flume-remove-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(empty)
		if err := stage.RunSteps(ctx, nil, cfg.RemoveOutside, empty, stepEnv, "remove outside", env.Out, log); errors.As(err, &failure) {
			return fmt.Sprintf("remove outside step %q exited %d", failure.Step, failure.Exit), nil
		}
	}
	if len(cfg.Remove) == 0 {
		return "", nil
	}
	_, wrap, err := stage.StepBoundary(env, repo, p, "remove", cfg.RemoveCaches, stepEnv)
	if err != nil {
		return "remove steps not run: " + words.FirstLine(err.Error()), nil
	}
	if err := stage.RunSteps(ctx, wrap, cfg.Remove, p.Path, stepEnv, "remove", env.Out, log); errors.As(err, &failure) {
		return fmt.Sprintf("remove step %q exited %d", failure.Step, failure.Exit), nil
	}
	return "", nil
}

// keepPlace records why tidying kept a place, so status shows it (T2). The
// note is tidy's judgment of the worktree and branch, not of the record:
// a record that moved meanwhile (a watcher giving up its lease) is read
// again and the note written there, a few times at most: on a runner's
// host no later tidy comes to write it.
func (ps *Places) keepPlace(ctx context.Context, rec *refs.Record, p *record.Place, kept string, cs refs.ClaimState, dryRun bool) error {
	store := ps.r.Store
	if dryRun || p.Kept == kept {
		return nil
	}
	cur, note := rec, *p
	err := keepRetry.Retry(ctx, func(ctx context.Context) error {
		if cur == nil {
			r, q, err := record.ReadPlace(ctx, store, p.ID)
			if err != nil {
				return err
			}
			cur, note = r, *q
		}
		if note.Phase == record.PhaseTidied || note.Kept == kept {
			return nil
		}
		note.Kept = kept
		ps.r.Env.FaultAt("tidy:keep")
		_, err := record.SavePlace(ctx, store, cur, &note, "tidy "+p.ID+": kept: "+kept, cs.Verify(p.ID))
		cur = nil
		return err
	})
	if errors.As(err, new(*refs.ConflictError)) {
		return nil // it went on moving (its claim, say); the next tidy judges again
	}
	return err
}

var keepRetry = refs.RetryPolicy{Attempts: 10, Base: 2 * time.Millisecond, Max: 100 * time.Millisecond}

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

func orDetached(ref string) string {
	if ref == "" {
		return "a detached HEAD"
	}
	return ref
}
