package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
)

// RefSession runs several transactions, one after another, through one
// `git update-ref -z --stdin` (start … prepare … commit each), so that a
// command that moves its refs in steps spends one git process, not one a
// step (a launch's two steps were two of its five processes).
// Every transaction is still all or nothing and compare-and-swap (R2);
// a refused one ends the process, is told exactly as UpdateRefs tells it,
// and the next transaction starts a new one.
//
// Only a session's first transaction reads packed-refs fresh under its
// locks. A later one may check an old value against the packed-refs the
// process read before, which git revalidates by stat alone (see
// updateRefArgs): a ref that another process may move between the
// transactions belongs in the first one, or in UpdateRefs. A session's
// later transactions are for refs the command alone writes meanwhile (a
// place's own record under its repository's launch lock).
//
// Killing the command ends the session: git reads end of input, aborts a
// transaction it has started (releasing its locks) and exits.
type RefSession struct {
	repo    *Repo
	message string
	args    []string
	// branches: the session may move refs outside refs/flume/; otherwise
	// it refuses to.
	branches bool

	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
}

// Reach is what a RefSession may move, and whether git's hooks hear of it.
type Reach int

const (
	// Records: refs under refs/flume/ only, with hooks off (no hook is
	// told of flume's records).
	Records Reach = iota
	// Branches: any ref, with hooks on: a branch moved is news (T1).
	Branches
	// BranchesUnheard: any ref, with hooks off, for a caller that knows
	// no hook would act on what it moves (a launch's new branch beside
	// flume's own hook, which acts on branches moved, not made).
	BranchesUnheard
)

// OpenRefSession starts a session's process at once, so that its start-up
// overlaps the caller's work up to its first transaction. It starts it in
// the caller's goroutine, which waits for git's exec: a goroutine started
// for it ran late (a launch's CPU-bound work held the only running
// thread; DESIGN.md, "Figures from code comments"), and git was then the
// last thing its first transaction waited for. message is the
// reflog message of every transaction (refs under refs/flume/ keep none
// by default); reach says what it may move and whether hooks hear of it.
// The process is not tied to ctx: a step that must finish once begun (a
// launch past its record) finishes through it. Close it.
func (repo *Repo) OpenRefSession(message string, reach Reach) *RefSession {
	s := &RefSession{repo: repo, message: message, args: updateRefArgs(message, reach == Branches), branches: reach != Records}
	s.start()
	return s
}

// start begins a new process; s.mu is held or s is not shared yet. A
// start that fails leaves s.cmd nil and is tried again by the next Update.
func (s *RefSession) start() {
	cmd := exec.Command(s.repo.r.program(), s.args...)
	cmd.Dir = s.repo.Dir
	// LC_ALL=C, as UpdateRefs: a held lock is read from git's words.
	cmd.Env = s.repo.r.env(false, "LC_ALL=C")
	s.stderr.Reset()
	cmd.Stderr = &s.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return
	}
	if err := cmd.Start(); err != nil {
		return
	}
	s.cmd, s.in, s.out = cmd, in, bufio.NewReader(out)
}

// Update applies updates as one transaction, as UpdateRefs does, with the
// same errors: *ConflictError, *LockedError, *UpdateError.
func (s *RefSession) Update(ctx context.Context, updates []RefUpdate) error {
	if len(updates) == 0 {
		return nil
	}
	if !s.branches && !flumeOnly(updates) {
		return fmt.Errorf("update-ref session %q moves only refs under %s", s.message, FlumePrefix)
	}
	body, err := s.repo.encodeUpdates(updates)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		s.start()
	}
	if s.cmd == nil {
		// No process could start: the one-shot path says why.
		return s.repo.UpdateRefsLogged(ctx, s.message, updates)
	}
	err = s.transact(ctx, body)
	return s.repo.refused(ctx, updates, err)
}

// transact sends one transaction and reads git's three answers. Any
// failure ends the process and is returned as git's *Error.
func (s *RefSession) transact(ctx context.Context, body []byte) error {
	var msg bytes.Buffer
	msg.WriteString("start\x00")
	msg.Write(body)
	msg.WriteString("prepare\x00commit\x00")
	answered := make(chan error, 1)
	go func() {
		if _, err := s.in.Write(msg.Bytes()); err != nil {
			answered <- err
			return
		}
		for _, want := range []string{"start: ok\n", "prepare: ok\n", "commit: ok\n"} {
			line, err := s.out.ReadString('\n')
			if err != nil {
				answered <- err
				return
			}
			if line != want {
				answered <- fmt.Errorf("update-ref answered %q, want %q", strings.TrimSpace(line), strings.TrimSpace(want))
				return
			}
		}
		answered <- nil
	}()
	var err error
	select {
	case err = <-answered:
	case <-ctx.Done():
		// The transaction may or may not have committed: the caller reads
		// the refs again, as after a killed one-shot update-ref.
		_ = s.cmd.Process.Kill() // gone already is as good
		if werr := <-answered; werr != nil {
			err = fmt.Errorf("%w (its git ended: %v)", ctx.Err(), werr)
		} else {
			err = ctx.Err()
		}
	}
	if err == nil {
		return nil
	}
	return s.end(err)
}

// end closes the process after a failure and returns git's error.
func (s *RefSession) end(cause error) error {
	s.in.Close()
	werr := s.cmd.Wait()
	s.cmd = nil
	if errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded) {
		return cause
	}
	if werr == nil {
		werr = cause
	}
	err := wrapExit(s.args, werr, s.stderr.Bytes())
	if gerr, ok := err.(*Error); ok {
		gerr.Disk = fullDisk(s.repo.Dir, gerr.Stderr)
	}
	return err
}

// Close ends the session: git reads end of input and exits, with no
// transaction open, so nothing of a ref changes. It is not waited for (a
// launch spent a millisecond of its end on it); it is reaped in the
// background, or by init once the caller has exited. A closed session is
// not used again.
func (s *RefSession) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	_ = s.in.Close()
	go func(cmd *exec.Cmd) { _ = cmd.Wait() }(s.cmd) // reaped; its end was read as its answers
	s.cmd = nil
	return nil
}
