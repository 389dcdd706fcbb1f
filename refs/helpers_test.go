package refs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
)

// The test binary doubles as the writer processes of the concurrency tests:
// with FLUME_REFS_HELPER set it runs one helper and exits.
func TestMain(m *testing.M) {
	if h := os.Getenv("FLUME_REFS_HELPER"); h != "" {
		os.Exit(runHelper(h, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// hermeticEnv is the environment of every git the tests run.
func hermeticEnv(home string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + filepath.Join(home, ".gitconfig"),
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
		"LC_ALL=C",
	}
	return env
}

// testRepo is a fresh repository with one commit on main.
type testRepo struct {
	t    testing.TB
	dir  string
	env  []string
	repo *git.Repo
}

func newTestRepo(t testing.TB) *testRepo {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	dir := filepath.Join(root, "repo")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &testRepo{t: t, dir: dir, env: hermeticEnv(home)}
	r.git("init", "-q", "-b", "main", dir)
	r.git("-C", dir, "commit", "-q", "--allow-empty", "-m", "init")
	repo, err := (&git.Runner{Env: r.env}).Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	r.repo = repo
	return r
}

// git runs raw git for test fixtures and checks, outside the code under test.
func (r *testRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Env = r.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *testRepo) store() *refs.Store {
	return refs.New(r.repo, testKinds)
}

// testKinds are the record kinds the store tests write.
var testKinds = refs.Kinds{{Name: "counter", Schema: 1}, {Name: "place", Schema: 1}}

// counter is the record the concurrency tests increment.
type counter struct {
	Schema int    `json:"schema"`
	Kind   string `json:"kind"`
	N      int    `json:"n"`
	Last   string `json:"last,omitempty"`
}

func increment(ctx context.Context, s *refs.Store, ref, who string) (*refs.Record, error) {
	return s.Edit(ctx, ref, func(cur *refs.Record) (refs.Change, error) {
		c := counter{Schema: 1, Kind: "counter"}
		if cur != nil {
			if err := cur.Decode(&c); err != nil {
				return refs.Change{}, err
			}
		}
		c.N++
		c.Last = who
		return refs.Change{State: c, Message: fmt.Sprintf("increment to %d by %s", c.N, who)}, nil
	})
}

// helperCmd prepares a helper process running name with args against r.
func (r *testRepo) helperCmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append([]string{}, r.env...), "FLUME_REFS_HELPER="+name, "FLUME_REFS_REPO="+r.dir)
	return cmd
}

// Helper exit codes.
const (
	helperOK       = 0
	helperFail     = 1
	helperConflict = 3
)

func runHelper(name string, args []string) int {
	ctx := context.Background()
	repo, err := (&git.Runner{}).Open(ctx, os.Getenv("FLUME_REFS_REPO"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return helperFail
	}
	s := refs.New(repo, testKinds)
	switch name {
	case "incr": // incr REF N WHO: N increments, printing each acknowledged commit
		n, _ := strconv.Atoi(args[1])
		for i := 0; i < n; i++ {
			rec, err := increment(ctx, s, args[0], args[2])
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return helperFail
			}
			fmt.Println(rec.Commit)
		}
		return helperOK
	case "create": // create REF WHO: create once, no retry
		_, err := s.Write(ctx, []refs.Change{{Ref: args[0], State: counter{Schema: 1, Kind: "counter", Last: args[1]}}})
		var conflict *refs.ConflictError
		switch {
		case errors.As(err, &conflict):
			return helperConflict
		case err != nil:
			fmt.Fprintln(os.Stderr, err)
			return helperFail
		}
		return helperOK
	case "packrefs": // packrefs: loop git pack-refs --all until killed
		for {
			cmd := exec.Command("git", "-C", repo.Dir, "pack-refs", "--all")
			cmd.Run()
			time.Sleep(2 * time.Millisecond)
		}
	}
	fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
	return helperFail
}
