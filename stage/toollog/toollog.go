package toollog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/internal/lockfile"
	"github.com/git-flume/git-flume/internal/words"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// Append appends to the place's live log (W4) every tool call its
// agents' transcripts show that the log does not hold yet, one line each:
// "<stage>/<run> <tool>: <input>". How many calls of each agent session
// are in the log is kept beside it, under the log's lock, so the processes
// that advance a place never write a call twice; once an ended agent's
// calls are all in, its transcript is not read again. An agent replaced
// by a retry keeps the lines it had, so the log holds every run.
func Append(ctx context.Context, commonDir string, p *record.Place) error {
	var todo []int
	for i := range p.Stages {
		if a := p.Stages[i].Agent; a != nil && a.Transcript != "" && a.Session != "" {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	dir := filepath.Join(stage.LogDir(commonDir, p.ID), "tools")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("log of %s: %w", p.ID, err)
	}
	lock, err := lockfile.Take(ctx, filepath.Join(dir, "lock"))
	if err != nil {
		return fmt.Errorf("log of %s: %w", p.ID, err)
	}
	defer lock.Unlock()
	var log *os.File
	defer func() {
		if log != nil {
			log.Close()
		}
	}()
	for _, i := range todo {
		st := &p.Stages[i]
		a := st.Agent
		mark := filepath.Join(dir, a.Session)
		logged, final := readMark(mark)
		if final {
			continue
		}
		tr, err := agent.ReadTranscriptFile(a.Transcript, a.Format)
		if err != nil {
			continue // not here (another host's), or not yet written
		}
		if len(tr.Tools) > logged {
			if log == nil {
				if log, err = stage.OpenLog(commonDir, p.ID); err != nil {
					return err
				}
			}
			var b strings.Builder
			for _, t := range tr.Tools[logged:] {
				fmt.Fprintf(&b, "%s/%d %s: %s\n", st.Name, st.Runs, t.Name, words.OneLine(t.Input))
			}
			if _, err := log.WriteString(b.String()); err != nil {
				return fmt.Errorf("log of %s: %w", p.ID, err)
			}
		}
		if err := writeMark(mark, len(tr.Tools), a.Ended); err != nil {
			return fmt.Errorf("log of %s: %w", p.ID, err)
		}
	}
	return nil
}

// readMark reads how many of a session's calls are logged, and whether
// that is all of them.
func readMark(path string) (int, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	count, end, _ := strings.Cut(strings.TrimSpace(string(data)), " ")
	n, err := strconv.Atoi(count)
	if err != nil {
		return 0, false
	}
	return n, end == "end"
}

func writeMark(path string, n int, final bool) error {
	s := strconv.Itoa(n)
	if final {
		s += " end"
	}
	return stage.ReplaceFile(path, []byte(s+"\n"), 0o644)
}

// CopyLog writes place id's live log to w (W4, log): once, or, with
// follow, again every interval with what came since, until ctx ends or w
// takes no more.
func CopyLog(ctx context.Context, env *stage.Env, repoDir, id string, w io.Writer, follow bool, interval time.Duration) error {
	var offset int64
	for {
		data, end, err := ReadLog(ctx, env, repoDir, id, offset)
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err // nobody reads on: --follow ends
		}
		offset = end
		if !follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// ReadLog brings a place's live log up to date with its agents'
// transcripts and returns what it holds from byte offset on, with the
// offset of its end (W4): readying and removal output, and every tool call
// of every stage's agent.
func ReadLog(ctx context.Context, env *stage.Env, repoDir, id string, offset int64) ([]byte, int64, error) {
	repo, store, err := env.Open(ctx, repoDir)
	if err != nil {
		return nil, offset, err
	}
	_, p, err := record.ReadPlace(ctx, store, id)
	if err != nil {
		return nil, offset, err
	}
	if err := Append(ctx, repo.CommonDir, p); err != nil {
		return nil, offset, err
	}
	f, err := os.Open(filepath.Join(stage.LogDir(repo.CommonDir, id), "place.log"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, offset, nil
	}
	if err != nil {
		return nil, offset, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset, err
	}
	data, err := io.ReadAll(f)
	return data, offset + int64(len(data)), err
}

// ChildTools is how many of a child's last tool calls are shown.
const ChildTools = 3

// LastTools are the last n tool calls of a stage's current agent, read
// from its transcript, each as "Name: what it named"; none when there is
// no transcript here.
func LastTools(st *record.StageRecord, n int) []string {
	tools := []string{}
	a := st.Agent
	if a == nil || a.Transcript == "" {
		return tools
	}
	tr, err := agent.ReadTranscriptFile(a.Transcript, a.Format)
	if err != nil {
		return tools
	}
	for _, t := range tr.Tools[max(0, len(tr.Tools)-n):] {
		tools = append(tools, t.Name+": "+toolSummary(t.Input))
	}
	return tools
}

// toolSummary is a tool call's input as a person reads it: the command, the
// path or the pattern it names, else its input on one line, cut short.
func toolSummary(input string) string {
	var fields map[string]any
	if json.Unmarshal([]byte(input), &fields) == nil {
		for _, k := range []string{"command", "cmd", "file_path", "path", "pattern", "url"} {
			if v, ok := fields[k].(string); ok && v != "" {
				input = v
				break
			}
		}
	}
	line := words.OneLine(input)
	if r := []rune(line); len(r) > 120 {
		line = string(r[:119]) + "…"
	}
	return line
}
