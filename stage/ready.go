package stage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/git-flume/git-flume/agents/sandbox"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage/record"
)

// StepEnv is the whole environment of a repository step (L2, X4): the
// step policy of internal/proc, with the place's FLUME_* variables.
func StepEnv(caller []string, p *record.Place) []string {
	return proc.StepEnv(caller, append(record.RunVars(p),
		"FLUME_PLACE="+p.ID,
		"FLUME_KIND="+p.PlaceKind,
		"FLUME_NAME="+p.Name,
		"FLUME_BRANCH="+p.Branch,
		"FLUME_TARGET="+p.Target,
		"FLUME_REPO="+p.Repo,
		"FLUME_PATH="+p.Path,
	)...)
}

// StepFailure is a repository step that did not succeed.
type StepFailure struct {
	Step string
	Exit int // proc.NotFound when it could not start, -1 when it was killed
	Tail string
}

func (e *StepFailure) Error() string {
	return fmt.Sprintf("step %q exited %d", e.Step, e.Exit)
}

// RunSteps runs steps in order in dir, each behind wrap (the start of its
// command line, sandbox.ForStep; nil: none), streaming each line of
// output to out with the step's name and appending everything to the
// log. It stops at the first failure and returns it as a *StepFailure.
func RunSteps(ctx context.Context, wrap []string, steps []Step, dir string, env []string, what string, out io.Writer, log io.Writer) error {
	for i, st := range steps {
		fmt.Fprintf(out, "%s %d/%d: %s\n", what, i+1, len(steps), st.Command)
		fmt.Fprintf(log, "== %s %d/%d: %s\n", what, i+1, len(steps), st.Command)
		argv, err := st.Argv()
		if err != nil {
			return &StepFailure{Step: st.Command, Exit: proc.NotFound, Tail: err.Error()}
		}
		tail := &tailWriter{prefix: "  " + what + ": ", out: out, log: log}
		argv = append(wrap[:len(wrap):len(wrap)], argv...)
		code, err := proc.RunStep(ctx, proc.Cmd{Path: argv[0], Args: argv[1:], Dir: dir, Env: env, Stdout: tail, Stderr: tail})
		tail.flush()
		if err != nil {
			tail.add(err.Error())
		}
		if code != 0 {
			fmt.Fprintf(log, "== exit %d\n", code)
			return &StepFailure{Step: st.Command, Exit: code, Tail: tail.String()}
		}
	}
	return nil
}

// tailWriter streams lines with a prefix and keeps the last proc.TailLines.
type tailWriter struct {
	mu      sync.Mutex
	prefix  string
	out     io.Writer
	log     io.Writer
	partial []byte
	lines   []string
}

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = t.log.Write(b) // the log is evidence beside the record (W4); the step's tail is kept either way
	t.partial = append(t.partial, b...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.emit(string(t.partial[:i]))
		t.partial = t.partial[i+1:]
	}
	return len(b), nil
}

func (t *tailWriter) emit(line string) {
	fmt.Fprintf(t.out, "%s%s\n", t.prefix, line)
	t.add(line)
}

func (t *tailWriter) add(line string) {
	t.lines = append(t.lines, line)
	if len(t.lines) > proc.TailLines {
		t.lines = t.lines[len(t.lines)-proc.TailLines:]
	}
}

func (t *tailWriter) flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.partial) > 0 {
		t.emit(string(t.partial))
		t.partial = nil
	}
}

func (t *tailWriter) String() string { return strings.Join(t.lines, "\n") }

// LogDir is where a place's logs live: beside the repository's git state,
// outside the work tree. Logs are the only files flume writes outside git
// (R1).
func LogDir(commonDir, id string) string {
	return filepath.Join(commonDir, "flume", "logs", id)
}

// Stamped writes each line said to log with the time it was said and who
// said it.
func Stamped(log io.Writer, who string) io.Writer { return stampedLog{log, who} }

