package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"image/png"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rogpeppe/go-internal/testscript"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/internal/fakeherdr"
	"github.com/git-flume/git-flume/internal/fakemodel"
)

// scriptCmds are the custom testscript commands, documented in
// testdata/script/README.md.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"at": cmdAt,
}

// at DATE: fix the author and committer date of the commits that follow.
func cmdAt(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: at DATE")
	}
	ts.Setenv("GIT_AUTHOR_DATE", args[0])
	ts.Setenv("GIT_COMMITTER_DATE", args[0])
	ts.Setenv("FLUME_NOW", args[0])
}

func init() {
	scriptCmds["putrecord"] = cmdPutRecord
	scriptCmds["jsonget"] = cmdJSONGet
	scriptCmds["mkbrief"] = cmdMkBrief
	scriptCmds["waitfor"] = cmdWaitFor
	scriptCmds["tmuxkill"] = cmdTmuxKill
	scriptCmds["waitws"] = cmdWaitWorkspace
	scriptCmds["waitfile"] = cmdWaitFile
	scriptCmds["pngcolors"] = cmdPNGColors
	scriptCmds["fakeherdr"] = cmdFakeHerdr
	scriptCmds["clock"] = cmdClock
	scriptCmds["listen"] = cmdListen
	scriptCmds["dialogon"] = cmdDialogOn
}

// listen FILE: read export NAME=PORT lines from FILE (as git flume env
// prints them) and bind every port at once, on every interface, as that many dev
// servers would; it fails naming each port already in use, then lets them
// all go.
func cmdListen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: listen FILE")
	}
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var busy []string
	n := 0
	for line := range strings.SplitSeq(ts.ReadFile(args[0]), "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "export ")
		_, port, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "COMPOSE") || strings.HasPrefix(line, "#") {
			continue
		}
		n++
		ln, err := net.Listen("tcp", ":"+strings.Trim(port, "'"))
		if err != nil {
			busy = append(busy, fmt.Sprintf("%s: %v", port, err))
			continue
		}
		lns = append(lns, ln)
	}
	if len(busy) > 0 {
		ts.Fatalf("%d of %d ports in use: %s", len(busy), n, strings.Join(busy, "; "))
	}
	ts.Logf("listening on %d ports at once", n)
}

// clock D: move the clock that the engine's and the worker's timers read
// (confirm window, report grace, reminder, stuck, budget, --max, --idle)
// forward by the Go duration D, for every git-flume the script runs from
// now on, watchers already running included. Record dates stay FLUME_NOW's.
func cmdClock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: clock DURATION")
	}
	d, err := time.ParseDuration(args[0])
	if err != nil || d <= 0 {
		ts.Fatalf("clock: want a positive duration, got %q", args[0])
	}
	// Renamed into place: a watcher reading it meanwhile sees the old
	// offset or the new one, never an empty file (a clock gone back).
	path := ts.Getenv("FLUME_TEST_CLOCK")
	ts.Check(os.WriteFile(path+".new", []byte((clockOffset(path) + d).String()), 0o644))
	ts.Check(os.Rename(path+".new", path))
}

// clockOffset is how far the test clock at path runs ahead of the real one.
func clockOffset(path string) time.Duration {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	d, _ := time.ParseDuration(strings.TrimSpace(string(data)))
	return d
}

// fakeherdr STATUS: serve a fake herdr (internal/fakeherdr) on
// $WORK/herdr.sock for the rest of the script, its agents reported as
// STATUS, every call logged to $WORK/herdr.log; HERDR_SOCKET_PATH points
// at it.
func cmdFakeHerdr(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fakeherdr STATUS")
	}
	log, err := os.Create(filepath.Join(ts.Getenv("WORK"), "herdr.log"))
	ts.Check(err)
	srv := &fakeherdr.Server{Status: args[0], Log: log}
	sock := filepath.Join(ts.Getenv("WORK"), "herdr.sock")
	os.Remove(sock) // a script's earlier fake herdr gives way
	ts.Check(srv.Listen(sock))
	ts.Defer(func() { srv.Close(); log.Close() })
	ts.Setenv("HERDR_SOCKET_PATH", sock)
}

// pngcolors FILE MIN: FILE is a PNG image with at least MIN distinct
// colours: a rendered page, not a blank or error screen.
func cmdPNGColors(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: pngcolors FILE MIN")
	}
	f, err := os.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	img, err := png.Decode(f)
	ts.Check(err)
	min, err := strconv.Atoi(args[1])
	ts.Check(err)
	colors := map[color.Color]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			colors[img.At(x, y)] = true
		}
	}
	if (len(colors) >= min) == neg {
		ts.Fatalf("pngcolors: %s has %d distinct colours (want at least %d: %v)", args[0], len(colors), min, !neg)
	}
}

