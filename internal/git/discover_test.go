package git_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/internal/git"
)

// TestOpenInProcessAgreesWithGit_R9: a plain repository is found without
// git, from its top, from a folder inside it and through a symlink, the
// same as `git rev-parse` finds it; everything that is not plain goes to
// git, which is shown by a runner with no git failing to open it.
func TestOpenInProcessAgreesWithGit_R9(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(root, "plain")
	mustGit(t, env, "init", "-q", plain)
	mustGit(t, env, "-C", plain, "commit", "-q", "--allow-empty", "-m", "x")
	os.MkdirAll(filepath.Join(plain, "a", "b"), 0o755)
	os.Symlink(plain, filepath.Join(root, "link"))
	mustGit(t, env, "-C", plain, "worktree", "add", "-q", filepath.Join(plain, "places", "fix--x"))
	os.MkdirAll(filepath.Join(plain, "not-a-repo", ".git"), 0o755)
	bare := filepath.Join(root, "bare.git")
	mustGit(t, env, "init", "-q", "--bare", bare)
	sha256 := filepath.Join(root, "sha256")
	mustGit(t, env, "init", "-q", "--object-format=sha256", sha256)
	worktreeSet := filepath.Join(root, "worktree-set")
	mustGit(t, env, "init", "-q", worktreeSet)
	mustGit(t, env, "-C", worktreeSet, "config", "core.worktree", worktreeSet)
	included := filepath.Join(root, "included")
	mustGit(t, env, "init", "-q", included)
	mustGit(t, env, "-C", included, "config", "include.path", "/dev/null")
	outside := filepath.Join(root, "outside")
	os.MkdirAll(outside, 0o755)

	noGit := &git.Runner{Env: env, Path: "/nonexistent/git"}
	for _, c := range []struct {
		dir       string
		env       []string
		inProcess bool
	}{
		{dir: plain, inProcess: true},
		{dir: filepath.Join(plain, "a", "b"), inProcess: true},
		{dir: filepath.Join(root, "link", "a"), inProcess: true},
		{dir: filepath.Join(plain, "not-a-repo"), inProcess: false},
		{dir: filepath.Join(plain, "places", "fix--x"), inProcess: false},
		{dir: filepath.Join(plain, ".git"), inProcess: false},
		{dir: filepath.Join(plain, ".git", "refs"), inProcess: false},
		{dir: bare, inProcess: false},
		{dir: sha256, inProcess: false},
		{dir: worktreeSet, inProcess: false},
		{dir: included, inProcess: false},
		{dir: outside, inProcess: false},
		{dir: plain, env: []string{"GIT_CEILING_DIRECTORIES=" + root}, inProcess: false},
		{dir: plain, env: []string{"GIT_CONFIG_PARAMETERS='core.bare'='true'"}, inProcess: false},
		{dir: plain, env: []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.autocrlf", "GIT_CONFIG_VALUE_0=false"}, inProcess: true},
		{dir: plain, env: []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=Core.Bare", "GIT_CONFIG_VALUE_0=true"}, inProcess: false},
	} {
		name := strings.TrimPrefix(c.dir, root) + strings.Join(c.env, " ")
		t.Run(name, func(t *testing.T) {
			r := &git.Runner{Env: append(append([]string{}, env...), c.env...)}
			want, wantErr := r.Open(ctx, c.dir)
			// The git answer, from a runner made to ask git.
			r.Env = append(r.Env, "GIT_CONFIG_PARAMETERS=")
			viaGit, gitErr := r.Open(ctx, c.dir)
			if (wantErr == nil) != (gitErr == nil) {
				t.Fatalf("open: %v; git: %v", wantErr, gitErr)
			}
			if wantErr == nil && summary(want) != summary(viaGit) {
				t.Errorf("open:\n got %+v\n git %+v", summary(want), summary(viaGit))
			}
			noGit.Env = append(append([]string{}, env...), c.env...)
			_, err := noGit.Open(ctx, c.dir)
			if c.inProcess != (err == nil) {
				t.Errorf("opened without git: %v; want in process: %v", err == nil, c.inProcess)
			}
		})
	}
}

func summary(r *git.Repo) string {
	return fmt.Sprintf("dir=%s gitdir=%s common=%s bare=%v format=%s", r.Dir, r.GitDir, r.CommonDir, r.Bare, r.ObjectFormat)
}

// TestConfigInProcessAgreesWithGit_R9: a plain repository's settings in
// every scope (the XDG file, ~/.gitconfig or GIT_CONFIG_GLOBAL, its own)
// are read without git, in git's order and words; an include, a setting
// from the command line or an unreadable file sends the read to git.
func TestConfigInProcessAgreesWithGit_R9(t *testing.T) {
	ctx := context.Background()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	xdg := filepath.Join(root, "xdg")
	os.MkdirAll(filepath.Join(xdg, "git"), 0o755)
	os.MkdirAll(home, 0o755)
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".gitconfig"), "[flume]\n\thost = from-home\n[User]\n\tName = \"A  B\"\n")
	write(filepath.Join(xdg, "git", "config"), "[flume]\n\tremote = from-xdg\n\tautosync\n")
	other := filepath.Join(root, "other.gitconfig")
	write(other, "[flume]\n\thost = from-global-env\n")
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + xdg, "GIT_CONFIG_NOSYSTEM=1"}
	repo := filepath.Join(root, "repo")
	mustGit(t, base, "init", "-q", repo)
	mustGit(t, base, "-C", repo, "config", "flume.host", "from-repo")
	mustGit(t, base, "-C", repo, "config", "remote.Origin.url", "https://example.com/x")

	for _, c := range []struct {
		name      string
		env       []string
		inProcess bool
	}{
		{name: "xdg, home and the repository", inProcess: true},
		{name: "GIT_CONFIG_GLOBAL", env: []string{"GIT_CONFIG_GLOBAL=" + other}, inProcess: true},
		{name: "no XDG_CONFIG_HOME", env: []string{"XDG_CONFIG_HOME="}, inProcess: true},
		{name: "git -c", env: []string{"GIT_CONFIG_PARAMETERS='flume.host'='from-c'"}, inProcess: false},
		{name: "GIT_CONFIG_COUNT", env: []string{"GIT_CONFIG_COUNT=3", "GIT_CONFIG_KEY_0=Init.DefaultBranch", "GIT_CONFIG_VALUE_0=main",
			"GIT_CONFIG_KEY_1=Remote.Origin.URL", "GIT_CONFIG_VALUE_1=x", "GIT_CONFIG_KEY_2=flume.host", "GIT_CONFIG_VALUE_2=from-env"}, inProcess: true},
		{name: "a bad GIT_CONFIG_COUNT", env: []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=nosection", "GIT_CONFIG_VALUE_0=x"}, inProcess: false},
		{name: "an include", env: []string{"GIT_CONFIG_GLOBAL=" + filepath.Join(root, "including")}, inProcess: false},
		{name: "system config unknown", env: []string{"GIT_CONFIG_NOSYSTEM=0", "GIT_CONFIG_SYSTEM="}, inProcess: false},
	} {
		t.Run(c.name, func(t *testing.T) {
			write(filepath.Join(root, "including"), "[include]\n\tpath = "+other+"\n")
			env := append(append([]string{}, base...), c.env...)
			want, gitErr := gitOut(t, env, "-C", repo, "config", "--includes", "--list")
			got, err := (&git.Runner{Env: env}).ConfigIn(ctx, repo)
			if gitErr != nil || err != nil {
				if (gitErr == nil) != (err == nil) {
					t.Fatalf("in process: %v; git: %v %s", err, gitErr, want)
				}
				return // refused by git, and so by ConfigIn
			}
			var lines []string
			for _, e := range got {
				lines = append(lines, e.Key+"="+e.Value)
			}
			// git --list prints a key with no value without "=".
			if strings.ReplaceAll(strings.Join(lines, "\n"), "autosync=", "autosync") != want {
				t.Errorf("in process:\n%s\ngit:\n%s", strings.Join(lines, "\n"), want)
			}
			_, err = (&git.Runner{Env: env, Path: "/nonexistent/git"}).ConfigIn(ctx, repo)
			if c.inProcess != (err == nil) {
				t.Errorf("read without git: %v (%v); want in process: %v", err == nil, err, c.inProcess)
			}
		})
	}
}
