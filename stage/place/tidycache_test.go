package place_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/stage/place"
)

// TestTidyJudgesAnUnlandedBranchOnceWhileNothingMoves_T4: a place whose
// commit has not landed is judged by git once; a tidy run again with its
// branch and target where they were judges it from tidy's cache, starting
// none of the judgement's git processes (issue 46). Once the target takes
// the branch, the cached judgement no longer applies: it is judged again,
// landed, and tidied.
func TestTidyJudgesAnUnlandedBranchOnceWhileNothingMoves_T4(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	env, log := f.countingGit()
	if _, err := place.MakePlace(ctx, env, f.dir, place.LaunchOptions{Kind: "fix", Name: "one", Brief: "b"}); err != nil {
		t.Fatal(err)
	}
	f.git("-C", filepath.Join(f.dir, "places", "fix--one"), "commit", "-q", "--allow-empty", "-m", "work")
	judged := func() string {
		t.Helper()
		if err := os.WriteFile(log, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := tidyIn(ctx, env, f.dir)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(log)
		var out []string
		for _, c := range strings.Fields(string(data)) {
			if c == "cherry" || c == "merge-base" || c == "rev-parse" {
				out = append(out, c)
			}
		}
		for _, r := range res {
			out = append(out, "tidied "+r.Place+" "+r.Reason)
		}
		return strings.Join(out, " ")
	}
	if got := judged(); !strings.Contains(got, "cherry") {
		t.Fatalf("first tidy: %q; want the branch judged by git cherry", got)
	}
	if got := judged(); got != "" {
		t.Fatalf("second tidy, nothing moved: %q; want no judgement by git and nothing tidied", got)
	}
	f.git("-C", f.dir, "merge", "-q", "--ff-only", "fix/one")
	if got := judged(); !strings.Contains(got, "tidied fix--one landed") {
		t.Fatalf("after the target took the branch: %q; want it judged again and tidied as landed", got)
	}
}