// waitws TIMEOUT ID REGEXP: poll `git flume workspace status --json --id ID`
// (which changes nothing) until its output matches REGEXP.
func cmdWaitWorkspace(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: waitws TIMEOUT ID REGEXP")
	}
	pollUntil(ts, "waitws", args[0], args[2], "git", "flume", "workspace", "status", "--json", "--id", args[1])
}

// waitfor TIMEOUT PLACE REGEXP: poll `git flume status --all --json PLACE` (which
// never advances a stage itself) until its output matches REGEXP.
func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: waitfor TIMEOUT PLACE REGEXP")
	}
	pollUntil(ts, "waitfor", args[0], args[2], "git", "flume", "status", "--all", "--json", args[1])
}

// waitfile TIMEOUT FILE REGEXP: poll FILE (a log an agent writes) until
// it matches REGEXP.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: waitfile TIMEOUT FILE REGEXP")
	}
	pollUntil(ts, "waitfile", args[0], args[2], "cat", args[1])
}

// pollUntil runs a command every 200ms until its output matches pattern,
// failing the script after timeout with the last output.
func pollUntil(ts *testscript.TestScript, name, timeout, pattern string, command ...string) {
	d, err := time.ParseDuration(timeout)
	ts.Check(err)
	re, err := regexp.Compile(pattern)
	ts.Check(err)
	deadline := time.Now().Add(d)
	var out string
	for time.Now().Before(deadline) {
		if ts.Exec(command[0], command[1:]...) == nil {
			out = ts.ReadFile("stdout")
			if re.MatchString(out) {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(ts.Getenv("HOME"), ".claude", "fake-agent.log"))
	ts.Fatalf("%s: no match for %q within %s; last output:\n%s\nthe fake agents' log:\n%s", name, pattern, d, out, log)
}

// tmuxkill: end the script's private tmux server, and every agent in it.
// dialogon FORMAT SESSION WORDS: within 30 s the pane of tmux session
// SESSION (on $FLUME_TMUX_SOCKET) reads, as flume reads screens of
// FORMAT, as a dialog whose words match the regexp WORDS; a screen that
// shows those words and reads as the composer fails at once. A real
// program's dialog that a new version draws otherwise fails here, in the
// agent suite, not for a user (A11, X3).
func cmdDialogOn(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: dialogon FORMAT SESSION WORDS")
	}
	words := regexp.MustCompile(args[2])
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		out, err := exec.Command("tmux", "-S", ts.Getenv("FLUME_TMUX_SOCKET"), "capture-pane", "-p", "-t", "="+args[1]+":").Output()
		if err != nil {
			continue
		}
		last = string(out)
		s := agent.ReadScreen(args[0], last)
		if (s.Ready || s.Input) && words.MatchString(last) {
			ts.Fatalf("dialogon: %s shows the dialog and reads as the composer:\n%s", args[1], last)
		}
		if s.Dialog && words.MatchString(s.Words) {
			ts.Logf("dialog: %s", s.Words)
			return
		}
	}
	ts.Fatalf("dialogon: %s showed no dialog matching %q within 30s; its screen:\n%s", args[1], args[2], last)
}

func cmdTmuxKill(ts *testscript.TestScript, neg bool, args []string) {
	ts.Exec("tmux", "-S", ts.Getenv("FLUME_TMUX_SOCKET"), "kill-server")
}

// jsonget FILE PATH OUT: write the string (or JSON) at a dotted PATH of the
// JSON document in FILE into OUT, byte for byte. Numeric parts index arrays.
func cmdJSONGet(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: jsonget FILE PATH OUT")
	}
	var doc any
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &doc))
	for _, part := range strings.Split(args[1], ".") {
		switch v := doc.(type) {
		case map[string]any:
			doc = v[part]
		case []any:
			i, err := strconv.Atoi(part)
			ts.Check(err)
			if i >= len(v) {
				ts.Fatalf("jsonget: index %d out of range", i)
			}
			doc = v[i]
		default:
			ts.Fatalf("jsonget: %s: cannot index %T", part, doc)
		}
	}
	var out []byte
	if s, ok := doc.(string); ok {
		out = []byte(s)
	} else {
		var err error
		out, err = json.Marshal(doc)
		ts.Check(err)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), out, 0o644))
}

