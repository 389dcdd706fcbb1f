package guard

import (
	"strings"
	"testing"
)

// TestGuardReadsCodexPatches_A9: Codex's apply_patch is judged as an Edit
// of every file its patch names, so a role's tools and path rules hold for
// Codex as for Claude Code; its Bash is Bash.
func TestGuardReadsCodexPatches_A9(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: a.txt\n+a\n*** Update File: src/b.go\n*** Move to: src/c.go\n@@\n-x\n+y\n*** Delete File: secrets/k\n*** End Patch\n"
	got := GuardInput{ToolName: "apply_patch", ToolInput: map[string]any{"command": patch}, Cwd: "/p"}.FromCodex()
	var files []string
	for _, g := range got {
		if g.ToolName != "Edit" || g.Cwd != "/p" {
			t.Fatalf("judged as %+v", g)
		}
		files = append(files, g.ToolInput["file_path"].(string))
	}
	if want := []string{"a.txt", "src/b.go", "src/c.go", "secrets/k"}; strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("files %v, want %v", files, want)
	}
	bash := GuardInput{ToolName: "Bash", ToolInput: map[string]any{"command": "ls"}}
	if got := bash.FromCodex(); len(got) != 1 || got[0].ToolName != "Bash" {
		t.Fatalf("Bash judged as %+v", got)
	}
}
