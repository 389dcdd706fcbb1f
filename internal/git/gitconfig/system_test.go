package gitconfig

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSystemFileIsTheOneGitReads_R9: the system config read in process is
// the file each git program on this machine names for itself (`git config
// --system --edit` with an editor that prints its argument), the
// distribution's git run from its exec path as well, as `git flume` runs
// it: there git puts its exec path first on PATH, and a command that asked
// git instead paid a process for every read of its settings.
func TestSystemFileIsTheOneGitReads_R9(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	real, err := filepath.EvalSymlinks(gitPath)
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(t.TempDir(), "git")
	if data, err := os.ReadFile(real); err != nil || os.WriteFile(copied, data, 0o755) != nil {
		t.Fatalf("copy %s: %v", real, err)
	}
	execPath, err := exec.Command(gitPath, "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	// The git on PATH, the same git in its exec path, and a copy of it
	// elsewhere.
	progs := []string{real, filepath.Join(strings.TrimSpace(string(execPath)), "git"), copied}
	if !slices.Contains(distributionGits, real) {
		if os.Getenv("CI") != "" {
			t.Fatalf("git is %s, none of %v: install the distribution's git (apt-get install git)", real, distributionGits)
		}
		t.Skipf("git is %s, none of %v", real, distributionGits)
	}
	for _, prog := range progs {
		got, ok := SystemFile(prog)
		if prog == copied {
			if ok {
				t.Errorf("SystemFile(%s) = %q: a git outside the distribution's folders was built with a location only it knows", prog, got)
			}
			continue
		}
		cmd := exec.Command(prog, "config", "--system", "--edit")
		cmd.Env = append(cleanConfigEnv(), "GIT_EDITOR=echo")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s config --system --edit: %v", prog, err)
		}
		want := strings.TrimSpace(string(out))
		if !ok || got != want {
			t.Errorf("SystemFile(%s) = %q, %v; git reads %q", prog, got, ok, want)
		}
	}
}

func cleanConfigEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return env
}
