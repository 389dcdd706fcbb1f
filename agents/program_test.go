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
	if got := codex.Argv(v); !slices.Equal(got, []string{"codex", "-c", hook, "--", "P"}) {
		t.Fatalf("argv %q", got)
	}
	if got := codex.argv(codex.Resume, v); !slices.Equal(got, []string{"codex", "resume", "R", "-c", hook, "--", "P"}) {
		t.Fatalf("resume argv %q", got)
	}
	if !codex.Guarded() {
		t.Fatal("shipped Codex is not guarded")
	}
	if (Program{Name: "codex", Command: []string{"my-codex", "{prompt}"}}).Guarded() {
		t.Fatal("a declared program named codex is guarded")
	}
}

// TestOptionsEndBeforeThePrompt_L3: Claude Code's --allowedTools takes every
// word after it, so a role's tools took the prompt too (issue 61): the
// options of Claude Code and Codex end with -- before the prompt, fresh
// or resumed, and a prompt that looks like an option stays the prompt. pi
// reads -- as an option that takes the next word: it gets none.
func TestOptionsEndBeforeThePrompt_L3(t *testing.T) {
	v := Vars{Prompt: "--help me", SessionID: "S", ResumeID: "R", Home: "H", AllowedTools: []string{"Read", "Edit"}}
	claude := Builtin["claude"]
	for _, got := range [][]string{claude.Argv(v), claude.ResumeArgv(v)} {
		if n := len(got); n < 3 || got[n-2] != "--" || got[n-1] != "--help me" || !slices.Contains(got, "Read,Edit") {
			t.Errorf("claude argv %q: want --allowedTools Read,Edit, then -- and the prompt", got)
		}
	}
	if got := Builtin["codex"].ResumeArgv(v); !slices.Equal(got, []string{"codex", "resume", "R", "--", "--help me"}) {
		t.Errorf("codex resume argv %q", got)
	}
	if got := Builtin["pi"].Argv(v); slices.Contains(got, "--") || got[len(got)-1] != "--help me" {
		t.Errorf("pi argv %q", got)
	}
	declared := Program{Name: "mine", Command: []string{"mine", "{prompt}"}}
	if got := declared.Argv(v); !slices.Equal(got, []string{"mine", "--help me"}) {
		t.Errorf("a declared command got %q: flume adds nothing to it", got)
	}
}
