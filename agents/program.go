package agent

import (
	"cmp"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// DefaultProgram is the agent program a launch or a workspace worker runs
// when neither its flag nor $FLUME_AGENT names one.
const DefaultProgram = "claude"

// ProgramName is the program to run: the one named, else the one
// $FLUME_AGENT names (fromEnv), else DefaultProgram. The one rule, for
// places and workspace workers alike.
func ProgramName(named, fromEnv string) string { return cmp.Or(named, fromEnv, DefaultProgram) }

// Program is an agent program flume can start (A1): how to start it in a
// place with a pinned session id and its first prompt, where its transcript
// is, and which reader applies.
type Program struct {
	Name string
	// Command is the argv template. Placeholders, replaced inside each
	// word without any shell: {prompt} (the whole prompt as one word),
	// {prompt_file}, {session_id}, {place}.
	Command []string
	// Transcript is a glob template for the transcript file:
	// {session_id}, {place}, {home}.
	Transcript string
	// Format is the transcript reader: claude, codex or pi.
	Format string
	// Resume is the argv template that resumes an earlier session of the
	// program with a new prompt, keeping its context: the
	// placeholders of Command, and {resume_id} (the id the program knows
	// the session by) and {transcript}. Empty: the program cannot, and a
	// fresh agent is started instead.
	Resume []string
	// State are the files and folders the program keeps its own state
	// in (its settings, sessions, caches): templates with {home}, the
	// only places outside its place its sandbox lets it write (A12).
	State []string
}

// Builtin are the programs flume knows without configuration.
var Builtin = map[string]Program{
	"claude": {
		Name:       "claude",
		Command:    []string{"claude", "--session-id", "{session_id}", "{prompt}"},
		Resume:     []string{"claude", "--resume", "{resume_id}", "{prompt}"},
		Transcript: "{home}/.claude/projects/*/{session_id}.jsonl",
		Format:     FormatClaude,
		State:      []string{"{home}/.claude/", "{home}/.claude.json"},
	},
	"codex": {
		Name:       "codex",
		Command:    []string{"codex", "{prompt}"},
		Resume:     []string{"codex", "resume", "{resume_id}", "{prompt}"},
		Transcript: "{home}/.codex/sessions/*/*/*/rollout-*.jsonl",
		Format:     FormatCodex,
		State:      []string{"{home}/.codex/"},
	},
	"pi": {
		// --session names the session file itself (every pi version;
		// --session-id only from 0.76).
		Name:       "pi",
		Command:    []string{"pi", "--session", "{home}/.pi/agent/flume-sessions/{session_id}.jsonl", "{prompt}"},
		Resume:     []string{"pi", "--session", "{transcript}", "{prompt}"},
		Transcript: "{home}/.pi/agent/flume-sessions/{session_id}.jsonl",
		Format:     FormatPi,
		State:      []string{"{home}/.pi/"},
	},
}

// Vars are the values of a program's placeholders.
type Vars struct {
	Prompt, PromptFile, SessionID, Place, Home string
	// Settings is a Claude Code settings file flume wrote for this run
	// (its guard hook): {settings}.
	Settings string
	// AllowedTools is the stage role's tool allowlist, if any.
	AllowedTools []string
	// Model is the stage role's preferred model, "" for the program's own.
	Model string
	// ResumeID and Transcript name the session a resumed run goes on
	// with: {resume_id} and {transcript}.
	ResumeID, Transcript string
	// Extension is a pi extension file flume wrote for this run (its
	// guard, run on every tool call): pi gets it with -e.
	Extension string
	// CodexHook is the config override that gives Codex flume's guard as
	// its PreToolUse hook for this run (CodexHook): Codex gets it with -c.
	CodexHook string
}

func (v Vars) expand(s string) string {
	return strings.NewReplacer(
		"{prompt}", v.Prompt, "{prompt_file}", v.PromptFile,
		"{session_id}", v.SessionID, "{place}", v.Place, "{home}", v.Home,
		"{settings}", v.Settings, "{model}", v.Model,
		"{resume_id}", v.ResumeID, "{transcript}", v.Transcript,
	).Replace(s)
}

// ResumeID is the id program p knows an earlier session by, from what flume
// recorded of it: the session id flume pinned, or, for Codex, which pins
// none, the id its rollout file is named by (rollout-<time>-<uuid>.jsonl).
// "" when there is none to resume.
func (p Program) ResumeID(session, transcript string) string {
	if len(p.Resume) == 0 || transcript == "" {
		return ""
	}
	if p.Format != FormatCodex {
		return session
	}
	name := strings.TrimSuffix(filepath.Base(transcript), ".jsonl")
	if len(name) < 36 || !uuidShape().MatchString(name[len(name)-36:]) {
		return ""
	}
	return name[len(name)-36:]
}

var uuidShape = lazyRegexp(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Argv is the command that starts the program. The prompt is one argument,
// never text for a shell (L3).
//
// Claude Code (the shipped program) also gets the settings file with
// flume's guard hook (--settings) and the role's allowlist
// (--allowedTools), before its prompt (A9). The options of Claude Code and
// Codex end with -- before the prompt (L3).
//
// A role's model goes to each shipped program as --model (Claude Code,
// Codex and pi all take it), and to a declared command where it says
// {model}.
func (p Program) Argv(v Vars) []string { return p.argv(p.Command, v) }

// Guarded reports whether the program runs flume's guard before every tool
// use (A9): Claude Code as shipped, which gets it in a settings file with
// --settings; pi as shipped, which gets it as an extension (-e) that asks
// the guard on every tool call; Codex as shipped, which gets it as a
// PreToolUse hook of the run (-c), trusted through its own app-server; or
// a declared command that names {settings}.
func (p Program) Guarded() bool {
	if p.Shipped() && (p.Name == "claude" || p.Name == "pi" || p.Name == "codex") {
		return true
	}
	for _, w := range p.Command {
		if strings.Contains(w, "{settings}") {
			return true
		}
	}
	return false
}

// Shipped reports the program as flume ships it (its command starts with
// its own name), not one declared under a shipped program's name.
func (p Program) Shipped() bool {
	return len(p.Command) > 0 && p.Command[0] == p.Name && Builtin[p.Name].Name == p.Name
}

// ResumeArgv is the command that resumes the session v names with v's
// prompt, with what Argv adds; nil when the program cannot resume.
func (p Program) ResumeArgv(v Vars) []string {
	if len(p.Resume) == 0 || v.ResumeID == "" {
		return nil
	}
	return p.argv(p.Resume, v)
}

func (p Program) argv(template []string, v Vars) []string {
	argv := make([]string, 0, len(template)+6)
	shipped := len(template) > 0 && template[0] == p.Name && p.Shipped()
	for _, w := range template {
		if w == "{prompt}" && shipped {
			if v.Model != "" {
				argv = append(argv, "--model", v.Model)
			}
			if p.Name == "claude" {
				if v.Settings != "" {
					argv = append(argv, "--settings", v.Settings)
				}
				if len(v.AllowedTools) > 0 {
					argv = append(argv, "--allowedTools", strings.Join(v.AllowedTools, ","))
				}
			}
			if p.Name == "pi" && v.Extension != "" {
				argv = append(argv, "-e", v.Extension)
			}
			if p.Name == "codex" && v.CodexHook != "" {
				argv = append(argv, "-c", v.CodexHook)
			}
			if p.Name != "pi" {
				// The options end here: Claude's --allowedTools takes
				// every word after it, the prompt too. pi has no such
				// mark (its parser reads -- as an option taking the next
				// word); flume's prompts never start with - or @.
				argv = append(argv, "--")
			}
		}
		argv = append(argv, v.expand(w))
	}
	return argv
}

// FindTranscript finds the program's transcript by the session id flume
// pinned (a glob, not a recomputed path scheme: A3). A program whose
// transcript name holds no id (Codex) is matched by the newest file naming
// the place's path that was written since the agent started and that no
// earlier agent of the place claimed (taken). It returns "" when there is
// none yet.
func (p Program) FindTranscript(v Vars, since time.Time, taken map[string]bool) string {
	pattern := v.expand(p.Transcript)
	matches, _ := filepath.Glob(pattern)
	if strings.Contains(p.Transcript, "{session_id}") {
		if len(matches) > 0 {
			return matches[0]
		}
		return ""
	}
	type cand struct {
		path string
		mod  time.Time
	}
	var cands []cand
	for _, m := range matches {
		info, err := os.Stat(m)
		if err != nil || taken[m] || info.ModTime().Before(since.Add(-time.Second)) {
			continue
		}
		cands = append(cands, cand{m, info.ModTime()})
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].mod.After(cands[j].mod) })
	for _, c := range cands {
		head := make([]byte, 4096)
		f, err := os.Open(c.path)
		if err != nil {
			continue
		}
		n, _ := f.Read(head)
		f.Close()
		if strings.Contains(string(head[:n]), `"cwd":"`+v.Place+`"`) {
			return c.path
		}
	}
	return ""
}

