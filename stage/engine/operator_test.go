package engine

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// The operator's verbs refused before anything is typed or ended, on a
// record in memory with a pane host of the test's own: no git is started
// (the scripts run each verb end to end, with a fake agent in tmux).

// panes is a pane host holding one pane whose screen the test sets; it
// says what it was sent and what it ended.
type panes struct {
	alive  bool
	screen string
	sent   []string
	killed []string
}

func (h *panes) Start(context.Context, string, string, []string, []string) (int, error) {
	return 0, errors.New("not started here")
}
func (h *panes) Alive(context.Context, string) bool { return h.alive }
func (h *panes) Capture(context.Context, string) (string, error) {
	return h.screen, nil
}
func (h *panes) Send(_ context.Context, _, text string) error {
	h.sent = append(h.sent, text)
	return nil
}
func (h *panes) SendKeys(_ context.Context, _ string, keys ...string) error {
	h.sent = append(h.sent, strings.Join(keys, " "))
	return nil
}
func (h *panes) Kill(_ context.Context, name string) error {
	h.killed = append(h.killed, name)
	h.alive = false
	return nil
}
func (h *panes) Check(context.Context, []string) error { return nil }

// homeHere agrees that every record lives here, or refuses with why.
type homeHere struct{ refuse error }

func (h homeHere) CheckHome(context.Context, *record.Place) error { return h.refuse }

func screen(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../agents/testdata/screens/claude/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// operatorOver is an operator over one place, fix--one, whose current
// stage's Claude agent runs in pane p1 of host h.
func operatorOver(t *testing.T, h *panes) (*Operator, *refs.Store) {
	t.Helper()
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	store := refs.NewMemory(refs.Kinds{record.PlaceKind, refs.ClaimKind})
	p := &record.Place{Schema: 1, Kind: "place", ID: "fix--one", PlaceKind: "fix", Name: "one", Repo: "/r", Path: "/r/places/fix--one",
		Branch: "fix/one", Base: strings.Repeat("1", 40), Target: "main", Brief: "b", Host: "here", Created: at, Phase: record.PhaseMade,
		Stages: []record.StageRecord{{Name: "code", Prompt: "code", Deliverable: stage.DeliverCommit, Runs: 1}}}
	p.Stages[0].State = run.StateWorking
	p.Stages[0].Agent = &run.Agent{Program: "claude", Format: agent.FormatClaude, Session: "s", Pane: "p1", Host: "here", Started: at}
	if _, err := store.Write(context.Background(), []refs.Change{record.PlaceChange(nil, p, "launch")}); err != nil {
		t.Fatal(err)
	}
	env := &stage.Env{Host: "here", Now: func() time.Time { return at }, Engine: stage.EngineOptions{Panes: h}}
	return &Operator{r: &stage.Repository{Env: env, Store: store}, home: homeHere{}}, store
}

// TestTellTypesOnlyIntoTheComposer_X3_A4: tell is refused, with nothing
// typed, when the agent is not up, when its screen is a dialog or
// anything but its own composer, and when the place's record does not
// live here or another live session claims it.
func TestTellTypesOnlyIntoTheComposer_X3_A4(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, screen string
		down         bool
		home         error
		claimed      bool
		want         string
	}{
		{name: "not up", screen: "idle-composer.txt", down: true, want: "is not up"},
		{name: "trust dialog", screen: "trust-folder.txt", want: "not the agent's composer"},
		{name: "permission dialog", screen: "bash-permission.txt", want: "not the agent's composer"},
		{name: "plan approval", screen: "plan-approval.txt", want: "not the agent's composer"},
		{name: "not at home", screen: "idle-composer.txt", home: errors.New("its record names another checkout"), want: "another checkout"},
		{name: "claimed", screen: "idle-composer.txt", claimed: true, want: "claimed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &panes{alive: !c.down, screen: screen(t, c.screen)}
			op, store := operatorOver(t, h)
			op.home = homeHere{refuse: c.home}
			if c.claimed {
				other := refs.Session{Key: "sid:other", PID: os.Getpid(), Host: "here"}
				if _, err := store.Use(ctx, "fix--one", other, false); err != nil {
					t.Fatal(err)
				}
			}
			err := op.Tell(ctx, TellOptions{PlaceOptions: stage.PlaceOptions{Place: "fix--one",
				Gate: stage.GateOptions{Session: refs.Session{Key: "sid:me", PID: os.Getpid(), Host: "here"}}}, Text: "go on"})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("tell: %v, want %q", err, c.want)
			}
			if len(h.sent) > 0 {
				t.Errorf("typed %q into a refused pane", h.sent)
			}
		})
	}
	// The control: the same screen as the refusals of a place not at
	// home or claimed is the agent's own composer, which tell types into.
	if !agent.ReadScreen(agent.FormatClaude, screen(t, "idle-composer.txt")).Input {
		t.Error("the idle composer does not read as the agent's composer")
	}
}

// TestStopEndsTheAgentAndBlocksTheStage_A5_X5: stop ends the agent's pane
// and records the stage blocked (stopped) until retry; stopped again, it
// is refused as not running, and nothing is ended twice.
func TestStopEndsTheAgentAndBlocksTheStage_A5_X5(t *testing.T) {
	ctx := context.Background()
	h := &panes{alive: true, screen: screen(t, "idle-composer.txt")}
	op, store := operatorOver(t, h)
	if err := op.Stop(ctx, stage.PlaceOptions{Place: "fix--one"}); err != nil {
		t.Fatal(err)
	}
	_, p, err := record.ReadPlace(ctx, store, "fix--one")
	if err != nil {
		t.Fatal(err)
	}
	st := p.Stages[0]
	if st.State != run.StateBlocked || st.Block != run.BlockStopped || !st.Agent.Ended || len(h.killed) != 1 {
		t.Errorf("after stop: state %s, block %q, agent ended %v, panes ended %q", st.State, st.Block, st.Agent.Ended, h.killed)
	}
	var refused *stage.RefusedError
	if err := op.Stop(ctx, stage.PlaceOptions{Place: "fix--one"}); !errors.As(err, &refused) || len(h.killed) != 1 {
		t.Errorf("a second stop: %v, panes ended %q", err, h.killed)
	}
}
