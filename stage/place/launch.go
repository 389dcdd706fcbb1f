package place

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/go-multierror"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/runenv"
)

// LaunchOptions are the inputs of `git flume launch` (L1).
type LaunchOptions struct {
	Kind   string
	Name   string
	Brief  string
	From   string // default: the target's tip
	Target string // default: the branch the main checkout is on
	Agent  string
	// Runner is the runner a launch --on came through, recorded.
	Runner string
	// Adopts is the lost place this one carries on (adopt, M5), recorded.
	Adopts *record.Adoption
}

// ExistsError refuses a launch whose place, path or branch already exists:
// flume never adopts what it did not make (L1).
type ExistsError struct {
	What  string // "place", "path", "branch"
	Value string
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("%s %s already exists; flume never adopts a worktree, branch or place it did not make", e.What, e.Value)
}

// makeLaunch makes a place and readies it (L1, L2). Everything is checked
// before anything is created; a makeLaunch killed part way leaves a record in
// phase "making" that the next command cleans up. It starts no agent
// (Start does); with starting, what the first stage's agent needs is
// checked too, before anything is made (preflight).
func makeLaunch(ctx context.Context, r *stage.Repository, opts LaunchOptions, starting bool) (*record.Place, error) {
	if err := checkLaunch(opts); err != nil {
		return nil, err
	}
	env, repo, store := r.Env, r.Git, r.Store
	if repo.Bare {
		return nil, &stage.NotARepoError{Dir: r.Dir, Reason: "a bare repository has no work tree to make places from"}
	}
	// The record's two steps, making and made, go through one git process,
	// started now so that its start-up overlaps the checks below.
	steps, session := openRecordSteps(repo, store, "launch "+opts.Kind+"--"+opts.Name)
	// Every update through the session returned its own error; closing
	// it after them ends a git process with nothing left to say.
	defer func() { _ = session.Close() }()
	c, err := checkDelegation(ctx, env, repo, store, opts.Kind)
	if err != nil {
		return nil, err
	}
	o, err := placeOrigin(ctx, env, repo, c, opts)
	if err != nil {
		return nil, err
	}
	cfg, err := r.Config(ctx, o.config)
	if err != nil {
		return nil, err
	}
	kind, err := stage.ResolveKind(cfg, opts.Kind)
	if err != nil {
		return nil, err
	}
	for _, st := range kind.Stages {
		if note := cfg.BudgetNote(st.Name); note != "" {
			fmt.Fprintln(env.Out, "note: "+note)
		}
	}
	if starting {
		if err := preflight(ctx, env, cfg, opts); err != nil {
			return nil, err
		}
	}
	if o.parent != nil {
		if err := keepCommissioner(ctx, repo, c, o.parent); err != nil {
			return nil, err
		}
	}
	p := newPlace(env, opts, kind, o.main, o.target, o.base)
	p.Parent, p.ConfigAt = o.parent, o.config
	if cfg.Run.Declared() {
		// until its setup is recorded, the place says it lacks it.
		p.Run = &record.RunSetup{Unfinished: true}
	}
	rec, err := makePlace(ctx, env, repo, steps, store, p)
	if err != nil {
		return nil, err
	}
	return p, prepare(ctx, env, repo, store, rec, p, cfg)
}

// origin is where a place starts: its repository's main checkout, the
// branch it lands on and the commit it starts from, and for a delegated
// place its link to the commissioner.
type origin struct {
	main, target, base string
	// config is the commit its configuration is read from (A13).
	config string
	parent *record.Delegation
}

// placeOrigin finds where a launch's place starts: from its commissioner's
// branch when c, the commission, is one, else from the target
// the launch names.
func placeOrigin(ctx context.Context, env *stage.Env, repo *git.Repo, c *commission, opts LaunchOptions) (origin, error) {
	// The main checkout from git's own view of where it runs: a
	// submodule's `git worktree list` names its git directory inside the
	// superproject's .git/modules instead, and a place made there would
	// be inside another repository's git directory.
	mainPath, err := repo.MainCheckout(ctx)
	if err != nil {
		return origin{}, err
	}
	if err := realPlacesDir(mainPath); err != nil {
		return origin{}, err
	}
	o := origin{main: mainPath}
	if c != nil {
		o.target, o.base, o.parent, err = delegate(ctx, env, repo, c, opts)
		o.config = c.p.ConfigRev()
	} else {
		o.target, o.base, o.config, err = launchBase(ctx, repo, mainPath, opts)
	}
	return o, err
}

