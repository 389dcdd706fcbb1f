package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNotFound is a program that is not on PATH.
var ErrNotFound = exec.ErrNotFound

// StepEnv is the whole environment of a repository step (SPEC X4): PATH,
// HOME, LANG and TERM from the caller, then extra (flume's own FLUME_*
// variables). Nothing else of the caller's environment reaches it: not a
// hook's GIT_DIR family, not a credential, not the agent session's
// variables. Readying and removal steps (L2, T3) and workspace checks (P3)
// all run in it.
func StepEnv(caller []string, extra ...string) []string {
	return append(KeepEnv(caller, "PATH", "HOME", "LANG", "TERM"), extra...)
}

// KeepEnv is the part of environ whose variables names lists, in its
// order; a name ending in "*" keeps every variable it begins.
func KeepEnv(environ []string, names ...string) []string {
	var env []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if slices.ContainsFunc(names, func(n string) bool {
			prefix, wild := strings.CutSuffix(n, "*")
			return name == n || wild && strings.HasPrefix(name, prefix)
		}) {
			env = append(env, kv)
		}
	}
	return env
}

// hookVars are the variables git exports to hooks and to commands run under
// `git -C`/`--git-dir` that would point a child git at the wrong repository
// (R9). They are removed before git runs against any path.
var hookVars = map[string]bool{
	"GIT_DIR":                          true,
	"GIT_WORK_TREE":                    true,
	"GIT_INDEX_FILE":                   true,
	"GIT_OBJECT_DIRECTORY":             true,
	"GIT_ALTERNATE_OBJECT_DIRECTORIES": true,
	"GIT_COMMON_DIR":                   true,
	"GIT_NAMESPACE":                    true,
	"GIT_PREFIX":                       true,
	"GIT_INTERNAL_SUPER_PREFIX":        true,
	"GIT_QUARANTINE_PATH":              true,
	"GIT_OPTIONAL_LOCKS":               true,
}

// CleanGitEnv returns env without the variables that would redirect git
// to another repository (R9): internal/git runs every git with it, and
// callers starting other programs (agents, repository steps) apply the
// same hygiene.
func CleanGitEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if hookVars[name] {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Cmd is a program to run: never through a shell, with exactly Env.
type Cmd struct {
	Path   string
	Args   []string
	Dir    string
	Env    []string  // nil: this process's own (the pane host's client)
	Stdin  io.Reader // nil reads as empty
	Stdout io.Writer // nil discards
	Stderr io.Writer // nil discards
	// Group runs it in a process group of its own: when ctx ends the
	// whole group is killed, not its first process alone, and its output
	// is waited for GroupWait at most (a child that left the group may
	// hold it open).
	Group bool
}

// GroupWait is how long a killed group's output is read for.
const GroupWait = 5 * time.Second

// ExitError is a program that ran and exited with a status other than 0.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// ExitCode is the status a program exited with: 0 for a nil error, -1 when
// it did not run to an exit of its own (not found, killed, cancelled).
func ExitCode(err error) int {
	var exit *ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.Code
	}
	return -1
}

// Run runs c to its end and returns nil, an *ExitError, or why it could
// not run (wrapping ErrNotFound for a program not on PATH). Cancelling ctx
// kills it.
func Run(ctx context.Context, c Cmd) error {
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	cmd.Dir, cmd.Env = c.Dir, c.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	if c.Group {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = GroupWait
	}
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() >= 0 {
		return &ExitError{Code: exit.ExitCode()}
	}
	return err
}

