package agent

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
)

// startPane records what Begin started.
type startPane struct {
	screenPane
	dir  string
	env  []string
	argv []string
}

func (p *startPane) Start(_ context.Context, _ string, dir string, env, argv []string) (int, error) {
	p.dir, p.env, p.argv = dir, env, argv
	return 42, nil
}

// TestBeginStartsOrPrintsTheSameRun_A1_A2_X5: in a pane the program runs
// with the caller's environment cleaned of another session's markers and
// flume's variables; printed, the operator's command carries the same
// variables, quoted where a shell would read them otherwise.
func TestBeginStartsOrPrintsTheSameRun_A1_A2_X5(t *testing.T) {
	ctx := context.Background()
	prog := Builtin["claude"]
	vars := Vars{Prompt: "fix it; $(rm -rf /)", SessionID: "0b0c", Place: "/p", PromptFile: "/p/x.prompt"}
	flume := []string{"FLUME_PLACE=fix--one", "FLUME_SESSION=0b0c", "FLUME_INPUTS={\"a\": \"/x y\"}"}
	// Claude Code's Bash tool sets these for what it runs: a Claude that
	// inherits them writes no transcript (found with the real
	// program delegating).
	caller := []string{"PATH=/bin", "FLUME_SESSION=outer", "CLAUDECODE=1", "HOME=" + t.TempDir(),
		"CLAUDE_CODE_CHILD_SESSION=1", "CLAUDE_CODE_SESSION_ID=f516", "CLAUDE_CODE_EXECPATH=/x/claude.exe", "AI_AGENT=claude-code"}

	pane := &startPane{}
	if err := Begin(ctx, pane, Start{Program: prog, Vars: vars, Pane: "flume-one", Dir: "/p", Caller: caller, Flume: flume}); err != nil {
		t.Fatal(err)
	}
	if pane.dir != "/p" || !slices.Equal(pane.argv, prog.Argv(vars)) {
		t.Fatalf("started in %q with %q", pane.dir, pane.argv)
	}
	wantEnv := append([]string{"PATH=/bin", caller[3]}, flume...)
	if !slices.Equal(pane.env, wantEnv) {
		t.Fatalf("environment %q, want %q", pane.env, wantEnv)
	}

	var out bytes.Buffer
	if err := Begin(ctx, nil, Start{Program: prog, Vars: vars, Pane: "print", Dir: "/p q", Caller: caller, Flume: flume, Print: &out}); err != nil {
		t.Fatal(err)
	}
	line := out.String()
	want := `cd '/p q' && FLUME_PLACE=fix--one FLUME_SESSION=0b0c FLUME_INPUTS='{"a": "/x y"}' ` + ShellLine(prog.Argv(vars)) + "\n"
	if line != want {
		t.Fatalf("printed\n%s\nwant\n%s", line, want)
	}
	if !strings.Contains(line, `'fix it; $(rm -rf /)'`) {
		t.Fatalf("the prompt is not one quoted argument: %s", line)
	}
}
