package engine_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/record"
)

var taskFixtures = map[string]record.TaskCount{
	"mixed.md": {Done: 8, Total: 14},
	"open.md":  {Done: 0, Total: 3},
	"done.md":  {Done: 2, Total: 2},
	"none.md":  {Done: 0, Total: 0},
}

func TestCountTasks_K6(t *testing.T) {
	for file, want := range taskFixtures {
		data, err := os.ReadFile(filepath.Join("testdata", "tasks", file))
		if err != nil {
			t.Fatal(err)
		}
		if got := engine.CountTasks(data); got != want {
			t.Errorf("%s: %+v, want %+v", file, got, want)
		}
	}
}

// openspecCLI finds the real openspec program: on PATH, or installed by
// .ci/run under $FLUME_TOOLS.
func openspecCLI() string {
	if p, err := exec.LookPath("openspec"); err == nil {
		return p
	}
	if d := os.Getenv("FLUME_TOOLS"); d != "" {
		p := filepath.Join(d, "node_modules", ".bin", "openspec")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// TestCountTasksAgreesWithOpenSpecCLI_K6 runs the real `openspec list
// --json` over the same tasks.md files and compares its counts with ours.
func TestCountTasksAgreesWithOpenSpecCLI_K6(t *testing.T) {
	cli := openspecCLI()
	if cli == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("openspec CLI not found; .ci/run installs @fission-ai/openspec under $FLUME_TOOLS")
		}
		t.Skip("openspec CLI not installed (npm @fission-ai/openspec; .ci/run installs it)")
	}
	root := t.TempDir()
	for file := range taskFixtures {
		dir := filepath.Join(root, "openspec", "changes", strings.TrimSuffix(file, ".md"))
		os.MkdirAll(dir, 0o755)
		data, _ := os.ReadFile(filepath.Join("testdata", "tasks", file))
		os.WriteFile(filepath.Join(dir, "tasks.md"), data, 0o644)
		os.WriteFile(filepath.Join(dir, "proposal.md"), []byte("# Proposal\n"), 0o644)
	}
	cmd := exec.Command(cli, "list", "--json")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "OPENSPEC_TELEMETRY=0", "DO_NOT_TRACK=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("openspec list --json: %v\n%s", err, out)
	}
	var list struct {
		Changes []struct {
			Name      string `json:"name"`
			Completed int    `json:"completedTasks"`
			Total     int    `json:"totalTasks"`
		} `json:"changes"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	seen := 0
	for _, c := range list.Changes {
		data, _ := os.ReadFile(filepath.Join("testdata", "tasks", c.Name+".md"))
		got := engine.CountTasks(data)
		if got.Done != c.Completed || got.Total != c.Total {
			t.Errorf("%s: we count %d/%d, openspec %d/%d", c.Name, got.Done, got.Total, c.Completed, c.Total)
		}
		seen++
	}
	if seen != len(taskFixtures) {
		t.Errorf("openspec listed %d changes, want %d:\n%s", seen, len(taskFixtures), out)
	}
}
