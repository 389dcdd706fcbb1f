package agent

import (
	"slices"
	"testing"

	"github.com/git-flume/git-flume/agents/codexhook"
)

// TestCodexGetsItsGuardHook_A9: shipped Codex gets the guard as a config
// override of the run, before its prompt (fresh or resumed); the command is
// quoted as TOML, so a path with quotes or backslashes stays one string.
func TestCodexGetsItsGuardHook_A9(t *testing.T) {
	hook := codexhook.Override(`/opt/my "flume"\bin/git-flume guard --codex`)
	want := `hooks.PreToolUse=[{matcher=".*",hooks=[{type="command",command="/opt/my \"flume\"\\bin/git-flume guard --codex",timeout=60}]}]`
	if hook != want {
		t.Fatalf("hook\n%s\nwant\n%s", hook, want)
	}
	v := Vars{Prompt: "P", CodexHook: hook, ResumeID: "R"}
	codex := Builtin["codex"]
	if got := codex.Argv(v); !slices.Equal(got, []string{"codex", "-c", hook, "P"}) {
		t.Fatalf("argv %q", got)
	}
	if got := codex.argv(codex.Resume, v); !slices.Equal(got, []string{"codex", "resume", "R", "-c", hook, "P"}) {
		t.Fatalf("resume argv %q", got)
	}
	if !codex.Guarded() {
		t.Fatal("shipped Codex is not guarded")
	}
	if (Program{Name: "codex", Command: []string{"my-codex", "{prompt}"}}).Guarded() {
		t.Fatal("a declared program named codex is guarded")
	}
}
