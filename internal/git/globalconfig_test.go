package git_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/internal/git"
)

// TestGlobalConfigAllReadsAsGit_R9: the user's config files read in process
// give what `git config --global --get-all` gives, for texts git reads
// in several ways, from GIT_CONFIG_GLOBAL, ~/.gitconfig or, without it,
// the XDG file (git config --global reads one file); an include sends the
// read to git.
func TestGlobalConfigAllReadsAsGit_R9(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, global, xdg string
		inProcess         bool
	}{
		{name: "none", inProcess: true},
		{name: "two", global: "[flume]\n\trepository = /a\n\trepository = /b\n", inProcess: true},
		{name: "quoted", global: "[flume]\n\trepository = \"/a b\" # note\n\trepository = /c\\\\d ; more\n[Flume]\n\tRepository=/e\n", inProcess: true},
		{name: "subsection", global: "[flume \"x\"]\n\trepository = /no\n[flume]\nrepository\n\trepository = /yes\n", inProcess: true},
		{name: "home over xdg", global: "-", xdg: "[flume]\n\trepository = /x\n", inProcess: true},
		{name: "xdg alone", global: "--", xdg: "[flume]\n\trepository = /x\n", inProcess: true},
		{name: "include", global: "[include]\n\tpath = more\n[flume]\n\trepository = /i\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1"}
			switch c.global {
			case "-":
				os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[flume]\n\trepository = /home\n"), 0o644)
			case "--":
			default:
				env = append(env, "GIT_CONFIG_GLOBAL="+filepath.Join(home, ".gitconfig"))
			}
			if !strings.HasPrefix(c.global, "-") && c.global != "" {
				os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(c.global), 0o644)
				os.WriteFile(filepath.Join(home, "more"), []byte("[flume]\n\trepository = /more\n"), 0o644)
			}
			if c.xdg != "" {
				os.MkdirAll(filepath.Join(home, ".config", "git"), 0o755)
				os.WriteFile(filepath.Join(home, ".config", "git", "config"), []byte(c.xdg), 0o644)
			}
			out, _ := gitOut(t, env, "config", "--global", "--get-all", "-z", "flume.repository")
			want := slices.DeleteFunc(strings.Split(out, "\x00"), func(v string) bool { return v == "" })
			r := &git.Runner{Env: env}
			if c.inProcess {
				r.Path = "/nonexistent/git" // in process, or this fails
			}
			got, err := r.GlobalConfigAll(ctx, "flume.repository")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) || len(want) == 0 && c.name != "none" {
				t.Fatalf("read %q, git reads %q", got, want)
			}
		})
	}
}