// mkbrief FILE SIZE: write a brief of SIZE bytes made of every kind of text a
// shell would act on: quotes, $(…), backticks, newlines, backslashes.
func cmdMkBrief(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: mkbrief FILE SIZE")
	}
	size, err := strconv.Atoi(args[1])
	ts.Check(err)
	const chunk = "say \"hi\" and 'bye'; $(touch pwned) `touch pwned2` \\n $HOME %s\n\ttabbed line ünïcode\n"
	var b strings.Builder
	for b.Len() < size {
		b.WriteString(chunk)
	}
	brief := b.String()[:size]
	for !utf8.ValidString(brief) {
		brief = brief[:len(brief)-1]
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(brief), 0o644))
}

// putrecord REF FILE: store FILE as the state.json of a new state commit at
// REF with raw git plumbing, bypassing git-flume's checks, so that scripts
// can plant records flume itself would refuse to write (or a hostile host
// would push). @WORK@ in FILE becomes $WORK, and @HEAD@ the commit HEAD
// names in the current repository. When REF exists, the new commit's
// parent is what it holds, so the record moves forward as flume's own
// writes do.
func cmdPutRecord(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: putrecord REF FILE")
	}
	git := func(args ...string) string {
		ts.Check(ts.Exec("git", args...))
		return strings.TrimSpace(ts.ReadFile("stdout"))
	}
	data := strings.ReplaceAll(ts.ReadFile(args[1]), "@WORK@", ts.Getenv("WORK"))
	if strings.Contains(data, "@HEAD@") {
		data = strings.ReplaceAll(data, "@HEAD@", git("rev-parse", "HEAD"))
	}
	planted := ts.MkAbs(".putrecord-state")
	ts.Check(os.WriteFile(planted, []byte(data), 0o644))
	defer os.Remove(planted)
	blob := git("hash-object", "-w", planted)
	index := ts.MkAbs(".putrecord-index")
	ts.Setenv("GIT_INDEX_FILE", index)
	git("update-index", "--add", "--cacheinfo", "100644,"+blob+",state.json")
	tree := git("write-tree")
	ts.Setenv("GIT_INDEX_FILE", "")
	ts.Check(os.Remove(index))
	commitArgs := []string{"commit-tree", "-m", "planted by putrecord", tree}
	if ts.Exec("git", "rev-parse", "--verify", "-q", args[0]) == nil {
		commitArgs = append(commitArgs, "-p", strings.TrimSpace(ts.ReadFile("stdout")))
	}
	commit := git(commitArgs...)
	git("update-ref", args[0], commit)
}

func init() {
	scriptCmds["fakemodel"] = cmdFakeModel
	scriptCmds["agenthome"] = cmdAgentHome
}

// fakemodel SCENARIO: serve the scenario (JSON, see internal/fakemodel) on
// 127.0.0.1 for the rest of the script, log requests to $WORK/model.log,
// and point the agents at it: ANTHROPIC_BASE_URL, FAKE_MODEL_URL.
func cmdFakeModel(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fakemodel SCENARIO")
	}
	sc, err := fakemodel.LoadScenario(ts.MkAbs(args[0]))
	ts.Check(err)
	srv, err := fakemodel.Start(sc, filepath.Join(ts.Getenv("WORK"), "model.log"))
	ts.Check(err)
	ts.Defer(func() { srv.Close() })
	ts.Setenv("FAKE_MODEL_URL", srv.URL)
	ts.Setenv("ANTHROPIC_BASE_URL", srv.URL)
}

