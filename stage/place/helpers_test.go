package place_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/report"
	"github.com/git-flume/git-flume/stage/runenv"
)

type fixture struct {
	t   testing.TB
	dir string
	env []string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	os.MkdirAll(home, 0o755)
	f := &fixture{t: t, dir: filepath.Join(root, "repo"), env: []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + filepath.Join(home, ".gitconfig"),
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
	}}
	f.git("init", "-q", "-b", "main", f.dir)
	f.git("-C", f.dir, "commit", "-q", "--allow-empty", "-m", "init")
	return f
}

func (f *fixture) git(args ...string) string {
	f.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Env = f.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		f.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// testKinds are the record kinds of a place's workflows, wired as
// git-flume wires them.
var testKinds = refs.Kinds{refs.ClaimKind, record.PlaceKind, runenv.LeaseKind}

func (f *fixture) stageEnv(runnerEnv []string) *stage.Env {
	return &stage.Env{
		Runner:    &git.Runner{Env: runnerEnv, OpenOnce: true},
		Kinds:     testKinds,
		Host:      "testhost",
		PID:       os.Getpid(),
		Now:       func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) },
		CallerEnv: f.env,
		Out:       io.Discard,
	}
}

func (f *fixture) launch(n int) {
	f.t.Helper()
	env := f.stageEnv(f.env)
	for i := range n {
		_, err := place.MakePlace(context.Background(), env, f.dir, place.LaunchOptions{Kind: "fix", Name: fmt.Sprintf("p%03d", i), Brief: "b"})
		if err != nil {
			f.t.Fatal(err)
		}
	}
}

// countingGit makes a git that logs every invocation to a file, and
// returns an Env running it and the log's path.
func (f *fixture) countingGit() (*stage.Env, string) {
	f.t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		f.t.Fatal(err)
	}
	bin := f.t.TempDir()
	log := filepath.Join(bin, "calls")
	script := fmt.Sprintf("#!/bin/sh\necho \"$1\" >> %q\nexec %q \"$@\"\n", log, real)
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		f.t.Fatal(err)
	}
	env := f.stageEnv(f.env)
	env.Runner.Path = filepath.Join(bin, "git")
	return env, log
}

// settle is how the next commands find what a killed launch left: status
// shows it and writes nothing (a read never writes: every ref and the
// worktree list as they were), then tidy settles it.
func settle(t *testing.T, f *fixture, env *stage.Env) {
	t.Helper()
	ctx := context.Background()
	refsBefore := f.git("-C", f.dir, "for-each-ref", "--format=%(refname) %(objectname)")
	filesBefore := listPlaces(f)
	if _, err := report.ReadStatus(ctx, env, report.StatusOptions{Repo: f.dir, All: true}); err != nil {
		t.Fatalf("status: %v", err)
	}
	if after := f.git("-C", f.dir, "for-each-ref", "--format=%(refname) %(objectname)"); after != refsBefore {
		t.Fatalf("status moved refs:\n%s\nwere\n%s", after, refsBefore)
	}
	if after := listPlaces(f); after != filesBefore {
		t.Fatalf("status changed places/: %s, was %s", after, filesBefore)
	}
	if _, err := tidyIn(ctx, env, f.dir); err != nil {
		t.Fatalf("tidy: %v", err)
	}
}

// listPlaces names what is in the fixture's places/ folder.
func listPlaces(f *fixture) string {
	entries, _ := os.ReadDir(filepath.Join(f.dir, "places"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

// fixtureStore is the fixture's record store, opened as another process
// would open it.
func fixtureStore(t *testing.T, f *fixture) *refs.Store {
	t.Helper()
	repo, err := (&git.Runner{Env: f.env}).Open(context.Background(), f.dir)
	if err != nil {
		t.Fatal(err)
	}
	return refs.New(repo, testKinds)
}

// editPlaceRecord changes place id's record as edit says, by
// compare-and-swap, as a process other than the one under test would.
func editPlaceRecord(t *testing.T, f *fixture, id, msg string, edit func(p *record.Place)) {
	t.Helper()
	_, err := fixtureStore(t, f).Edit(context.Background(), record.PlaceRef(id), func(cur *refs.Record) (refs.Change, error) {
		var p record.Place
		if err := cur.Decode(&p); err != nil {
			return refs.Change{}, err
		}
		edit(&p)
		return refs.Change{State: &p, Message: msg}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// tidyIn tidies the repository containing dir, as `git flume tidy` does.
func tidyIn(ctx context.Context, env *stage.Env, dir string) ([]place.TidyResult, error) {
	ps, err := place.In(ctx, env, dir)
	if err != nil {
		return nil, err
	}
	return ps.Tidy(ctx, place.TidyOptions{})
}

// dropIn drops a place of the repository containing dir.
func dropIn(ctx context.Context, env *stage.Env, dir string, o stage.PlaceOptions) (*record.Place, error) {
	ps, err := place.In(ctx, env, dir)
	if err != nil {
		return nil, err
	}
	o.Repo = dir
	return ps.Drop(ctx, o)
}

// installHooksIn installs flume's hooks in the repository containing dir.
func installHooksIn(ctx context.Context, env *stage.Env, dir string) ([]string, error) {
	ps, err := place.In(ctx, env, dir)
	if err != nil {
		return nil, err
	}
	return ps.InstallHooks(ctx)
}