// prepare makes a made place ready to work in: what [run] declares (issue
// 29), then the readying steps (L2). A fix whose readying failed still goes
// on, its agent told of the failure, which stays recorded with the place.
func prepare(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store, rec *refs.Record, p *record.Place, cfg *stage.Config) error {
	if run, err := runenv.SetUpRun(ctx, env, repo, store, p, cfg.Run); err != nil {
		return fmt.Errorf("launch %s: its place is made, but [run] could not be set up: %w", p.ID, err)
	} else if run != nil {
		rec = run
	}
	if len(cfg.Ready) == 0 {
		return nil
	}
	_, err := stage.Ready(ctx, env, repo, store, rec, p, cfg)
	var failure *stage.StepFailure
	if errors.As(err, &failure) && p.PlaceKind == "fix" {
		return nil
	}
	return err
}

// NameFromBrief makes a place name from a brief's first words: lowercase
// letters and digits, words joined by '-', at most 4 words and 32
// characters (R6 holds for it). "Fix the login crash!" is
// "fix-the-login-crash"; "" when the brief has no such word.
func NameFromBrief(brief string) string {
	// Letters with marks keep their letter (é → e, ß stays a break):
	// "très spécial" is tres-special, not tr-s-sp-cial.
	if folded, _, err := transform.String(transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC), brief); err == nil {
		brief = folded
	}
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(brief), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		if len(strings.Join(append(words, w), "-")) > 32 {
			break
		}
		if words = append(words, w); len(words) == 4 {
			break
		}
	}
	return strings.Join(words, "-")
}

// checkLaunch refuses, before anything is read, what no launch can make:
// names outside R6, an empty brief, or one that is not UTF-8 (a record
// could not keep it byte for byte).
func checkLaunch(opts LaunchOptions) error {
	if err := refs.ValidateName("kind", opts.Kind); err != nil {
		return err
	}
	if err := refs.ValidateName("name", opts.Name); err != nil {
		return err
	}
	if opts.Brief == "" {
		return fmt.Errorf("the brief is empty")
	}
	if !utf8.ValidString(opts.Brief) {
		return fmt.Errorf("the brief is not valid UTF-8; it would not be stored byte for byte")
	}
	return nil
}

// launchBase is the place's target branch (--target, else the main
// checkout's branch), its base commit (--from, else the target's tip) and
// the commit its configuration is read from: the target's tip, whatever
// --from names (A13).
func launchBase(ctx context.Context, repo *git.Repo, mainPath string, opts LaunchOptions) (target, base, config string, err error) {
	target = opts.Target
	if target == "" {
		branch, err := repo.WorktreeBranch(mainPath)
		if err != nil {
			return "", "", "", err
		}
		if branch == "" {
			return "", "", "", fmt.Errorf("the main checkout %s is not on a branch; pass --target", mainPath)
		}
		target = strings.TrimPrefix(branch, "refs/heads/")
	}
	base, err = repo.BranchCommit(ctx, "refs/heads/"+target)
	if errors.Is(err, git.ErrNotExist) {
		return "", "", "", fmt.Errorf("target branch %q does not exist (it needs a commit); pass --target", target)
	}
	if err != nil {
		return "", "", "", err
	}
	config = base
	if opts.From != "" {
		if base, err = repo.ResolveCommit(ctx, opts.From); errors.Is(err, git.ErrNotExist) {
			return "", "", "", fmt.Errorf("--from %q names no commit", opts.From)
		} else if err != nil {
			return "", "", "", err
		}
	}
	return target, base, config, nil
}

