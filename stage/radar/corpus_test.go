package radar

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/stage/record"
)

// corpusBundle is real history to draw pairs of changes from: the first
// commits of this project's own history, as a git bundle (made by
// scripts/radar-corpus), so the corpus is the same on every machine and
// needs no network.
var corpusBundle = filepath.Join("testdata", "history.bundle")

// corpusPairs is how many pairs of changes the corpus test judges.
const corpusPairs = 240

// TestCorpusAgreesWithGitMerge makes pairs of real changes off
// a common base — commit B, its child X, and a later commit Y that touches
// a file X touches, its change made on B as two people starting from B
// would have (squashOnto: cherry-picked, its side taken where the two meet) — and compares the radar with what `git merge` of the two
// branches reports: merge-tree (exact) names the same conflicted files for
// every pair; the fingerprints alone find at least 95% of the conflicting
// pairs, and the false alarms are counted.
func TestCorpusAgreesWithGitMerge(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	env := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir,
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=c", "GIT_COMMITTER_EMAIL=c@example.com",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
	git1 := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = filepath.Join(dir, "repo"), env
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := git1(args...)
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	source, err := filepath.Abs(corpusBundle)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "clone", "-q", "--no-checkout", source, filepath.Join(dir, "repo")).CombinedOutput(); err != nil {
		t.Fatalf("clone the corpus: %v\n%s", err, out)
	}
	repo, err := (&git.Runner{Env: env}).Open(ctx, filepath.Join(dir, "repo"))
	if err != nil {
		t.Fatal(err)
	}
	commits := strings.Fields(must("rev-list", "--reverse", "--first-parent", "--no-merges", "HEAD"))
	touched := map[string][]string{}
	for _, c := range commits[1:] {
		touched[c] = strings.Fields(must("diff-tree", "--no-commit-id", "--name-only", "-r", c))
	}
	shares := func(a, b string) bool {
		return slices.ContainsFunc(touched[a], func(f string) bool { return slices.Contains(touched[b], f) })
	}

	var pairs, conflicting, exactAgree, found, falseAlarms int
	var missed []string
	// Pairs where one change contains the other identically: X, and X's
	// change with a later one's made as one commit on B (two people, one
	// of whom also made the other's change the same way).
	var containing, containingClean, containingAlarms int
	for i := 0; i+2 < len(commits) && pairs < corpusPairs; i++ {
		b, x := commits[i], commits[i+1]
		var fx *record.Fingerprint
		taken := 0
		for j := i + 2; j < min(i+14, len(commits)) && taken < 3 && pairs < corpusPairs; j++ {
			y := commits[j]
			if !shares(x, y) {
				continue
			}
			y2, ok := squashOnto(t, git1, must, b, y)
			if !ok {
				continue // Y's change does not apply to B by itself
			}
			taken++
			pairs++
			truth := gitMerge(t, git1, must, x, y2)
			exact, err := repo.MergeConflicts(ctx, x, y2)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Equal(truth, exact) {
				exactAgree++
			} else {
				t.Errorf("merge-tree of %.8s and %.8s names %v; git merge %v", x, y2, exact, truth)
			}
			if fx == nil {
				if fx, err = takeOver(ctx, repo, x, b); err != nil {
					t.Fatal(err)
				}
			}
			fy, err := takeOver(ctx, repo, y2, b)
			if err != nil {
				t.Fatal(err)
			}
			predicted := Overlap(fx, fy)
			switch {
			case len(truth) > 0 && len(predicted) > 0:
				conflicting++
				found++
			case len(truth) > 0:
				conflicting++
				missed = append(missed, fmt.Sprintf("%.8s×%.8s %v", x, y, truth))
			case len(predicted) > 0:
				falseAlarms++
			}
			if taken == 1 {
				if z, ok := squashOnto(t, git1, must, b, x, y); ok {
					fz, err := takeOver(ctx, repo, z, b)
					if err != nil {
						t.Fatal(err)
					}
					containing++
					truth, predicted := gitMerge(t, git1, must, x, z), Overlap(fx, fz)
					if len(truth) == 0 {
						containingClean++
						if len(predicted) > 0 {
							containingAlarms++
						}
					}
				}
			}
		}
	}
	t.Logf("%d pairs, %d conflicting in git merge; merge-tree agrees on %d; fingerprints find %d of %d conflicting (%.1f%%), %d false alarms among %d clean pairs",
		pairs, conflicting, exactAgree, found, conflicting, 100*float64(found)/float64(max(conflicting, 1)), falseAlarms, pairs-conflicting)
	if pairs < 200 || conflicting < 20 {
		t.Fatalf("the corpus made %d pairs, %d conflicting; the radar needs at least 200, 20 of them conflicting, to be judged", pairs, conflicting)
	}
	t.Logf("%d pairs of which one change contains the other's identically, %d clean in git merge; the fingerprints called %d of those a conflict",
		containing, containingClean, containingAlarms)
	if containingClean < 20 {
		t.Fatalf("the corpus made %d clean pairs of contained changes; at least 20 are needed to judge the radar on them", containingClean)
	}
	if containingAlarms > 0 {
		t.Errorf("%d of %d pairs whose changes are the same where they meet were called conflicts: git merges them cleanly", containingAlarms, containingClean)
	}
	if found*100 < conflicting*95 {
		t.Errorf("fingerprints found %d of %d conflicting pairs, below 95%%; missed: %v", found, conflicting, missed)
	}
}

// squashOnto makes the changes of commits, each its side taken where it
// meets what is there (as git cherry-pick does), into one commit on B;
// false when one does not apply (a file it changes is not on B) or the
// whole changes nothing there.
func squashOnto(t *testing.T, git1 func(...string) (string, error), must func(...string) string, b string, commits ...string) (string, bool) {
	t.Helper()
	must("checkout", "-q", "-f", "--detach", b)
	for _, c := range commits {
		if _, err := git1("cherry-pick", "--no-commit", "--strategy-option=theirs", c); err != nil {
			_, _ = git1("cherry-pick", "--abort")
			must("reset", "-q", "--hard")
			return "", false
		}
	}
	if _, err := git1("commit", "-q", "--no-verify", "-m", "squashed on B"); err != nil {
		must("reset", "-q", "--hard")
		return "", false
	}
	return must("rev-parse", "HEAD"), true
}

// gitMerge merges y into a checkout of x with git merge itself and
// returns the files it leaves conflicted, sorted; the checkout is reset
// after.
func gitMerge(t *testing.T, git1 func(...string) (string, error), must func(...string) string, x, y string) []string {
	t.Helper()
	must("checkout", "-q", "-f", "--detach", x)
	_, err := git1("merge", "-q", "--no-ff", "--no-commit", "--no-edit", y)
	var files []string
	if err != nil {
		if out := must("diff", "--name-only", "--diff-filter=U"); out != "" {
			files = strings.Split(out, "\n")
		}
		if len(files) == 0 {
			t.Fatalf("git merge of %.8s into %.8s failed with nothing conflicted", y, x)
		}
	}
	must("reset", "-q", "--hard")
	slices.Sort(files)
	return files
}

// takeOver fingerprints head's commits over its merge base with target.
func takeOver(ctx context.Context, repo *git.Repo, head, target string) (*record.Fingerprint, error) {
	base, err := repo.MergeBase(ctx, head, target)
	if err != nil {
		return nil, err
	}
	return Take(ctx, repo, "", head, base, nil)
}
