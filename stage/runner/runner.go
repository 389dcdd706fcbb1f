package runner

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/git-flume/git-flume/stage/record"
)

// OrderPrefix is where, on the shared remote, a launch order waits for
// its runner: refs/flume-launches/<place>, a commit whose parent is the
// place's base and whose one file, launch.json, is the order. It is
// outside refs/flume/ so that sync never carries it as a record.
const OrderPrefix = "refs/flume-launches/"

// Order is what a runner launches: the place, its brief, and where it
// starts (the order commit's parent).
type Order struct {
	Schema int       `json:"schema"`
	Kind   string    `json:"kind"` // always "launch"
	Place  string    `json:"place"`
	Brief  string    `json:"brief"`
	Target string    `json:"target,omitempty"`
	Agent  string    `json:"agent,omitempty"`
	Runner string    `json:"runner"`
	From   string    `json:"from"` // the host that ordered it
	At     time.Time `json:"at"`
	// Adopts is the lost place the launch carries on (adopt, M5); the
	// order's base is then the work that place's host last shared.
	Adopts *record.Adoption `json:"adopts,omitempty"`
}

// maxBrief bounds an order's brief (R5).
const maxBrief = 64 << 10

// check checks an order as read from a remote: input (R5).
func (o *Order) check(place string) error {
	id, err := record.PlaceID(o.Place)
	switch {
	case o.Kind != "launch" || o.Schema != 1:
		return fmt.Errorf("kind %q schema %d, want launch 1", o.Kind, o.Schema)
	case err != nil || id != place:
		return fmt.Errorf("place %q under ref name %q", o.Place, place)
	case len(o.Brief) > maxBrief:
		return fmt.Errorf("a brief of %d bytes", len(o.Brief))
	case o.Target != "" && git.CheckRefName("refs/heads/"+o.Target) != nil:
		return fmt.Errorf("target %q is not a branch name", o.Target)
	}
	if err := refs.ValidateName("runner", o.Runner); err != nil {
		return err
	}
	return refs.ValidateHost(o.From)
}

// Options are a launch --on's.
type Options struct {
	// Runner names the runner, declared in .flume/config at HEAD or the
	// user's config.
	Runner                                 string
	Kind, Name, Brief, From, Target, Agent string
	// Remote is the shared git remote both hosts reach.
	Remote string
	// Wait bounds the wait for the place's record to arrive.
	Wait time.Duration
	// adopts is the lost place the launch carries on (Adopt).
	adopts *record.Adoption
}

// ErrNotHeard is a launch whose place's record did not arrive in time:
// the order stays on the remote for its runner.
var ErrNotHeard = errors.New("the place's record has not arrived")