// PrepareTranscript makes the folder of a transcript whose path flume
// chooses (a pattern with no glob), so the program can write it there.
func (p Program) PrepareTranscript(v Vars) error {
	path := v.expand(p.Transcript)
	if strings.ContainsAny(path, "*?[") {
		return nil
	}
	return os.MkdirAll(filepath.Dir(path), 0o755)
}

// ResolveProgram finds a program by name: declared ones (from
// .flume/config and the user's config) first, then the built-in ones.
func ResolveProgram(name string, declared map[string]Program) (Program, error) {
	if p, ok := declared[name]; ok {
		if len(p.Command) == 0 || p.Transcript == "" || p.Format == "" {
			return Program{}, fmt.Errorf("agent %q: declare command, transcript and format", name)
		}
		return p, nil
	}
	if p, ok := Builtin[name]; ok {
		return p, nil
	}
	return Program{}, fmt.Errorf("unknown agent program %q (built in: claude, codex, pi; or declare [agent %q] in .flume/config)", name, name)
}

// StandingOrders close every prompt flume gives an agent, a stage's
// (shipped, declared or a role's) and a workspace worker's:
// the unfolding notes' shared preamble, which every role carries so that
// no role file can leave it out, and seed 000's order to commit as one
// goes.
const StandingOrders = "Standing orders: do the work you are asked for. Never work around a failing tool, test or check " +
	"(by using a tool for what it is not for, weakening a test, or skipping a step): stop, and say what blocks you in a line " +
	"starting with NEEDS:. Commit each completed unit of work as you go."