type stampedLog struct {
	w   io.Writer
	who string
}

func (l stampedLog) Write(b []byte) (int, error) {
	if _, err := fmt.Fprintf(l.w, "%s %s: %s", time.Now().UTC().Format(time.RFC3339), l.who, b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// ReplaceFile writes path whole or not at all: a reader sees the old file
// or the new one, never half of one.
func ReplaceFile(path string, data []byte, mode os.FileMode) error {
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// OpenLog opens a place's log for appending.
func OpenLog(commonDir, id string) (*os.File, error) {
	dir := LogDir(commonDir, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make log folder: %w", err)
	}
	return os.OpenFile(filepath.Join(dir, "place.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
}

// Ready runs the readying steps of cfg in a place and records the
// outcome with it (L2). A place started from a commit other than the one
// its configuration is read at (--from, a delegated child) holds an
// agent's code, which its steps run: they run behind an agent's boundary
// (A13), writing the place and [ready] cache alone. A failure is
// recorded and returned as a *StepFailure; the place stays.
func Ready(ctx context.Context, env *Env, repo *git.Repo, store *refs.Store, rec *refs.Record, p *record.Place, cfg *Config) (*refs.Record, error) {
	steps := cfg.Ready
	stepEnv := StepEnv(env.CallerEnv, p)
	var wrap []string
	boundary := ""
	if p.Base != p.ConfigRev() {
		var err error
		if boundary, wrap, err = StepBoundary(env, repo, p, "ready", cfg.ReadyCaches, stepEnv); err != nil {
			return nil, fmt.Errorf("readying %s: %w", p.ID, err)
		}
	}
	p.Ready = &record.ReadyResult{Steps: len(steps), Running: env.Self()}
	if _, err := record.SavePlace(ctx, store, rec, p, "ready "+p.ID+": running"); err != nil {
		return nil, err
	}
	log, err := OpenLog(repo.CommonDir, p.ID)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	runErr := RunSteps(ctx, wrap, steps, p.Path, stepEnv, "ready", env.Out, log)
	result := &record.ReadyResult{OK: runErr == nil, Steps: len(steps), Boundary: boundary}
	msg := "ready " + p.ID + ": ok"
	var failure *StepFailure
	if errors.As(runErr, &failure) {
		result.Step, result.Exit, result.Tail = failure.Step, failure.Exit, failure.Tail
		msg = fmt.Sprintf("ready %s: step %q exited %d", p.ID, failure.Step, failure.Exit)
	}
	// Others may have moved the record meanwhile (a drop, a claim); only
	// the readying result is ours to set.
	rec, err = record.EditPlace(ctx, store, p.ID, func(cur *record.Place) (string, error) {
		cur.Ready = result
		*p = *cur
		return msg, nil
	})
	if err != nil {
		return nil, err
	}
	if runErr != nil {
		return rec, fmt.Errorf("readying %s: %w", p.ID, runErr)
	}
	return rec, nil
}

// StepBoundary is the boundary the steps of section what ("ready",
// "remove") run behind in place p's tree, its agent's (sandbox.ForStep,
// writing the place and caches), said on env.Out: the note a record
// keeps and the start of each step's command line.
func StepBoundary(env *Env, repo *git.Repo, p *record.Place, what string, caches, stepEnv []string) (string, []string, error) {
	boundary, wrap, err := sandbox.ForStep(env.Engine.Sandbox, repo.CommonDir, p.Path, caches, stepEnv)
	if err != nil {
		return "", nil, fmt.Errorf("[%s] %w", what, err)
	}
	fmt.Fprintf(env.Out, "%s: its tree is an agent's: the steps run behind %s\n", what, boundaryName(boundary))
	return boundary, wrap, nil
}

// boundaryName is a step boundary's note as a line says it: its layers,
// or none and why.
func boundaryName(b string) string {
	if why, ok := strings.CutPrefix(b, "off: "); ok {
		return "no boundary (" + why + ")"
	}
	return b
}
