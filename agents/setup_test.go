package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionIsNotAWarning: a program's version is its --version's first
// line on standard output, else the first line on standard error that is
// not a warning (pi prints it there; codex prints a warning there beside
// its version, which doctor showed as the version).
func TestVersionIsNotAWarning(t *testing.T) {
	dir := t.TempDir()
	for name, script := range map[string]string{
		"codex-like": "echo 'WARNING: proceeding, even though we could not create PATH aliases' >&2\necho 'codex-cli 0.171.0'\n",
		"pi-like":    "echo '0.73.1' >&2\n",
		"warns-only": "echo 'warning: nothing to say' >&2\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{"codex-like": "codex-cli 0.171.0", "pi-like": "0.73.1", "warns-only": ""} {
		if got := version(context.Background(), filepath.Join(dir, name), os.Environ()); got != want {
			t.Errorf("%s: version %q, want %q", name, got, want)
		}
	}
}

// TestRoleModelReachesEveryProgram: a role's model goes to Claude Code,
// Codex and pi as --model before the prompt, and to a declared command
// where it says {model}; with no model nothing is added.
func TestRoleModelReachesEveryProgram(t *testing.T) {
	for name, want := range map[string]string{
		"claude": "claude --session-id S --model opus -- PROMPT",
		"codex":  "codex --model opus -- PROMPT",
		"pi":     "pi --session H/.pi/agent/flume-sessions/S.jsonl --model opus PROMPT",
	} {
		got := strings.Join(Builtin[name].Argv(Vars{Prompt: "PROMPT", SessionID: "S", Home: "H", Model: "opus"}), " ")
		if got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
		if plain := strings.Join(Builtin[name].Argv(Vars{Prompt: "PROMPT", SessionID: "S", Home: "H"}), " "); strings.Contains(plain, "--model") {
			t.Errorf("%s with no model: %q", name, plain)
		}
	}
	declared := Program{Name: "mine", Command: []string{"mine", "--use", "{model}", "{prompt}"}}
	if got := strings.Join(declared.Argv(Vars{Prompt: "P", Model: "sonnet"}), " "); got != "mine --use sonnet P" {
		t.Errorf("declared: %q", got)
	}
}