// newPlace is the record a launch writes first (L1): phase making, its
// launcher this process, every stage of its kind pending.
func newPlace(env *stage.Env, opts LaunchOptions, kind stage.Kind, mainPath, target, base string) *record.Place {
	id := opts.Kind + "--" + opts.Name
	p := &record.Place{
		Schema: 1, Kind: "place",
		ID: id, PlaceKind: kind.Name, Name: opts.Name,
		Repo:   mainPath,
		Path:   filepath.Join(mainPath, record.PlacesDir, id),
		Branch: kind.Name + "/" + opts.Name,
		Base:   base, Target: target, Brief: opts.Brief, Agent: opts.Agent, Pane: launchPane(env.Engine.Pane), Runner: opts.Runner,
		Adopts: opts.Adopts,
		Host:   env.Host, Created: env.NowUTC(),
		Phase:    record.PhaseMaking,
		Launcher: env.Self(),
	}
	for _, st := range kind.Stages {
		p.Stages = append(p.Stages, record.StageRecord{Name: st.Name, Prompt: st.Prompt, Deliverable: strings.ReplaceAll(st.Deliverable, "{name}", opts.Name), Life: run.Life{State: record.StagePending}})
	}
	return p
}

// realPlacesDir refuses a places/ that is not a real folder of the main
// checkout (a committed symlink, say): a worktree made through it would be
// outside the repository, where tidying cannot see it (T2).
func realPlacesDir(main string) error {
	if why := stage.NotRealDir(filepath.Join(main, record.PlacesDir)); why != "" {
		return fmt.Errorf("%s; places are made only in a real folder of the repository (remove it, or launch from another repository)", why)
	}
	return nil
}

// recordSteps is how a launch writes its place's record: in two steps,
// making and made, through one update-ref session. The first reads
// packed-refs fresh under its locks, and the second moves only the
// place's own record, which no other process moves while the launch lock
// is held (a session's condition, git.RefSession). With branch set, the
// first step makes the place's branch too, at its base.
type recordSteps struct {
	*refs.Store
	branch bool
}

// openRecordSteps starts the update-ref session a launch writes its
// record through (see makePlace). The first step makes the branch too,
// sparing `git worktree add` the `git branch` process it makes one in (2.7
// ms of a launch, and the hooks' runs), unless a reference-transaction
// hook may be there that would act on a branch made: the session runs
// with hooks off, as flume's records are told to no hook, so git makes
// the branch then, and the hook sees it as any branch.
func openRecordSteps(repo *git.Repo, store *refs.Store, message string) (recordSteps, *git.RefSession) {
	steps := recordSteps{branch: branchUnhooked(repo)}
	reach := git.Records
	if steps.branch {
		reach = git.BranchesUnheard
	}
	session := repo.OpenRefSession(message, reach)
	steps.Store = store.InSession(session)
	return steps, session
}

// makePlace creates the record, the branch and the worktree under the
// repository's launch lock (L2b) and returns the record in phase "made".
func makePlace(ctx context.Context, env *stage.Env, repo *git.Repo, steps recordSteps, store *refs.Store, p *record.Place) (*refs.Record, error) {
	lock, err := stage.LockRepo(ctx, repo.CommonDir)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()

	old, err := freePlace(ctx, env, repo, store, p.ID)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(p.Path); err == nil {
		return nil, &ExistsError{What: "path", Value: p.Path}
	}
	if id, err := repo.RefValue(ctx, p.BranchRef()); err != nil {
		return nil, err
	} else if id != "" {
		return nil, &ExistsError{What: "branch", Value: p.Branch}
	}

	rec, err := createPlace(ctx, steps, old, p)
	if err != nil {
		return nil, err
	}
	// From here the place is made whole even when the launch is told to
	// stop (SIGINT, SIGTERM, SIGHUP): a git killed inside `worktree add`
	// leaves a worktree git itself cannot list. A stop is honoured once
	// the record says "made".
	stopped := ctx
	ctx = context.WithoutCancel(ctx)
	if err := excludePlaces(repo.CommonDir); err != nil {
		return nil, err
	}
	w, err := addWorktree(ctx, env, repo, steps, store, rec, p)
	if err != nil {
		return nil, err
	}
	if err := stopped.Err(); err != nil {
		return nil, fmt.Errorf("launch %s stopped once its place was made (%s): %w", p.ID, p.Path, err)
	}
	return w, nil
}

