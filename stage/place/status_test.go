package place_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/report"
)

// TestStatusGitCallsDoNotGrow_R4 counts the git processes status spawns for
// 1, 20 and 100 places: none. Every place is launched
// from a base of its own and its stage has an agent whose transcript
// status reads for tokens and cost (W6), priced from each base's
// configuration: that too must not cost a git process per place.
func TestStatusGitCallsDoNotGrow_R4(t *testing.T) {
	if testing.Short() {
		t.Skip("launches 100 places")
	}
	counts := map[int]int{}
	for _, n := range []int{1, 20, 100} {
		f := newFixture(t)
		env := f.stageEnv(f.env)
		for i := range n {
			f.git("-C", f.dir, "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("base %d", i))
			id := fmt.Sprintf("fix--p%03d", i)
			if _, err := place.MakePlace(context.Background(), env, f.dir, place.LaunchOptions{Kind: "fix", Name: id[5:], Brief: "b"}); err != nil {
				t.Fatal(err)
			}
			withTranscript(t, f, id)
		}
		env, log := f.countingGit()
		st, err := report.ReadStatus(context.Background(), env, report.StatusOptions{Repo: f.dir})
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Places) != n {
			t.Fatalf("status lists %d places, want %d", len(st.Places), n)
		}
		for _, ps := range st.Places {
			if ps.Stage.Tokens != 15 {
				t.Fatalf("%s: %d tokens from its transcript, want 15", ps.Place, ps.Stage.Tokens)
			}
		}
		data, err := os.ReadFile(log)
		if err != nil && !os.IsNotExist(err) { // no file: no git ran
			t.Fatal(err)
		}
		calls := strings.Fields(string(data))
		counts[n] = len(calls)
		t.Logf("%d places: %d git processes: %v", n, len(calls), calls)
	}
	if counts[1] != counts[20] || counts[20] != counts[100] {
		t.Fatalf("git processes per status: %v; want the same for every count", counts)
	}
	// The repository, its records, their objects and the worktrees are
	// all read in process (issues 14, 26). More means the in-process
	// reading fell back to git without saying so.
	if counts[1] != 0 {
		t.Fatalf("git processes per status: %v; want none", counts)
	}
}

// withTranscript gives a place's first stage an agent whose Claude Code
// transcript spent 15 tokens.
func withTranscript(t *testing.T, f *fixture, id string) {
	t.Helper()
	tr := filepath.Join(f.t.TempDir(), id+".jsonl")
	line := `{"type":"assistant","message":{"id":"m1","model":"m","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":5}}}` + "\n"
	if err := os.WriteFile(tr, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	editPlaceRecord(t, f, id, "agent with a transcript", func(p *record.Place) {
		p.Stages[0].State = run.StateWorking
		p.Stages[0].Agent = &run.Agent{Program: "claude", Format: "claude", Session: id, Pane: "print", Host: "testhost", Transcript: tr, Ended: true}
	})
}