// agenthome PROGRAM DIR...: write the configuration the real PROGRAM needs
// in $HOME to start straight into its composer against the fake model,
// trusting each DIR: no onboarding, trust, API-key or permission dialog.
func cmdAgentHome(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: agenthome PROGRAM DIR...")
	}
	home := ts.Getenv("HOME")
	switch args[0] {
	case "claude":
		const key = "sk-fake-0123456789abcdefghijKLMN"
		ts.Setenv("ANTHROPIC_API_KEY", key)
		for _, kv := range []string{"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_AUTOUPDATER=1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1"} {
			k, v, _ := strings.Cut(kv, "=")
			ts.Setenv(k, v)
		}
		projects := map[string]any{}
		for _, d := range args[1:] {
			projects[ts.MkAbs(d)] = map[string]any{"hasTrustDialogAccepted": true}
		}
		cfg, _ := json.Marshal(map[string]any{
			"hasCompletedOnboarding": true,
			"customApiKeyResponses":  map[string]any{"approved": []string{key[len(key)-20:]}, "rejected": []string{}},
			"projects":               projects,
		})
		ts.Check(os.WriteFile(filepath.Join(home, ".claude.json"), cfg, 0o644))
		ts.Check(os.MkdirAll(filepath.Join(home, ".claude"), 0o755))
		ts.Check(os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(`{"permissions":{"allow":["Bash"]}}`), 0o644))
	case "pi":
		ts.Setenv("PI_OFFLINE", "1")
		dir := filepath.Join(home, ".pi", "agent")
		ts.Check(os.MkdirAll(dir, 0o755))
		models, _ := json.Marshal(map[string]any{"providers": map[string]any{"fake": map[string]any{
			"baseUrl": ts.Getenv("FAKE_MODEL_URL") + "/v1", "api": "openai-completions", "apiKey": "dummy",
			"compat": map[string]any{"supportsDeveloperRole": false, "supportsReasoningEffort": false},
			"models": []any{map[string]any{"id": "fake-model", "name": "Fake Model", "reasoning": false, "contextWindow": 128000, "maxTokens": 4096},
				map[string]any{"id": "fake-coder-model", "name": "Fake Coder Model", "reasoning": false, "contextWindow": 128000, "maxTokens": 4096}},
		}}})
		ts.Check(os.WriteFile(filepath.Join(dir, "models.json"), models, 0o644))
		ts.Check(os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"defaultProvider":"fake","defaultModel":"fake-model"}`), 0o644))
	case "codex":
		codexHome := filepath.Join(home, ".codex")
		ts.Check(os.MkdirAll(codexHome, 0o755))
		ts.Setenv("CODEX_HOME", codexHome)
		ts.Setenv("FAKE_API_KEY", "dummy")
		var b strings.Builder
		fmt.Fprintf(&b, "model = \"fake-model\"\nmodel_provider = \"fake\"\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n\n")
		fmt.Fprintf(&b, "[model_providers.fake]\nname = \"Fake\"\nbase_url = %q\nenv_key = \"FAKE_API_KEY\"\nwire_api = \"responses\"\n", ts.Getenv("FAKE_MODEL_URL")+"/v1")
		for _, d := range args[1:] {
			fmt.Fprintf(&b, "\n[projects.%q]\ntrust_level = \"trusted\"\n", ts.MkAbs(d))
		}
		ts.Check(os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(b.String()), 0o644))
	default:
		ts.Fatalf("agenthome: no setup for %q", args[0])
	}
}

// gitcalls on|off: from "on", every git process the script or git-flume
// starts is logged, one line of its arguments each, to $WORK/gitcalls,
// emptied first; the processes git starts of its own are not. git puts its
// exec-path first on PATH for the commands it runs (git-flume among
// them), so the logging git goes there: a folder mirroring git's
// exec-path, named by GIT_EXEC_PATH. "off" stops logging. The log is what
// a test counts a command's git processes from.
func cmdGitCalls(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 || (args[0] != "on" && args[0] != "off") {
		ts.Fatalf("usage: gitcalls on|off")
	}
	dir := filepath.Join(ts.Getenv("WORK"), ".gitcalls-bin")
	path := ts.Getenv("PATH")
	if args[0] == "off" {
		ts.Setenv("PATH", strings.TrimPrefix(path, dir+string(os.PathListSeparator)))
		ts.Setenv("GIT_EXEC_PATH", "")
		return
	}
	real, err := exec.LookPath("git")
	ts.Check(err)
	out, err := exec.Command(real, "--exec-path").Output()
	ts.Check(err)
	execPath := strings.TrimSpace(string(out))
	log := filepath.Join(ts.Getenv("WORK"), "gitcalls")
	ts.Check(os.WriteFile(log, nil, 0o644))
	if _, err := os.Stat(dir); err != nil {
		ts.Check(os.MkdirAll(dir, 0o755))
		entries, err := os.ReadDir(execPath)
		ts.Check(err)
		for _, e := range entries {
			if e.Name() != "git" {
				ts.Check(os.Symlink(filepath.Join(execPath, e.Name()), filepath.Join(dir, e.Name())))
			}
		}
	}
	script := fmt.Sprintf(`#!/bin/sh
case "$(cat /proc/$PPID/comm 2>/dev/null)" in
git-flume*) printf '%%s\n' "$*" >> '%s' ;;
esac
exec '%s' "$@"
`, log, real)
	ts.Check(os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755))
	ts.Setenv("GIT_EXEC_PATH", dir)
	if !strings.HasPrefix(path, dir+string(os.PathListSeparator)) {
		ts.Setenv("PATH", dir+string(os.PathListSeparator)+path)
	}
}

func init() { scriptCmds["gitcalls"] = cmdGitCalls }
