package run

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestQuietCountsFromTheLastFollowUp_A7: a run's quiet is counted from the
// newest of its prompt, the follow-up flume last typed and its transcript's
// last write, so a run resumed after hours parked is not read as quiet for
// hours (the workspace worker, cut when quiet, was cut that way when its
// agent took longer than one watch to write).
func TestQuietCountsFromTheLastFollowUp_A7(t *testing.T) {
	dir := t.TempDir()
	prompt, transcript := filepath.Join(dir, "prompt"), filepath.Join(dir, "t.jsonl")
	for _, f := range []string{prompt, transcript} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f, t0, t0); err != nil {
			t.Fatal(err)
		}
	}
	resumed := t0.Add(2 * time.Hour)
	r := working(func(r *Run) {
		r.Agent.PromptFile, r.Agent.Transcript, r.Agent.Format = prompt, transcript, "claude"
		r.Agent.Tells, r.Agent.ToldAt = 1, &resumed
	})
	o, _, err := Observe(context.Background(), r, Sources{Now: resumed.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if o.Quiet != time.Minute {
		t.Fatalf("quiet %s a minute after the follow-up, want 1m0s", o.Quiet)
	}
	r.Agent.ToldAt = nil
	if o, _, _ = Observe(context.Background(), r, Sources{Now: resumed.Add(time.Minute)}); o.Quiet != 2*time.Hour+time.Minute {
		t.Fatalf("quiet %s with no follow-up, want 2h1m0s from the prompt and the transcript", o.Quiet)
	}
}
