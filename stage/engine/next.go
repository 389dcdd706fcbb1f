// What moves a waiting stage on: the one command status, explain and a
// notification's reply all name.

package engine

import (
	"errors"
	"fmt"
	"os"
	"strings"

	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/stage/record"
)

// NextStep is the command that moves p's current stage on when it waits
// for someone, given its agent as status shows it; "" when the stage moves
// on by itself or has ended.
func NextStep(p *record.Place, agent string) string {
	st := p.Stages[p.Current]
	if p.Dropped != nil && p.Kept != "" {
		// never the command that just refused, alone.
		return "first what kept it: " + p.Kept + "; then git flume tidy"
	}
	if p.Dropped != nil {
		// a dropped place's work is over; nothing restarts it.
		return "git flume tidy (the place was dropped; tidy removes it once nothing in it would be lost)"
	}
	// a delegated place is moved on by its commissioner.
	if next, ok := delegatedNext(p, &st, agent); ok {
		return next
	}
	up := agent == "up"
	retry := "git flume retry " + p.ID
	if up {
		retry = "git flume retry --force " + p.ID
	}
	if _, err := os.Stat(p.Path); errors.Is(err, os.ErrNotExist) && p.Phase == record.PhaseMade {
		// A10: nothing starts anywhere but the place's own worktree.
		return recoverPlace(p)
	}
	switch st.State {
	case agentrun.StateWaiting:
		return fmt.Sprintf("git flume tell %s 'ANSWER'", p.ID)
	case agentrun.StateStuck:
		return fmt.Sprintf("git flume tell %s 'TEXT', or %s", p.ID, retry)
	case agentrun.StateBlocked:
		return blockedNext(p, &st, up, retry)
	case agentrun.StateNeverStarted, agentrun.StateCut:
		return retry
	case agentrun.StateParked:
		if st.ParkedUntil != nil {
			return fmt.Sprintf("nothing: it resumes by itself after %s; git flume tell %s 'TEXT' goes on sooner", st.ParkedUntil.UTC().Format("2006-01-02 15:04 UTC"), p.ID)
		}
	case agentrun.StateStarting, agentrun.StateUnknown:
		if agent == "operator" {
			return "run the command git flume log " + p.ID + " shows"
		}
	}
	return ""
}

// delegatedNext is what moves a delegated place on, its commissioner's
// verb; false for a place nobody but its own agent moves.
func delegatedNext(p *record.Place, st *record.StageRecord, agent string) (string, bool) {
	switch record.DelegationState(p) {
	case record.DelegationFinished:
		return fmt.Sprintf("git flume accept %s, or git flume reopen %s --why 'REASON'", p.ID, p.ID), true
	case record.DelegationBlocked:
		switch {
		case st.BlockedBy() == agentrun.BlockDialog && agent == "up":
			// A10: a dialog is answered in the pane, never told.
			return fmt.Sprintf("git flume attach %s and answer it there (it goes on by itself), or git flume rollback --delegation %s", p.ID, p.ID), true
		case st.BlockedBy() == agentrun.BlockPlace:
			return fmt.Sprintf("git flume rollback --delegation %s (its worktree is gone; its branch keeps its commits)", p.ID), true
		}
		return fmt.Sprintf("git flume unblock %s --with 'TEXT', or git flume rollback --delegation %s", p.ID, p.ID), true
	}
	return "", false
}

// blockedNext is what moves blocked stage st of p on, up saying whether its
// agent is in its pane, retry the command that starts the stage again.
func blockedNext(p *record.Place, st *record.StageRecord, up bool, retry string) string {
	switch st.BlockedBy() {
	case agentrun.BlockDialog:
		// A10: a dialog is answered by a person in the pane, never
		// told.
		if up {
			return fmt.Sprintf("git flume attach %s and answer it there (the stage goes on by itself), or %s", p.ID, retry)
		}
	case agentrun.BlockReady:
		return fmt.Sprintf("fix the readying step, then %s", retry)
	case agentrun.BlockPlace:
		if strings.HasPrefix(st.Reason, branchWritten) {
			return fmt.Sprintf("look at git log %s and git reflog %s (what git gave it); set it back with git update-ref, then %s", p.Branch, p.Branch, retry)
		}
		if strings.HasPrefix(st.Reason, gitFilesChanged) {
			return fmt.Sprintf("look at what its agent wrote before running git in %s; git worktree repair %s writes its .git file again; then %s, or git flume drop %s", p.Path, p.Path, retry, p.ID)
		}
		return recoverPlace(p)
	case agentrun.BlockRole:
		if strings.Contains(st.Reason, "without a sandbox") {
			return fmt.Sprintf("run it where the kernel has Landlock with flume.sandbox on, or drop the role's path-restrictions; then %s", retry)
		}
		return fmt.Sprintf("launch the work again with --agent claude, codex or pi, or drop the role's tools and path-restrictions; then %s", retry)
	}
	if up && st.BlockedBy() != agentrun.BlockDialog {
		return fmt.Sprintf("git flume tell %s 'TEXT', or %s", p.ID, retry)
	}
	return retry
}