// NewSessionID returns a random UUID (version 4): the session id flume pins
// for an agent it starts.
func NewSessionID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ShellQuote quotes s for a POSIX shell, leaving plain words as they are.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShellLine renders argv as one shell command line, for an operator to run
// by hand (the print pane).
func ShellLine(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = ShellQuote(a)
	}
	return strings.Join(q, " ")
}

// lazyRegexp compiles expr when it is first used: package inits run before
// every command, and most commands never read a screen.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// StatePaths are the folders and files program p keeps its state in, for
// home: its State (a template ending in "/" is a folder), or for a
// declared program that names none the first folder under {home} its
// transcripts are in. Each must lie below home: a sandbox that let an
// agent write home itself (its shell's startup files, git's own
// configuration) would hold nothing (A12).
func (p Program) StatePaths(home string) (dirs, files []string, err error) {
	state := p.State
	if len(state) == 0 {
		if rest, ok := strings.CutPrefix(p.Transcript, "{home}/"); ok {
			if first, _, _ := strings.Cut(rest, "/"); first != "" && !strings.ContainsAny(first, "*?[{") {
				state = []string{"{home}/" + first + "/"}
			}
		}
	}
	for _, s := range state {
		path := filepath.Clean(Vars{Home: home}.expand(s))
		if home == "" || !filepath.IsAbs(path) || !strings.HasPrefix(path, filepath.Clean(home)+string(filepath.Separator)) {
			return nil, nil, fmt.Errorf("agent %q: state %q is not below the home folder %s", p.Name, s, home)
		}
		if strings.HasSuffix(s, "/") {
			dirs = append(dirs, path)
		} else {
			files = append(files, path)
		}
	}
	return dirs, files, nil
}
