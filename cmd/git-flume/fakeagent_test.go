package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// fakeClaude stands in for Claude Code in testscripts: it draws a composer
// in its pane, takes its first prompt as its last argument and later ones
// typed or pasted into the pane, writes a transcript in Claude Code's JSONL
// shape at ~/.claude/projects/<slug>/<session-id>.jsonl, and follows a plan.
//
// The plan ($FAKE_PLAN; or $FAKE_PLAN.<stage>.<run>, or $FAKE_PLAN.<stage>,
// where they exist) has one line per prompt received, in order; each
// line is actions separated by ";":
//
//	ignore          do not take this prompt (it never reaches the transcript)
//	commit FILE     write FILE and commit it
//	write FILE      write FILE, no commit
//	commitin R F [TEXT]  write F (TEXT, or a default line) in the worktree of
//	                repository R of $FLUME_REPOSITORIES and commit it there
//	writein R F     write F in repository R's worktree, no commit
//	tasks N         commit an OpenSpec change (proposal.md, tasks.md with N open tasks)
//	tick N          tick N open tasks in openspec/changes/*/tasks.md and commit
//	say TEXT        end the turn with TEXT
//	report TEXT     end the turn with a STAGE REPORT whose done is TEXT
//	cutoff TEXT     end the reply with TEXT, cut for length (max_tokens)
//	fail TEXT       end the turn with an API error saying TEXT
//	limit N         end the turn with a usage limit that resets in N seconds
//	needs TEXT      end the turn with "NEEDS: TEXT"
//	ask TEXT        ask the user TEXT (AskUserQuestion) and wait
//	run CMD         run CMD with sh -c in the place, as its Bash tool would;
//	                output appended to ~/.claude/run-<place>.log
//	recreate TEXT   end the turn asking for a fresh session: "RECREATE: TEXT"
//	work            start a tool call and never finish the turn
//	permission CMD  start a Bash tool call for CMD and ask permission for it
//	                in a dialog at the foot of the screen, as Claude Code
//	                does; what is typed into it is logged to
//	                ~/.claude/typed-into-dialog; a line answers it ("1": yes, CMD
//	                runs; anything else: no), then the plan goes on
//	asks CMD        the same, in a dialog whose words flume does not know:
//	                only the hooks say what it is
//	sleep N         wait N seconds
//	exit            exit
//	exitcode N      exit with status N
//	kill            die of SIGKILL
//
// "{place}" and "{workspace}" in an action's argument are the place's or
// the workspace request's id ($FLUME_PLACE, $FLUME_WORKSPACE). A
// prompt with no line gets "say ok". A plan starting with "dialog" shows
// a trust dialog instead of the composer and records anything typed into
// ~/.claude/typed-into-dialog. A plan starting with "trust" shows the same dialog
// until a person answers it (one line, Enter), then goes on with the rest
// of the plan and its first prompt, as Claude Code does. A plan starting
// with "crash N WORDS" prints WORDS ("\n" a line break) and exits with
// status N before it shows a composer or writes a transcript.
func fakeClaude() {
	args := os.Args[1:]
	if len(args) == 1 && args[0] == "--version" {
		fmt.Println("2.1.197 (Fake Claude)")
		return
	}
	os.MkdirAll(filepath.Join(os.Getenv("HOME"), ".claude"), 0o755) // its own files' folder
	var session, first string
	for i := 0; i < len(args); i++ {
		if args[i] == "--session-id" && i+1 < len(args) {
			session = args[i+1]
			i++
			continue
		}
		if args[i] == "--settings" && i+1 < len(args) {
			fakeSettings = args[i+1]
			i++
			continue
		}
		first = args[i]
	}
	var plan []string
	if p := os.Getenv("FAKE_PLAN"); p != "" {
		// A stage may have a plan of its own, $FAKE_PLAN.<stage>, and each
		// run of it one too, $FAKE_PLAN.<stage>.<run>; so may a direct
		// request's task, $FAKE_PLAN.<task>.
		stage := os.Getenv("FLUME_STAGE")
		if stage == "" {
			stage = os.Getenv("FLUME_TASK")
		}
		counter := filepath.Join(os.Getenv("HOME"), ".claude", ".fake-runs-"+os.Getenv("FLUME_PLACE")+"-"+stage)
		runs, _ := os.ReadFile(counter)
		run := len(runs) + 1
		os.WriteFile(counter, append(runs, '.'), 0o644)
		for _, c := range []string{fmt.Sprintf("%s.%s.%d", p, stage, run), p + "." + stage} {
			if _, err := os.Stat(c); err == nil {
				p = c
				break
			}
		}
		fakeLog("%s %s run %d: plan %s", os.Getenv("FLUME_PLACE"), stage, run, p)
		data, _ := os.ReadFile(p)
		for l := range strings.SplitSeq(strings.TrimRight(string(data), "\n"), "\n") {
			plan = append(plan, l)
		}
	}
	home := os.Getenv("HOME")
	cwd, _ := os.Getwd()
	rd := bufio.NewReader(os.Stdin)
	if len(plan) > 0 && (plan[0] == "dialog" || plan[0] == "trust") {
		fmt.Print("Quick safety check: Is this a project you created or one you trust?\n\n❯ 1. Yes, I trust this folder\n  2. No, exit\n")
		if plan[0] == "dialog" {
			logTyped(home)
		}
		rd.ReadString('\n')
		fmt.Print("\x1b[2J\x1b[H") // the dialog gives way to the composer
		plan = plan[1:]
	}
	if len(plan) > 0 && strings.HasPrefix(plan[0], "crash ") {
		// Fails at start, before any transcript, as a program with a
		// refused key or an unknown flag does: its words on screen, then
		// its exit status.
		var code int
		fmt.Sscan(strings.TrimPrefix(plan[0], "crash "), &code)
		_, words, _ := strings.Cut(strings.TrimPrefix(plan[0], "crash "), " ")
		fmt.Println(strings.ReplaceAll(words, `\n`, "\n"))
		os.Exit(code)
	}
	slug := regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(cwd, "-")
	dir := filepath.Join(home, ".claude", "projects", slug)
	os.MkdirAll(dir, 0o755)
	tr := &fakeTranscript{path: filepath.Join(dir, session+".jsonl"), session: session, cwd: cwd}

	fmt.Print("\x1b[?2004h") // bracketed paste on
	fmt.Print("╭─── Fake Claude ───╮\n")
	n := 0
	handle := func(prompt string) {
		actions := "say ok"
		if n < len(plan) {
			actions = plan[n]
		}
		n++
		if strings.TrimSpace(actions) == "ignore" {
			composer()
			return
		}
		tr.user(prompt)
		fakeHook("UserPromptSubmit", map[string]any{"prompt": prompt})
		// The prompt taken goes to the history above a composer at work,
		// as Claude Code draws it.
		first, _, _ := strings.Cut(prompt, "\n")
		fmt.Print("\x1b[2J\x1b[H╭─── Fake Claude ───╮\n● " + first + "\n")
		busyComposer()
		open := false // a turn left open (a tool call never finished, a question): no Stop
		for a := range strings.SplitSeq(actions, ";") {
			verb, arg, _ := strings.Cut(strings.TrimSpace(a), " ")
			open = open || verb == "work" || verb == "ask"
			arg = strings.NewReplacer("{place}", os.Getenv("FLUME_PLACE"), "{workspace}", os.Getenv("FLUME_WORKSPACE")).Replace(arg)
			switch verb {
			case "commit":
				os.MkdirAll(filepath.Dir(arg), 0o755)
				os.WriteFile(arg, []byte("made by the fake agent\n"), 0o644)
				tr.tool("Bash", "git add "+arg+" && git commit -m 'add "+arg+"'")
				runQuiet("git", "add", arg)
				runQuiet("git", "commit", "-q", "-m", "add "+arg)
			case "tasks":
				var k int
				fmt.Sscan(arg, &k)
				_, name, _ := strings.Cut(os.Getenv("FLUME_PLACE"), "--")
				dir := filepath.Join("openspec", "changes", name)
				os.MkdirAll(dir, 0o755)
				os.WriteFile(filepath.Join(dir, "proposal.md"), []byte("# Proposal\n"), 0o644)
				var b strings.Builder
				b.WriteString("# Tasks\n\n## 1. Work\n")
				for i := 1; i <= k; i++ {
					fmt.Fprintf(&b, "- [ ] 1.%d task %d\n", i, i)
				}
				os.WriteFile(filepath.Join(dir, "tasks.md"), []byte(b.String()), 0o644)
				tr.tool("Bash", "git commit -m 'openspec change'")
				runQuiet("git", "add", "openspec")
				runQuiet("git", "commit", "-q", "-m", "openspec change "+name)
			case "write":
				os.WriteFile(arg, []byte("written by the fake agent\n"), 0o644)
			case "commitin", "writein":
				var repos map[string]string
				json.Unmarshal([]byte(os.Getenv("FLUME_REPOSITORIES")), &repos)
				fields := strings.SplitN(arg, " ", 3)
				dir, file := repos[fields[0]], fields[1]
				text := "made by the fake agent in " + fields[0]
				if len(fields) == 3 {
					text = fields[2]
				}
				os.WriteFile(filepath.Join(dir, file), []byte(text+"\n"), 0o644)
				if verb == "commitin" {
					tr.tool("Bash", "git -C "+dir+" commit -am 'change "+file+"'")
					runQuiet("git", "-C", dir, "add", file)
					runQuiet("git", "-C", dir, "commit", "-q", "-m", "change "+file)
				}
			case "tick":
				var k int
				fmt.Sscan(arg, &k)
				files, _ := filepath.Glob("openspec/changes/*/tasks.md")
				for _, f := range files {
					data, _ := os.ReadFile(f)
					s := string(data)
					for ; k > 0 && strings.Contains(s, "- [ ]"); k-- {
						s = strings.Replace(s, "- [ ]", "- [x]", 1)
					}
					os.WriteFile(f, []byte(s), 0o644)
				}
				tr.tool("Bash", "git commit -am 'tick tasks'")
				runQuiet("git", "commit", "-q", "-am", "tick "+arg+" tasks")
			case "say":
				tr.assistant(arg, "end_turn")
			case "report":
				tr.assistant("Finished.\n\nSTAGE REPORT\ndone: "+arg+"\nfiles: a.txt\nnotes: none\nblockers: none", "end_turn")
			case "cutoff":
				tr.assistant(arg, "max_tokens")
			case "fail":
				tr.write(map[string]any{"type": "assistant", "isApiErrorMessage": true, "message": map[string]any{
					"role": "assistant", "content": []any{map[string]any{"type": "text", "text": arg}}, "stop_reason": "stop_sequence"}})
			case "limit":
				// A provider's usage limit, resetting N seconds from now on
				// the script's clock, as Claude Code reports it.
				var n int64
				fmt.Sscan(arg, &n)
				reset := time.Now().Add(clockOffset(os.Getenv("FLUME_TEST_CLOCK"))).Unix() + n
				tr.write(map[string]any{"type": "assistant", "isApiErrorMessage": true, "message": map[string]any{
					"role": "assistant", "content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("Claude AI usage limit reached|%d", reset)}}, "stop_reason": "stop_sequence"}})
			case "run":
				tr.tool("Bash", arg)
				log, _ := os.OpenFile(filepath.Join(home, ".claude", "run-"+os.Getenv("FLUME_PLACE")+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
				fmt.Fprintf(log, "$ %s\n", arg)
				var out bytes.Buffer
				cmd := exec.Command("sh", "-c", arg)
				cmd.Stdout, cmd.Stderr = io.MultiWriter(log, &out), io.MultiWriter(log, &out)
				if err := cmd.Run(); err != nil {
					fmt.Fprintf(log, "exit: %v\n", err)
				}
				log.Close()
				tr.result(out.String()) // as Claude Code records a tool's result
			case "recreate":
				tr.assistant("I need a fresh session.\nRECREATE: "+arg, "end_turn")
			case "needs":
				tr.assistant("I cannot go on.\nNEEDS: "+arg, "end_turn")
			case "ask":
				tr.ask(arg)
			case "work":
				tr.tool("Bash", "sleep 1000")
			case "sleep":
				var n int
				fmt.Sscan(arg, &n)
				time.Sleep(time.Duration(n) * time.Second)
			case "exit":
				os.Exit(0)
			case "exitcode":
				var code int
				fmt.Sscan(arg, &code)
				os.Exit(code)
			case "kill":
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			case "permission", "asks":
				tr.tool("Bash", arg)
				// As Claude Code does, the hooks of its settings hear of the
				// wait before the dialog shows, and of the tool's end after.
				fakeHook("PermissionRequest", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": arg}})
				fakeHook("Notification", map[string]any{"notification_type": "permission_prompt", "message": "Claude needs your permission to use Bash"})
				dialogOverComposer()
				if verb == "asks" {
					// A dialog in words flume's screen reading does not know.
					fmt.Print(" Darf ich " + arg + " ausführen?\n   ja (1) / nein (2)\n")
				} else {
					fmt.Print(" Bash command\n\n   " + arg + "\n   This command requires approval\n\n Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and don't ask again for this command\n   3. No, and tell Claude what to do differently (esc)\n")
				}
				answer, _ := rd.ReadString('\n')
				f, _ := os.OpenFile(filepath.Join(home, ".claude", "typed-into-dialog"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
				fmt.Fprint(f, answer)
				f.Close()
				fmt.Print("\x1b[2J\x1b[H╭─── Fake Claude ───╮\n") // the dialog gives way
				if strings.TrimSpace(answer) == "1" {
					runQuiet("sh", "-c", arg)
					fakeHook("PostToolUse", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": arg}})
				}
			case "popup":
				// After N seconds a permission dialog takes the screen:
				// whatever is typed from then on lands in it, logged.
				var n int
				fmt.Sscan(arg, &n)
				time.Sleep(time.Duration(n) * time.Second)
				dialogOverComposer()
				fmt.Print("Do you want to proceed?\n❯ 1. Yes\n  2. No\n")
				logTyped(home)
			}
		}
		if !open {
			fakeHook("Stop", map[string]any{"stop_hook_active": false})
		}
		composer()
	}
	composer()
	if first != "" {
		handle(first)
	}
	var pasted []string
	pasting := false
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			select {}
		}
		line = strings.TrimRight(line, "\r\n")
		if i := strings.Index(line, "\x1b[200~"); i >= 0 {
			pasting, pasted = true, nil
			line = line[i+len("\x1b[200~"):]
		}
		if pasting {
			if j := strings.Index(line, "\x1b[201~"); j >= 0 {
				pasted = append(pasted, line[:j])
				pasting = false
				handle(strings.Join(pasted, "\n"))
			} else {
				pasted = append(pasted, line)
			}
			continue
		}
		if strings.TrimSpace(line) != "" {
			handle(line)
		}
	}
}

// fakeSettings is the settings file flume gave the fake (--settings), ""
// when none: its hooks are run as Claude Code runs them.
var fakeSettings string

// fakeHook runs the commands the settings' hooks name for event, each
// with a shell and the event's JSON (Claude Code's fields) on its
// standard input, and waits for them, as Claude Code does.
func fakeHook(event string, fields map[string]any) {
	if fakeSettings == "" {
		return
	}
	data, err := os.ReadFile(fakeSettings)
	if err != nil {
		fakeLog("settings: %v", err)
		return
	}
	var settings struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &settings); err != nil {
		fakeLog("settings: %v", err)
		return
	}
	cwd, _ := os.Getwd()
	in := map[string]any{"hook_event_name": event, "session_id": os.Getenv("FLUME_SESSION"), "cwd": cwd}
	for k, v := range fields {
		in[k] = v
	}
	payload, _ := json.Marshal(in)
	for _, m := range settings.Hooks[event] {
		for _, h := range m.Hooks {
			cmd := exec.Command("sh", "-c", h.Command)
			cmd.Stdin = bytes.NewReader(payload)
			if out, err := cmd.CombinedOutput(); err != nil {
				fakeLog("hook %s: %v: %s", event, err, out)
			}
		}
	}
}

// logTyped is a dialog on screen: everything typed from now on lands in
// it and is logged to $HOME/.claude/typed-into-dialog, for scripts to assert
// nothing was. It never returns.
func logTyped(home string) {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f, _ := os.OpenFile(filepath.Join(home, ".claude", "typed-into-dialog"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		fmt.Fprintln(f, sc.Text())
		f.Close()
	}
	select {}
}

// composer draws Claude Code's composer as the real program does (see
// agents/testdata/screens/claude): a rule, the prompt mark, a rule and a
// footer, everything below erased, the cursor put back after the mark so
// that what is typed shows in it. A turn at work says "esc to interrupt"
// in the footer, as Claude Code's does; an idle one its shortcuts.
func composer() { drawComposer("? for shortcuts · ← for agents · Fake Claude") }

func busyComposer() { drawComposer("esc to interrupt · ← for agents · Fake Claude") }

// dialogOverComposer takes the composer away and draws a dialog's rule in
// its place, as Claude Code does (the cursor is in the composer's box).
func dialogOverComposer() {
	fmt.Print("\x1b[1A\r\x1b[J────────────────────\n")
}

func drawComposer(footer string) {
	fmt.Print("\r\x1b[J────────────────────\n❯ \n────────────────────\n  " + footer + "\x1b[2A\r\x1b[2C")
}

func runQuiet(name string, args ...string) {
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(os.Stderr, &out), io.MultiWriter(os.Stderr, &out)
	if err := cmd.Run(); err != nil {
		fakeLog("%s: %s %q: %v: %s", os.Getenv("FLUME_PLACE"), name, args, err, out.String())
	}
}

// fakeLog appends a line to $HOME/.claude/fake-agent.log (the fake keeps
// its files in its own state folder, the one its sandbox lets it write): which plan each fake
// agent ran and which of its commands failed, printed by a wait that
// times out (waitfor, waitws).
func fakeLog(format string, args ...any) {
	f, err := os.OpenFile(filepath.Join(os.Getenv("HOME"), ".claude", "fake-agent.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format+"\n", args...)
}

type fakeTranscript struct {
	path, session, cwd string
	n                  int
}

func (t *fakeTranscript) write(v map[string]any) {
	t.n++
	v["uuid"] = fmt.Sprintf("u-%d", t.n)
	v["sessionId"] = t.session
	v["cwd"] = t.cwd
	v["isSidechain"] = false
	v["timestamp"] = time.Now().UTC().Format(time.RFC3339Nano)
	data, _ := json.Marshal(v)
	f, err := os.OpenFile(t.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	f.Write(append(data, '\n'))
	f.Close()
}

func (t *fakeTranscript) user(prompt string) {
	t.write(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt}, "promptSource": "typed"})
}

func (t *fakeTranscript) assistant(text, stop string) {
	msg := map[string]any{
		"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}, "stop_reason": stop,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
	}
	if m := os.Getenv("FAKE_MODEL"); m != "" {
		msg["model"] = m // a model the configuration may price
	}
	t.write(map[string]any{"type": "assistant", "message": msg})
}

func (t *fakeTranscript) tool(name, command string) {
	msg := map[string]any{
		"role": "assistant", "stop_reason": "tool_use",
		"content": []any{map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", t.n), "name": name, "input": map[string]any{"command": command}}},
		"usage":   map[string]any{"input_tokens": 10, "output_tokens": 5},
	}
	if m := os.Getenv("FAKE_MODEL"); m != "" {
		msg["model"] = m
	}
	t.write(map[string]any{"type": "assistant", "message": msg})
}

// result records the newest tool call's result, its output clipped.
func (t *fakeTranscript) result(output string) {
	if len(output) > 4000 {
		output = output[:4000]
	}
	t.write(map[string]any{"type": "user", "message": map[string]any{"role": "user",
		"content": []any{map[string]any{"type": "tool_result", "tool_use_id": fmt.Sprintf("toolu_%d", t.n-1), "content": output}}}})
}

func (t *fakeTranscript) ask(question string) {
	t.write(map[string]any{"type": "assistant", "message": map[string]any{
		"role": "assistant", "stop_reason": "tool_use",
		"content": []any{map[string]any{"type": "tool_use", "id": "toolu_ask", "name": "AskUserQuestion",
			"input": map[string]any{"questions": []any{map[string]any{"question": question, "options": []any{}}}}}},
	}})
}
