package place_test

import (
	"context"
	"io"
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

// startCounting is a pane host whose every pane runs, counting the agents
// it is asked to start.
type startCounting struct {
	livePanes
	starts int
}

func (p *startCounting) Start(context.Context, string, string, []string, []string) (int, error) {
	p.starts++
	return 0, nil
}

// TestNoStageStartsOverARunningAgent_K1: a place whose next stage is due
// while an agent of its earlier stage still runs (its end not yet
// recorded: a crash between the two, an agent slow to go) starts no agent
// until that one is gone.
func TestNoStageStartsOverARunningAgent_K1(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	env := f.stageEnv(f.env)
	if _, err := place.MakePlace(ctx, env, f.dir, place.LaunchOptions{Kind: "fix", Name: "one", Brief: "b"}); err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(f.git("-C", f.dir, "rev-parse", "main"))
	now := time.Now()
	editPlaceRecord(t, f, "fix--one", "code delivered, its agent not yet ended", func(p *record.Place) {
		st := &p.Stages[0]
		st.State, st.Started, st.Ended, st.Base, st.Runs = run.StateDelivered, &now, &now, head, 1
		st.Agent = &run.Agent{Program: "claude", Format: "claude", Session: "s1", Pane: "p1", PaneHost: "tmux", Host: "testhost",
			Started: now, SentAt: now, Sends: 1}
		p.Current = 1
	})
	panes := &startCounting{}
	env.Engine = stage.EngineOptions{Pane: "tmux", Panes: panes, Hosts: func(string) agent.PaneHost { return panes }}
	env.Out = io.Discard
	r, err := env.OpenRepository(ctx, f.dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := engine.Advance(ctx, r, "fix--one")
	if err != nil {
		t.Fatal(err)
	}
	if panes.starts != 0 || p.Stages[1].Agent != nil {
		t.Fatalf("started %d agents, stage %s has agent %+v, while code's agent still runs", panes.starts, p.Stages[1].Name, p.Stages[1].Agent)
	}
}
