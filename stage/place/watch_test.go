package place_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/git-flume/git-flume/stage/record"
)

// livePanes is a pane host whose every pane runs, busy in a turn: what an
// idle watcher sees of an agent at work. It counts what it is asked.
type livePanes struct{ calls int }

func (p *livePanes) Start(context.Context, string, string, []string, []string) (int, error) {
	return 0, nil
}
func (p *livePanes) Alive(context.Context, string) bool { p.calls++; return true }
func (p *livePanes) Capture(context.Context, string) (string, error) {
	p.calls++
	return "● Bash(sleep 1000)\n  esc to interrupt\n", nil
}
func (p *livePanes) Send(context.Context, string, string) error        { return nil }
func (p *livePanes) SendKeys(context.Context, string, ...string) error { return nil }
func (p *livePanes) Kill(context.Context, string) error                { return nil }
func (p *livePanes) Check(context.Context, []string) error             { return nil }
func (p *livePanes) Exited(context.Context, string) (agent.Exit, bool) {
	p.calls++
	return agent.Exit{}, false
}

// TestIdleWatcherStepSpawnsNoGit_R4: a watcher's step over a
// stage whose agent works and whose transcript is fresh reads its record,
// its branch, its transcript and its worktree from files: no git process
// at all while nothing changes.
func TestIdleWatcherStepSpawnsNoGit_R4(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	env := f.stageEnv(f.env)
	if _, err := place.MakePlace(ctx, env, f.dir, place.LaunchOptions{Kind: "fix", Name: "one", Brief: "b"}); err != nil {
		t.Fatal(err)
	}
	logDir := t.TempDir()
	prompt := filepath.Join(logDir, "1-code-1.prompt")
	os.WriteFile(prompt, []byte("do it"), 0o644)
	tr := filepath.Join(logDir, "t.jsonl")
	os.WriteFile(tr, []byte(`{"type":"user","message":{"role":"user","content":"do it"}}`+"\n"+
		`{"type":"assistant","message":{"role":"assistant","stop_reason":"tool_use","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"sleep 1000"}}]}}`+"\n"), 0o644)
	head := strings.TrimSpace(f.git("-C", f.dir, "rev-parse", "main"))
	now := time.Now()
	editPlaceRecord(t, f, "fix--one", "an agent at work", func(p *record.Place) {
		st := &p.Stages[0]
		st.State, st.Started, st.Base, st.Runs, st.BudgetMs = run.StateWorking, &now, head, 1, time.Hour.Milliseconds()
		st.Agent = &run.Agent{Program: "claude", Format: "claude", Session: "s1", Pane: "p1", PaneHost: "tmux", Host: "testhost",
			PromptFile: prompt, Transcript: tr, Started: now, SentAt: now, Sends: 1}
	})
	env, log := f.countingGit()
	panes := &livePanes{}
	env.Engine = stage.EngineOptions{Pane: "tmux", Panes: panes, Hosts: func(string) agent.PaneHost { return panes }}
	env.Out = io.Discard
	r, err := env.OpenRepository(ctx, f.dir) // as the watcher opens it, once
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Advance(ctx, r, "fix--one"); err != nil {
		t.Fatal(err)
	}
	os.Remove(log)
	panes.calls = 0
	for range 5 {
		p, err := engine.Advance(ctx, r, "fix--one")
		if err != nil {
			t.Fatal(err)
		}
		if st := p.Stages[0].State; st != run.StateWorking {
			t.Fatalf("the stage moved to %s; an idle step moves nothing", st)
		}
	}
	data, _ := os.ReadFile(log)
	if calls := strings.Fields(string(data)); len(calls) > 0 {
		t.Errorf("5 idle steps spawned %d git processes: %v; want none", len(calls), calls)
	}
	if panes.calls > 5 {
		t.Errorf("5 idle steps asked the pane host %d times; want one look a step at most", panes.calls)
	}
}

// TestLeavingWatcherStaysForARetriedStage_A7: a watcher about to leave a
// place with nothing to watch decides once more after its last share, in
// one CAS step. When the place became watchable again meanwhile (a retry,
// which saw this watcher alive and started none) and the lease still names
// it, it stays; with its agent ended it leaves and the lease is free in
// the record, so that a retry after finds no watcher and starts one;
// another watcher's lease lets it go untouched. Otherwise a place whose
// retry raced its watcher's end went unwatched where no command comes to
// start one (a runner's host, M4).
func TestLeavingWatcherStaysForARetriedStage_A7(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	env := f.stageEnv(f.env)
	if _, err := place.MakePlace(ctx, env, f.dir, place.LaunchOptions{Kind: "fix", Name: "one", Brief: "b"}); err != nil {
		t.Fatal(err)
	}
	me := &record.Proc{PID: os.Getpid(), Host: "testhost"}
	other := &record.Proc{PID: os.Getpid() + 1, Host: "testhost"}
	for _, c := range []struct {
		why     string
		watcher *record.Proc
		ended   bool
		stay    bool
		after   *record.Proc // the lease in the record after
	}{
		{"retried meanwhile: its agent works, the lease mine", me, false, true, me},
		{"its agent ended", me, true, false, nil},
		{"another watcher's lease", other, false, false, other},
	} {
		editPlaceRecord(t, f, "fix--one", c.why, func(p *record.Place) {
			now := time.Now()
			p.Watcher = c.watcher
			st := &p.Stages[0]
			st.State, st.Started, st.Runs = run.StateWorking, &now, 1
			st.Agent = &run.Agent{Program: "claude", Session: "s1", Pane: "p1", Host: "testhost", Started: now, Ended: c.ended}
		})
		stay, err := place.StillMine(ctx, env, f.dir, "fix--one", me)
		if err != nil || stay != c.stay {
			t.Errorf("%s: stay %v (%v), want %v", c.why, stay, err, c.stay)
		}
		_, rec := readPlaceRecord(t, f, "fix--one")
		var p record.Place
		if err := rec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if got := p.Watcher; !reflect.DeepEqual(got, c.after) {
			t.Errorf("%s: lease after %+v, want %+v", c.why, got, c.after)
		}
	}
}