// Launch launches a place on runner run (M1, issue 45): the order pushed to
// the remote create-only (one order per place at a time), the runner
// started, and then the records fetched until the place's shows it made
// there by this order, for at most o.Wait. Nothing of this host's
// environment is sent: the order names the place, its brief, base and
// target, and the runner resolves everything else on its own side. A
// launch cut short anywhere is settled by the same launch again: an order
// of this host's for the same place still waiting is taken up (the
// runner started again), and the runner takes up a place it made for it.
func Launch(ctx context.Context, r *stage.Repository, o Options) (*record.Place, error) {
	run, id, err := launchTarget(ctx, r, &o)
	if err != nil {
		return nil, err
	}
	if _, p, err := record.ReadPlace(ctx, r.Store, id); err == nil && p.Phase != record.PhaseTidied && !madeBy(p, o, run) {
		return nil, &place.ExistsError{What: "place", Value: id}
	}
	repo := r.Git
	base, err := repo.ResolveCommit(ctx, cmp.Or(o.From, o.Target, "HEAD"))
	if err != nil {
		return nil, fmt.Errorf("%s: its base: %w", id, err)
	}
	data, err := json.Marshal(&Order{Schema: 1, Kind: "launch", Place: id, Brief: o.Brief, Target: o.Target, Agent: o.Agent,
		Runner: run.Name, From: r.Host, At: r.NowUTC(), Adopts: o.adopts})
	if err != nil {
		return nil, err
	}
	order, err := repo.WriteState(ctx, "launch.json", data, git.CommitSpec{Parents: []string{base}, Message: "launch " + id + " on " + run.Name, When: r.NowUTC()})
	if err != nil {
		return nil, err
	}
	if err := wroteOrder(repo.CommonDir, id, order, o.Remote); err != nil {
		return nil, err
	}
	err = repo.PushLeased(ctx, o.Remote, []git.PushUpdate{{Ref: OrderPrefix + id, Local: order, Expect: ""}})
	if errors.As(err, new(*git.PushRejectedError)) {
		err = takeUp(ctx, r, id, o, run, order)
	}
	if err != nil {
		return nil, err
	}
	r.FaultAt("runner:ordered")
	// The start runs with a repository step's environment and what the
	// runner's declaration names (ssh's agent, a cluster's credentials):
	// what crosses to the runner is the order alone.
	argv, err := startArgv(run, id, o.Remote)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := proc.Run(ctx, proc.Cmd{Path: argv[0], Args: argv[1:], Dir: r.Dir, Env: run.Environ(r.CallerEnv), Stdout: &out, Stderr: &out}); err != nil {
		return nil, fmt.Errorf("%s: runner %s did not start: %w: %s; its order waits on %s (%s%s): the same launch again takes it up",
			id, run.Name, err, strings.TrimSpace(out.String()), o.Remote, OrderPrefix, id)
	}
	r.FaultAt("runner:started")
	return heard(ctx, r, id, o, run)
}

// launchTarget is the runner o names, declared and complete, and the id
// of the place it launches (o.Name made from the brief when empty).
func launchTarget(ctx context.Context, r *stage.Repository, o *Options) (stage.RunnerDecl, string, error) {
	cfg, err := runnerConfig(ctx, r, o.Target)
	if err != nil {
		return stage.RunnerDecl{}, "", err
	}
	run, ok := cfg.Runners[o.Runner]
	if !ok {
		return run, "", &stage.RefusedError{Place: o.Kind + "--" + o.Name, Reason: fmt.Sprintf("no runner %q is declared ([runner %q] in .flume/config or your own config)", o.Runner, o.Runner)}
	}
	if err := run.Check(); err != nil {
		return run, "", err
	}
	if o.Name == "" {
		if o.Name = place.NameFromBrief(o.Brief); o.Name == "" {
			return run, "", &stage.RefusedError{Place: o.Kind, Reason: "--name is needed: the brief has no word to make one from"}
		}
	}
	id, err := record.PlaceID(o.Kind + "--" + o.Name)
	return run, id, err
}

// takeUp takes up the order for place id that waits on the remote when
// it is this host's for the same launch (one cut short before its runner
// made the place), else refuses the launch and forgets order, the one it
// could not push.
func takeUp(ctx context.Context, r *stage.Repository, id string, o Options, run stage.RunnerDecl, order string) error {
	waiting, rf, err := fetchOrder(ctx, r, o.Remote, id)
	if rf.ID != order {
		_ = forgetOrder(r.Git.CommonDir, id, order) // never pushed: it waits nowhere
	}
	if rf.ID != "" { // read here only: the order stays the runner's
		_ = r.Git.UpdateRefs(ctx, []git.RefUpdate{{Op: git.Delete, Name: OrderPrefix + id, Old: rf.ID}})
	}
	ours := slices.ContainsFunc(ordersWritten(r.Git.CommonDir, id), func(w written) bool { return w.order == rf.ID })
	if err == nil && ours && waiting.From == r.Host && waiting.Runner == run.Name &&
		waiting.Brief == o.Brief && waiting.Target == o.Target && waiting.Agent == o.Agent {
		return nil
	}
	why := "no launch of this clone wrote it"
	if !ours && rf.ID != "" {
		_ = refusedOrder(r.Git.CommonDir, id, rf.ID, o.Remote) // named by status and fsck until it goes
	}
	if ours {
		why = "this clone's earlier launch, with another brief, target, agent or runner"
	}
	return &stage.RefusedError{Place: id, Reason: fmt.Sprintf("a launch order for it waits on %s already (%s%s at %.12s), not this one: %s; nothing was made. "+
		"Look at it (git fetch %s %s%s && git show FETCH_HEAD); git push %s :%s%s removes it",
		o.Remote, OrderPrefix, id, rf.ID, why, o.Remote, OrderPrefix, id, o.Remote, OrderPrefix, id)}
}

