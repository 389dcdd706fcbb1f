package agent

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/git-flume/git-flume/agents/sandbox"
)

// Start is an agent run to begin: its program and the values its command
// line is made of, where it runs, and with what.
type Start struct {
	Program Program
	Vars    Vars
	// Pane is the run's pane in its host; "print": the operator runs it.
	Pane string
	Dir  string
	// Caller is the caller's environment; the run gets it cleaned by
	// CallerEnv, then Flume.
	Caller []string
	// Flume are flume's own variables, NAME=value: FLUME_SESSION and what
	// tells the run apart (its place and stage, or its workspace).
	Flume []string
	// Print receives a "print" run's command line.
	Print io.Writer
	// Sandbox, when set, is what the run may write (A12): its command
	// line starts by entering it, with SandboxExe (git-flume).
	Sandbox    *sandbox.Sandbox
	SandboxExe string
	// Resume: the run goes on with the earlier session Vars names
	// (ResumeID, Transcript) through the program's Resume command.
	Resume bool
}

// Begin starts an agent run whose record is already written, so that a
// crash between the two shows a run that never started, never an agent no
// record knows (K1). The transcript's folder is made, the command line is
// built from the program (argv, never a shell), and the program starts in
// its pane with exactly its environment (A1, A2) — or, for a "print" pane,
// the command is printed for the operator with flume's variables, so the
// operator's agent carries its session like any other (X5: it can be
// found and ended). The stage engine and the workspace worker both begin
// their agents here.
func Begin(ctx context.Context, panes PaneHost, s Start) error {
	if err := s.Program.PrepareTranscript(s.Vars); err != nil {
		return err
	}
	argv := s.Program.Argv(s.Vars)
	if s.Resume {
		if argv = s.Program.ResumeArgv(s.Vars); argv == nil {
			return fmt.Errorf("%s cannot resume session %q", s.Program.Name, s.Vars.ResumeID)
		}
	}
	if s.Sandbox != nil {
		// Its hooks need not try what it cannot write.
		argv = append(s.Sandbox.Wrap(s.SandboxExe), argv...)
		s.Flume = append(s.Flume[:len(s.Flume):len(s.Flume)], "FLUME_SANDBOX=landlock")
	}
	if s.Pane == "print" {
		var b strings.Builder
		fmt.Fprintf(&b, "cd %s &&", ShellQuote(s.Dir))
		for _, kv := range s.Flume {
			name, value, _ := strings.Cut(kv, "=")
			fmt.Fprintf(&b, " %s=%s", name, ShellQuote(value))
		}
		_, err := fmt.Fprintf(s.Print, "%s %s\n", b.String(), ShellLine(argv))
		return err
	}
	env := append(CallerEnv(s.Caller), s.Flume...)
	if _, err := panes.Start(ctx, s.Pane, s.Dir, env, argv); err != nil {
		return fmt.Errorf("start %s in its pane: %w", s.Program.Name, err)
	}
	return nil
}