// Output runs c and returns what it wrote to standard output; a failure
// carries the end of its standard error.
func Output(ctx context.Context, c Cmd) (string, error) {
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := Run(ctx, c); err != nil {
		return out.String(), fmt.Errorf("%w: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// TailLines is how much of a step's output its record keeps: the last
// lines, for a person to see why it failed without opening its log.
const TailLines = 40

// NotFound is the exit status RunStep gives a program it cannot find or
// start, as a shell does.
const NotFound = 127

// RunStep runs a repository step (SPEC X4): c, never through a shell, in
// the environment the caller made with StepEnv, its output to c.Stdout and
// c.Stderr. It returns the step's exit status; a program that cannot be
// found or started exits NotFound, its reason written to c.Stderr, as in a
// shell. err is set only when the step did not run to an exit of its own
// (killed, or ctx cancelled: then its whole process group is killed).
// Readying, removal steps, the lander's and workspace checks all run
// through it.
func RunStep(ctx context.Context, c Cmd) (int, error) {
	c.Group = true // a step's whole tree ends with it
	err := Run(ctx, c)
	switch code := ExitCode(err); {
	case code >= 0:
		return code, nil
	case errors.Is(err, ErrNotFound), errors.Is(err, os.ErrNotExist), errors.Is(err, os.ErrPermission):
		if c.Stderr != nil {
			fmt.Fprintf(c.Stderr, "%v\n", err)
		}
		return NotFound, nil
	}
	return -1, err
}

// Detach starts git-flume itself with args in a session of its own, in
// dir, with env, and does not wait: background work (a watcher, the hook's
// advance, a workspace observer) must outlive the command, and the end of
// an agent's session, that started it.
func Detach(args []string, dir string, env []string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// Exited reads how process pid ended while it is a zombie its parent has
// not reaped yet (the wait status the kernel keeps, /proc/<pid>/stat's
// exit_code): its exit status, or the signal that killed it. ok is false
// when pid is not a zombie here, or has a thread that still runs (ended).
func Exited(pid int) (status, signal int, ok bool) {
	f, ok := stat(pid)
	// The state is field 3, exit_code field 52.
	if !ok || f[0] != "Z" || len(f) < 50 || !ended(pid) {
		return 0, 0, false
	}
	ws, err := strconv.Atoi(f[49])
	if err != nil {
		return 0, 0, false
	}
	w := syscall.WaitStatus(ws)
	if w.Signaled() {
		return 0, int(w.Signal()), true
	}
	return w.ExitStatus(), 0, true
}

// Started returns process pid's start time as the kernel counts it
// (/proc/<pid>/stat's starttime), and whether it runs (a zombie has
// ended): a pid and its start time name one process, never a later one
// that was given the same pid.
func Started(pid int) (string, bool) {
	f, ok := stat(pid)
	if !ok || len(f) < 20 || (f[0] == "Z" && ended(pid)) {
		return "", false
	}
	return f[19], true // field 22
}

// Alive reports whether process pid runs on this host: it exists and has
// not ended (a process that exited and was not yet reaped is a zombie).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	f, ok := stat(pid)
	return !ok || f[0] != "Z" || !ended(pid)
}

// stat reads /proc/<pid>/stat's fields after the command name, the state
// first; ok is false when there is no such process.
func stat(pid int) ([]string, bool) {
	return statFile(fmt.Sprintf("/proc/%d/stat", pid))
}

// statFile reads the fields of a process's or a thread's stat file after
// the command name; ok is false when it cannot be read.
func statFile(path string) ([]string, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return nil, false
	}
	f := strings.Fields(string(data[i+2:]))
	return f, len(f) > 0
}

// ended reports whether every thread of process pid, whose first thread
// reads as a zombie, has ended. The first thread is a zombie while others
// run when it exited on its own, and for a moment while another thread
// executes a new program: the kernel shows the old first thread as a
// zombie with status 0 until the new program takes over its pid (a Go
// program's exec runs on any of its threads; found under load, where a
// launcher's exec read as its agent exiting with status 0).
func ended(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return true
	}
	for _, t := range tasks {
		// A thread whose file cannot be read has gone.
		if f, ok := statFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name())); ok && f[0] != "Z" && f[0] != "X" {
			return false
		}
	}
	return true
}