// madeBy reports whether place p is what a launch o on runner run makes:
// made through that runner, from the same brief. Another record of that
// place is not this launch's doing.
func madeBy(p *record.Place, o Options, run stage.RunnerDecl) bool {
	return p.Runner == run.Name && p.Brief == o.Brief
}

// startArgv is how runner run starts git flume run-here for place id.
func startArgv(run stage.RunnerDecl, id, remote string) ([]string, error) {
	if run.Kind == "ssh" {
		return sshArgv(run, "git flume run-here --remote "+agent.ShellQuote(remote)+" "+agent.ShellQuote(id), false)
	}
	kind, name, _ := strings.Cut(id, "--")
	line := strings.NewReplacer("{place}", agent.ShellQuote(id), "{branch}", agent.ShellQuote(kind+"/"+name), "{remote}", agent.ShellQuote(remote),
		"{runner}", agent.ShellQuote(run.Name)).Replace(run.Start)
	return []string{"/bin/sh", "-c", line}, nil
}

// sshArgv runs the shell line in ssh runner run's clone.
func sshArgv(run stage.RunnerDecl, line string, tty bool) ([]string, error) {
	ssh := []string{"ssh"}
	if run.SSHCommand != "" {
		var err error
		if ssh, err = (stage.Step{Command: run.SSHCommand}).Argv(); err != nil {
			return nil, fmt.Errorf("runner %s: sshCommand: %w", run.Name, err)
		}
	}
	if tty {
		ssh = append(ssh, "-t")
	}
	// A path the runner's shell resolves (~ is the runner's home).
	path := agent.ShellQuote(run.Path)
	if rest, ok := strings.CutPrefix(run.Path, "~/"); ok {
		path = `"$HOME"/` + agent.ShellQuote(rest)
	}
	return append(ssh, "-o", "BatchMode=yes", "--", run.Host, "cd "+path+" && "+line), nil
}