// addWorktree makes the place's worktree and saves its record as made:
// by `git worktree add` on the branch the record's step made (with
// steps.branch), else by `git worktree add -b`. The made record's objects are written
// while the worktree is made; its ref moves only once the worktree is
// there. A refused worktree leaves them unreachable, for gc, and nothing
// else of the place behind.
func addWorktree(ctx context.Context, env *stage.Env, repo *git.Repo, steps recordSteps, store *refs.Store, rec *refs.Record, p *record.Place) (*refs.Record, error) {
	made := *p
	made.Phase, made.Launcher = record.PhaseMade, nil
	type prepared struct {
		p   *refs.Prepared
		err error
	}
	ready := make(chan prepared, 1)
	go func() {
		pr, err := steps.Prepare(ctx, record.PlaceChange(rec, &made, "launch "+p.ID+": made "+p.Path))
		ready <- prepared{pr, err}
	}()
	var err error
	if p.Base != p.ConfigRev() {
		// it starts from another place's commit, whose objects may wait in
		// that place's agent's own folder (A13)
		err = stage.TakeAllOwnObjects(ctx, repo)
	}
	switch {
	case err != nil:
	case steps.branch:
		err = repo.CheckoutWorktree(ctx, p.Path, p.Branch)
	default:
		err = repo.AddWorktree(ctx, p.Path, p.Branch, p.Base)
	}
	if err != nil && steps.branch && repairedOthers(ctx, env, repo, store) {
		// git failed on another place's worktree folder, which a launch
		// killed inside `git worktree add` left half-written: git made
		// nothing of this place's then, and the branch is the one this
		// launch made, so the worktree is tried once more (L1).
		err = repo.CheckoutWorktree(ctx, p.Path, p.Branch)
	}
	if err != nil {
		<-ready
		if _, cerr := ReconcileMaking(ctx, env, repo, store, rec, p, false); cerr != nil {
			return nil, fmt.Errorf("%w (and cleaning up: %v)", err, cerr)
		}
		return nil, err
	}
	r := <-ready
	if r.err != nil {
		return nil, r.err
	}
	w, err := steps.Commit(ctx, "", []*refs.Prepared{r.p})
	if err != nil {
		return nil, err
	}
	p.Phase, p.Launcher = made.Phase, made.Launcher
	return w[0], nil
}

// repairedOthers reports whether git could not list the repository's
// worktrees, and what this host's dead launches left half-written was
// repaired, as tidy repairs it (stage.RepairDeadLaunches): then the
// worktree is worth trying once more.
func repairedOthers(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store) bool {
	if _, err := repo.Worktrees(ctx); err == nil {
		return false
	}
	records, _, err := store.List(ctx, record.PlacePrefix)
	if err != nil {
		return false
	}
	RepairDeadLaunches(ctx, env, repo, records)
	return true
}

// createPlace writes the record of a place being made. It comes first: a
// create-only CAS (R2), so of several launches of one place exactly one
// goes on. A delegated place's commissioner names it in the same transaction,
// so neither link is ever written without the other; the
// commissioner's record moving meanwhile is read again. With steps.branch
// the place's branch is created in it too, create-only as well: a branch
// made meanwhile by anyone else is never taken over (L1).
func createPlace(ctx context.Context, steps recordSteps, old *refs.Record, p *record.Place) (*refs.Record, error) {
	var made *refs.Record
	err := refs.DefaultRetry.Retry(ctx, func(ctx context.Context) error {
		changes := []refs.Change{record.PlaceChange(old, p, "launch "+p.ID+": making")}
		if p.Parent != nil {
			ch, err := commissionChange(ctx, steps.Store, p)
			if err != nil {
				return err
			}
			changes = append(changes, ch)
		}
		var branch []git.RefUpdate
		if steps.branch {
			branch = append(branch, git.RefUpdate{Op: git.Create, Name: p.BranchRef(), New: p.Base})
		}
		w, err := steps.Write(ctx, changes, branch...)
		var conflict *refs.ConflictError
		if errors.As(err, &conflict) {
			for _, c := range conflict.Conflicts {
				switch c.Name { // not a race to run again
				case record.PlaceRef(p.ID):
					return &ExistsError{What: "place", Value: p.ID}
				case p.BranchRef():
					return &ExistsError{What: "branch", Value: p.Branch}
				}
			}
			return err // the commissioner's record moved: read it again
		}
		if err != nil {
			return err
		}
		made = w[0]
		return nil
	})
	return made, err
}

