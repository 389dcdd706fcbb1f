package git_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/git-flume/git-flume/internal/git"
)

// TestObjectsOfASharedRepositoryHaveGitsModes: in a repository made with
// `git init --shared=group`, the objects flume writes (a record's blob,
// tree and commit) get the fan-out folders and files git gives its own:
// group-writable, set-group-id folders. The same writes in a
// plain repository keep the modes git gives there too.
func TestObjectsOfASharedRepositoryHaveGitsModes(t *testing.T) {
	for _, shared := range []string{"--shared=group", "--shared=false"} {
		t.Run(shared, func(t *testing.T) {
			env := testEnv(t)
			dir := filepath.Join(t.TempDir(), "repo")
			mustGit(t, env, "init", "-q", shared, dir)
			mustGit(t, env, "-C", dir, "commit", "-q", "--allow-empty", "-m", "init")
			ctx := context.Background()
			repo, err := (&git.Runner{Env: env}).Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			// flume's object, and git's, each in a fan-out folder of its own
			mine, err := repo.WriteBlob(ctx, []byte("flume's\n"))
			if err != nil {
				t.Fatal(err)
			}
			gits := mustGitIn(t, env, dir, "git's own\n")
			if mine[:2] == gits[:2] {
				t.Skip("both objects share a fan-out folder; pick other contents")
			}
			for _, what := range []string{"folder", "file"} {
				m, g := objectMode(t, dir, mine, what), objectMode(t, dir, gits, what)
				if m != g {
					t.Errorf("%s: flume's object %s is %v, git's %v", shared, what, m, g)
				}
			}
		})
	}
}

// mustGitIn writes data as a blob with git and returns its id.
func mustGitIn(t *testing.T, env []string, dir, data string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return mustGit(t, env, "-C", dir, "hash-object", "-w", f)
}

// objectMode is the mode of loose object id's folder or file.
func objectMode(t *testing.T, dir, id, what string) os.FileMode {
	t.Helper()
	path := filepath.Join(dir, ".git", "objects", id[:2])
	if what == "file" {
		path = filepath.Join(path, id[2:])
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode()
}