// heard fetches the records from the remote until place id's is made on
// its runner's host, or o.Wait has passed.
func heard(ctx context.Context, r *stage.Repository, id string, o Options, run stage.RunnerDecl) (*record.Place, error) {
	deadline := time.Now().Add(o.Wait)
	for {
		if _, err := r.Store.Sync(ctx, o.Remote, r.Host); err != nil {
			return nil, err
		}
		_, p, err := record.ReadPlace(ctx, r.Store, id)
		if err == nil && p.Phase == record.PhaseMade && madeBy(p, o, run) {
			_ = keepOrders(r.Git.CommonDir, id, nil) // heard of: nothing of it waits
			return p, nil
		}
		if time.Now().After(deadline) {
			return p, fmt.Errorf("%s: %w after %s; its order waits on %s for its runner (%s%s)", id, ErrNotHeard, o.Wait, o.Remote, OrderPrefix, id)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// RunHere is the runner's side (M2, issue 45): the order for place id is
// fetched from remote, checked, and launched here as any launch is, with
// this host's own paths, HOME and agents; then the records are shared
// with remote and the order removed from it. An order already carried
// out here (the place made for it, a runner cut short before it shared or
// removed the order) is only shared and removed again.
func RunHere(ctx context.Context, r *stage.Repository, remote, id string, launch func(context.Context, LaunchOrder) (*record.Place, error)) (*record.Place, error) {
	if _, err := record.PlaceID(id); err != nil {
		return nil, err
	}
	o, rf, err := fetchOrder(ctx, r, remote, id)
	if err != nil {
		return nil, err
	}
	if err := o.check(id); err != nil {
		return nil, fmt.Errorf("%s: invalid launch order: %w", id, err)
	}
	repo := r.Git
	base, err := repo.ResolveCommit(ctx, rf.ID+"^1")
	if err != nil {
		return nil, fmt.Errorf("%s: the order's base: %w", id, err)
	}
	r.FaultAt("runner:fetched")
	keepCurrent(ctx, r, remote, id, o.Target)
	_, p, err := record.ReadPlace(ctx, r.Store, id)
	if err != nil || p.Phase != record.PhaseMade || p.Host != r.Host || p.Runner != o.Runner || p.Brief != o.Brief || p.Base != base {
		kind, name, _ := strings.Cut(id, "--")
		p, err = launch(ctx, LaunchOrder{Kind: kind, Name: name, Brief: o.Brief, From: base, Target: o.Target, Agent: o.Agent, Runner: o.Runner, Adopts: o.Adopts})
		if p == nil {
			return nil, err
		}
	}
	r.FaultAt("runner:launched")
	if _, serr := r.Store.Sync(ctx, remote, r.Host); serr != nil {
		return p, errors.Join(err, fmt.Errorf("%s: made here, not shared with %s yet: %w", id, remote, serr))
	}
	r.FaultAt("runner:shared")
	// The order is done: off the remote, leased on what was read, and
	// off this clone.
	ref := OrderPrefix + id
	_ = repo.PushLeased(ctx, remote, []git.PushUpdate{{Ref: ref, Expect: rf.ID}})
	_ = repo.UpdateRefs(ctx, []git.RefUpdate{{Op: git.Delete, Name: ref, Old: rf.ID}})
	return p, err
}

// fetchOrder fetches the order for place id from remote and reads it.
func fetchOrder(ctx context.Context, r *stage.Repository, remote, id string) (*Order, git.RefFile, error) {
	ref := OrderPrefix + id
	if err := r.Git.FetchRefs(ctx, remote, false, "+"+ref+":"+ref); err != nil {
		return nil, git.RefFile{}, fmt.Errorf("%s: no launch order on %s: %w", id, remote, err)
	}
	rf, err := r.Git.ReadRefFile(ctx, ref, "launch.json")
	if err != nil {
		return nil, rf, err
	}
	var o Order
	if !rf.Found || !rf.IsFile || json.Unmarshal(rf.Data, &o) != nil {
		return nil, rf, fmt.Errorf("%s: %s holds no launch order", id, ref)
	}
	return &o, rf, nil
}

// LaunchOrder is what RunHere asks its launch to make.
type LaunchOrder struct {
	Kind, Name, Brief, From, Target, Agent, Runner string
	Adopts                                         *record.Adoption
}

// keepCurrent brings the runner's target branch (target, else its main
// checkout's) along to the shared remote's (M2) when it is behind, so that
// the place's configuration and its lander read what the ordering host
// shares. The remote's tip is read from the remote, never from the order
// (a forged one would move main), and taken only when this clone has it
// already (the order's base, in the usual launch); when it cannot bring
// it along (its checkout has changes, it moved meanwhile) it says so, and
// the place starts from the order's base all the same.
func keepCurrent(ctx context.Context, r *stage.Repository, remote, id, target string) {
	if target == "" {
		main, err := r.Git.MainCheckout(ctx)
		if err != nil {
			return
		}
		branch, err := r.Git.WorktreeBranch(main)
		if err != nil || branch == "" {
			return
		}
		target = strings.TrimPrefix(branch, "refs/heads/")
	}
	there, err := r.Git.ListRemote(ctx, remote, "refs/heads/"+target)
	tip := there["refs/heads/"+target]
	if err != nil || tip == "" || !r.Git.HasCommit(tip) {
		return
	}
	why, behind, err := stage.BringAlong(ctx, r, target, tip, "flume run-here "+id+": "+target+" brought along to "+remote+"'s")
	if err != nil || behind && why != "" {
		fmt.Fprintf(r.Env.Out, "git-flume: %s: %s is behind %s's %.12s and stays: %s\n", id, target, remote, tip, cmp.Or(why, fmt.Sprint(err)))
	}
}