// freePlace returns the record a new launch of id replaces: nil when there
// is none, a tidied one, or an ExistsError. A launch that died while making
// the place is cleaned up first.
func freePlace(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store, id string) (*refs.Record, error) {
	old, err := store.Read(ctx, record.PlaceRef(id))
	if errors.Is(err, refs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	prev, err := record.DecodePlace(old)
	if err != nil {
		return nil, err
	}
	if prev.Phase == record.PhaseMaking {
		cleaned, err := ReconcileMaking(ctx, env, repo, store, old, prev, true)
		if err != nil {
			return nil, err
		}
		if cleaned {
			return freePlace(ctx, env, repo, store, id)
		}
	}
	if prev.Phase != record.PhaseTidied {
		return nil, &ExistsError{What: "place", Value: id}
	}
	return old, nil
}

// excludePlaces adds places/ to the repository's info/exclude (L2a), once.
func excludePlaces(commonDir string) error {
	path := filepath.Join(commonDir, "info", "exclude")
	const line = "/" + record.PlacesDir + "/"
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for l := range bytes.SplitSeq(data, []byte("\n")) {
		if string(bytes.TrimSpace(l)) == line {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if len(data) > 0 && data[len(data)-1] != '\n' {
		io.WriteString(f, "\n")
	}
	_, err = io.WriteString(f, "# git-flume: agents' worktrees\n"+line+"\n")
	return err
}

// launchPane is the pane host a launch records for its place: the one it
// was asked for, or tmux by default. "none" only holds the first stage
// back, so it records nothing.
func launchPane(pane string) string {
	switch pane {
	case "", "tmux":
		return "tmux"
	case "none":
		return ""
	}
	return pane
}

// PreflightError is a launch refused before anything was made, because
// its first stage could not start here (L1): each missing thing named,
// with how to get it.
type PreflightError struct {
	Place   string
	Missing *multierror.Error
}

func (e *PreflightError) Error() string {
	return fmt.Sprintf("launch %s: nothing was made, because %s", e.Place, e.Missing.Error())
}

func (e *PreflightError) Unwrap() error { return e.Missing }

// preflight checks, before a launch makes anything, what its first stage
// needs to start its agent (L1): the agent program on the caller's PATH
// (agents start with the caller's environment, A1) and a pane host that
// can open panes. With --pane none or print flume starts no agent, and
// nothing is checked. Every missing thing is named at once.
func preflight(ctx context.Context, env *stage.Env, cfg *stage.Config, opts LaunchOptions) error {
	if pane := launchPane(env.Engine.Pane); pane == "" || pane == "print" {
		return nil
	}
	prog, err := agent.ResolveProgram(env.AgentName(opts.Agent), cfg.Agents)
	if err != nil {
		return err
	}
	var missing *multierror.Error
	if _, err := agent.Locate(prog, env.CallerEnv); err != nil {
		missing = multierror.Append(missing, err)
	}
	if env.Engine.Panes != nil {
		if err := env.Engine.Panes.Check(ctx, env.CallerEnv); err != nil {
			missing = multierror.Append(missing, err)
		}
	}
	if missing == nil {
		return nil
	}
	missing.ErrorFormat = func(errs []error) string {
		words := make([]string, len(errs))
		for i, err := range errs {
			words[i] = err.Error()
		}
		return strings.Join(words, "; and ")
	}
	return &PreflightError{Place: opts.Kind + "--" + opts.Name, Missing: missing}
}