// LookPath finds program as a process given environ would: a name with a
// slash is taken as it is, any other is searched in environ's PATH. It
// returns the file, or an error wrapping ErrNotFound.
func LookPath(program string, environ []string) (string, error) {
	executable := func(path string) bool {
		info, err := os.Stat(path)
		return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
	}
	if strings.Contains(program, "/") {
		if executable(program) {
			return program, nil
		}
		return "", fmt.Errorf("%s: %w", program, ErrNotFound)
	}
	path := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		if f := dir + "/" + program; executable(f) {
			return f, nil
		}
	}
	return "", fmt.Errorf("%s: %w", program, ErrNotFound)
}

// Parent returns process pid's parent and its command name (comm), from
// /proc/<pid>/stat; ok is false when pid cannot be read.
func Parent(pid int) (ppid int, comm string, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", false
	}
	// pid (comm) state ppid …; comm may hold spaces and parens.
	open, close := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || close < open {
		return 0, "", false
	}
	f := strings.Fields(string(data[close+1:]))
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(f[1])
	if err != nil {
		return 0, "", false
	}
	return ppid, string(data[open+1 : close]), true
}

// Getenv returns the value of variable name in process pid's environment
// as it started (/proc/<pid>/environ), readable for the user's own
// processes only.
func Getenv(pid int, name string) (string, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return "", false
	}
	prefix := []byte(name + "=")
	for kv := range bytes.SplitSeq(data, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v), true
		}
	}
	return "", false
}

// WithEnv returns the live processes (this one aside) whose environment
// holds the variable assignment kv exactly.
func WithEnv(kv string) []int {
	want := []byte(kv + "\x00")
	return scan(func(pid int) bool {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		return err == nil && bytes.Contains(append(env, 0), want)
	})
}

// WithEnvAll returns the live processes (this one aside) whose environment
// holds every assignment of kvs exactly.
func WithEnvAll(kvs ...string) []int {
	if len(kvs) == 0 {
		return nil
	}
	var pids []int
	for _, pid := range WithEnv(kvs[0]) {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		env = append([]byte{0}, append(env, 0)...)
		all := true
		for _, kv := range kvs[1:] {
			all = all && bytes.Contains(env, []byte("\x00"+kv+"\x00"))
		}
		if all {
			pids = append(pids, pid)
		}
	}
	return pids
}

// CwdUnder returns the live processes (this one aside) whose working
// directory is dir or inside it.
func CwdUnder(dir string) []int {
	return scan(func(pid int) bool { return CwdIn(pid, dir) })
}

// Listening returns the live processes (this one aside) with a TCP socket
// listening on any of ports, on any address (IPv4 or IPv6).
func Listening(ports []int) []int {
	want := map[int]bool{}
	for _, p := range ports {
		want[p] = true
	}
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(f[1], ":")
			port, err := strconv.ParseInt(hexPort, 16, 32)
			if ok && err == nil && want[int(port)] {
				inodes["socket:["+f[9]+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return nil
	}
	return scan(func(pid int) bool {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			return false
		}
		for _, fd := range fds {
			if link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && inodes[link] {
				return true
			}
		}
		return false
	})
}

// scan returns the live processes (this one aside) that match.
func scan(match func(pid int) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && pid != self && match(pid) && Alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Group is process pid's process group (/proc/<pid>/stat's pgrp), 0 when
// it cannot be read: a shell with job control puts each job in a group of
// its own, and the shell itself stays in another.
func Group(pid int) int {
	f, ok := stat(pid)
	if !ok || len(f) < 3 {
		return 0
	}
	g, _ := strconv.Atoi(f[2]) // field 5
	return g
}

// Owner is the user id process pid runs as, -1 when it cannot be read.
func Owner(pid int) int {
	info, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	if err != nil {
		return -1
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return -1
	}
	return int(st.Uid)
}

// CwdIn reports whether process pid's working directory is dir or inside it.
func CwdIn(pid int, dir string) bool {
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	return err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/"))
}

// Ancestors returns the processes above pid, its parent first.
func Ancestors(pid int) []int {
	var out []int
	for i := 0; i < 64; i++ {
		ppid, _, ok := Parent(pid)
		if !ok || ppid <= 1 {
			return out
		}
		out = append(out, ppid)
		pid = ppid
	}
	return out
}
