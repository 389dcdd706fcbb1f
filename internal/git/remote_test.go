package git_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/git-flume/git-flume/internal/git"
)

// TestPushLeasedStagedByGlobMovesExactlyItsRefs_R7: a push of many updates
// to a remote of many refs goes staged in a scratch repository and by one
// glob: the remote gets exactly the refs pushed (not another ref of the
// clone), each new one leased on being absent and each moved one on the
// commit named; one stale lease refuses the whole push; no scratch
// repository is left behind.
func TestPushLeasedStagedByGlobMovesExactlyItsRefs_R7(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t)
	root := t.TempDir()
	dir, remote := filepath.Join(root, "a"), filepath.Join(root, "remote.git")
	mustGit(t, env, "init", "-q", dir)
	mustGit(t, env, "init", "-q", "--bare", remote)
	trace := filepath.Join(root, "setup.trace")
	repo, err := (&git.Runner{Env: append(env, "GIT_TRACE="+trace)}).Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(n int) string {
		blob, err := repo.WriteBlob(ctx, []byte(fmt.Sprintf(`{"n":%d}`, n)))
		if err != nil {
			t.Fatal(err)
		}
		tree, err := repo.WriteTree(ctx, []git.TreeEntry{{Name: "state.json", ID: blob}})
		if err != nil {
			t.Fatal(err)
		}
		id, err := repo.WriteCommit(ctx, git.CommitSpec{Tree: tree, Message: "n", When: time.Unix(0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	const many = 1_000_000 // refs the remote is said to hold: staged
	var first, second []git.PushUpdate
	for i := range 10 {
		ref := fmt.Sprintf("refs/flume/things/t%d", i)
		first = append(first, git.PushUpdate{Ref: ref, Local: commit(i)})
		second = append(second, git.PushUpdate{Ref: ref, Local: commit(100 + i), Expect: first[i].Local})
	}
	mustGit(t, env, "-C", dir, "update-ref", "refs/flume/not-pushed", commit(999))
	if err := repo.PushLeasedAmong(ctx, remote, many, first); err != nil {
		t.Fatal(err)
	}
	again := append([]git.PushUpdate{}, first...)
	again[0].Local = commit(50) // over a ref the remote holds, leased on its being absent
	if err := repo.PushLeasedAmong(ctx, remote, many, again); !errors.As(err, new(*git.PushRejectedError)) {
		t.Fatalf("creating a ref the remote holds: %v, want refused (absent was leased)", err)
	}
	stale := append([]git.PushUpdate{}, second...)
	stale[3].Expect = stale[3].Local
	if err := repo.PushLeasedAmong(ctx, remote, many, stale); !errors.As(err, new(*git.PushRejectedError)) {
		t.Fatalf("a stale lease: %v, want refused", err)
	}
	if got := mustGit(t, env, "--git-dir", remote, "rev-parse", "refs/flume/things/t0"); got != first[0].Local {
		t.Fatalf("a refused push moved t0 to %s", got)
	}
	if err := repo.PushLeasedAmong(ctx, remote, many, second); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, u := range second {
		want = append(want, u.Local+" "+u.Ref)
	}
	got := mustGit(t, env, "--git-dir", remote, "for-each-ref", "--format=%(objectname) %(refname)", "--sort=objectname")
	if wantSorted := sortedLines(want); got != wantSorted {
		t.Fatalf("the remote holds\n%s\nwant\n%s", got, wantSorted)
	}
	setup, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^.*trace: .*git.* push .*'refs/\*:refs/\*'$`).Match(setup) || !regexp.MustCompile(`(?m)update-ref`).Match(setup) {
		t.Fatalf("no push by a glob of staged refs:\n%s", setup)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".git", "flume-push*")); len(left) > 0 {
		t.Fatalf("scratch repositories left: %q", left)
	}
}

func sortedLines(lines []string) string {
	out := append([]string{}, lines...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return strings.Join(out, "\n")
}
