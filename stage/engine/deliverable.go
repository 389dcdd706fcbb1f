// What a stage delivered, judged in git (K6): the deliverable at the
// branch head, a change's ticked tasks, and the stage's state shown in the
// pane host's own view.

package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	agent "github.com/git-flume/git-flume/agents"
	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// report shows the stage's state in the pane host's own view of the
// agent's pane, where it has one (herdr's sidebar, O3). Best effort: the
// record, not the sidebar, is the truth.
func report(ctx context.Context, env *stage.Env, p *record.Place, st *record.StageRecord) {
	if st.Agent == nil || st.Agent.Pane == "print" {
		return
	}
	r, ok := env.Engine.HostOf(st.Agent).(agent.Reporter)
	if !ok {
		return
	}
	state := "unknown"
	switch st.State {
	case agentrun.StateStarting, agentrun.StateUnknown, agentrun.StateWorking:
		state = "working"
	case agentrun.StateWaiting, agentrun.StateStuck, agentrun.StateBlocked, agentrun.StateNeverStarted, agentrun.StateCut:
		state = "blocked"
	case agentrun.StateDelivered, record.StateLanded:
		state = "idle"
	}
	msg := fmt.Sprintf("%s: stage %s (%d/%d) %s", p.ID, st.Name, p.Current+1, len(p.Stages), st.State)
	if st.Need != "" {
		msg += ": needs " + st.Need
	} else if st.Reason != "" {
		msg += ": " + st.Reason
	}
	// herdr's sidebar row is a view of the record, best effort: the
	// record moved whatever herdr says.
	_ = r.Report(ctx, st.Agent.Pane, state, msg)
}

// deliverable checks the stage's deliverable at head (K6) and, for a
// change, counts its tasks.
func deliverable(ctx context.Context, repo *git.Repo, p *record.Place, st *record.StageRecord, head string) (bool, string, *record.TaskCount, error) {
	if head == "" {
		return false, "", nil, nil
	}
	switch d := st.Deliverable; {
	case d == stage.DeliverCommit:
		if st.Base == "" || head == st.Base {
			break
		}
		if len(st.Accepted) > 0 {
			// what accept brought from a delegated place is the
			// child's work, never this stage's own commit.
			n, err := repo.OwnCommits(ctx, st.Base, head, st.Accepted)
			if err != nil || n == 0 {
				return false, "", nil, err
			}
		}
		return true, "commit " + head, nil, nil
	case d == stage.DeliverTasks:
		return tasksDelivered(ctx, repo, p, head)
	case d == stage.DeliverChange:
		// K3: the change is committed whole, proposal and tasks.
		dir := "openspec/changes/" + p.Name + "/"
		for _, f := range []string{"proposal.md", "tasks.md"} {
			if _, err := repo.ReadFile(ctx, head, dir+f); errors.Is(err, git.ErrNotExist) {
				return false, "", nil, nil
			} else if err != nil {
				return false, "", nil, err
			}
		}
		return true, "OpenSpec change " + dir + " committed at " + head, nil, nil
	case d == stage.DeliverLanded:
		j, err := JudgeLanding(ctx, repo, p)
		if err != nil {
			return false, "", nil, err
		}
		if j.Landed {
			return true, fmt.Sprintf("%s landed on %s", p.Branch, p.Target), nil, nil
		}
	case strings.HasPrefix(d, stage.DeliverFile):
		ok, how := fileDelivered(ctx, repo, p, st, head)
		return ok, how, nil, nil
	}
	return false, "", nil, nil
}

// tasksDelivered reads a change's tasks at head: delivered when every one
// is ticked; the count either way.
func tasksDelivered(ctx context.Context, repo *git.Repo, p *record.Place, head string) (bool, string, *record.TaskCount, error) {
	path := "openspec/changes/" + p.Name + "/tasks.md"
	data, err := repo.ReadFile(ctx, head, path)
	if errors.Is(err, git.ErrNotExist) {
		return false, "", nil, nil
	}
	if err != nil {
		return false, "", nil, err
	}
	tc := CountTasks(data)
	if tc.Total > 0 && tc.Done == tc.Total {
		return true, fmt.Sprintf("all %d tasks ticked at %s", tc.Total, head), &tc, nil
	}
	return false, "", &tc, nil
}

// fileDelivered reads a file deliverable at head: delivered when its
// content differs from what the run found (K4), or, for a question's round,
// when the place's work tree holds it so.
func fileDelivered(ctx context.Context, repo *git.Repo, p *record.Place, st *record.StageRecord, head string) (bool, string) {
	path, ok := deliverablePath(st)
	if !ok {
		return false, ""
	}
	// K4: a file as the run found it delivers nothing (a concluded
	// round never satisfies the next).
	if data, err := repo.ReadFile(ctx, head, path); err == nil && contentID(data) != st.Preexisting {
		return true, path + " committed at " + head
	}
	if roundStage(p, st) {
		// K4: a question's conclusion need not be committed.
		if data, err := os.ReadFile(filepath.Join(p.Path, path)); err == nil && contentID(data) != st.Preexisting {
			return true, path + " written in the place"
		}
	}
	return false, ""
}

// deliverablePath is the place-relative path of a file deliverable, and
// false when the stage's deliverable is no file or names one outside the
// place (a record is read as untrusted input).
func deliverablePath(st *record.StageRecord) (string, bool) {
	path, ok := strings.CutPrefix(st.Deliverable, stage.DeliverFile)
	return path, ok && filepath.IsLocal(path)
}

// roundStage reports a question's round (K4): its conclusion need not be
// committed, and it may stop short saying where the next round starts.
func roundStage(p *record.Place, st *record.StageRecord) bool {
	return p.PlaceKind == "question" || st.Name == "round"
}

// contentID is what a file deliverable's content is compared by: the hex
// SHA-256 of its bytes.
func contentID(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// preexisting is the content id of stage st's file deliverable as its run
// finds it in the place, "" when it is not there (or st has no file
// deliverable).
func preexisting(p *record.Place, st *record.StageRecord) string {
	path, ok := deliverablePath(st)
	if !ok {
		return ""
	}
	data, err := os.ReadFile(filepath.Join(p.Path, path))
	if err != nil {
		return ""
	}
	return contentID(data)
}

// CountTasks counts the tasks of a tasks.md as the openspec CLI does (K6):
// a bullet ("-", "*", "+" or "1."), then a box of at most one character:
// "[x]" or "[X]" (spaces aside) is done, "[ ]", "[~]", "[-]" and the like
// are open; "[xx]" is not a task.
func CountTasks(data []byte) record.TaskCount {
	var tc record.TaskCount
	for line := range strings.SplitSeq(string(data), "\n") {
		m := taskLine().FindStringSubmatch(line)
		if m == nil {
			continue
		}
		box := strings.TrimSpace(m[1])
		if len(box) > 1 {
			continue
		}
		tc.Total++
		if box == "x" || box == "X" {
			tc.Done++
		}
	}
	return tc
}

// LandingJudgement is how a place's branch stands against its target (T4).
type LandingJudgement struct {
	// Head is the branch head judged; "" when the branch is gone.
	Head string
	// Landed: the branch's work is on the target.
	Landed bool
	// Unlanded counts commits whose patch the target lacks.
	Unlanded int
	// Unknown: the target is missing, so flume cannot tell.
	Unknown bool
}

// JudgeLanding reads the branch once and decides, at that head, whether its work
// has landed on the target: merged (head is an ancestor), rebased or
// cherry-picked (git cherry finds every patch upstream), or squash-merged
// (the whole branch diff's patch id equals one target commit's).
func JudgeLanding(ctx context.Context, repo *git.Repo, p *record.Place) (LandingJudgement, error) {
	var j LandingJudgement
	head, err := repo.ResolveRef(ctx, p.BranchRef())
	if errors.Is(err, git.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return j, err
	}
	j.Head = head
	if head == p.Base {
		return j, nil // no work was committed: nothing to land
	}
	target, err := repo.ResolveCommit(ctx, "refs/heads/"+p.Target)
	if errors.Is(err, git.ErrNotExist) {
		j.Unknown = true
		return j, nil
	}
	if err != nil {
		return j, err
	}
	if j.Landed, err = repo.IsAncestor(ctx, head, target); err != nil || j.Landed {
		return j, err
	}
	cherry, err := repo.Cherry(ctx, target, head)
	if err != nil {
		return j, err
	}
	for _, c := range cherry {
		if !c.Upstream {
			j.Unlanded++
		}
	}
	if j.Unlanded == 0 {
		j.Landed = true
		return j, nil
	}
	mb, err := repo.MergeBase(ctx, target, head)
	if err != nil {
		return j, err
	}
	whole, err := repo.DiffPatchID(ctx, mb, head)
	if err != nil || whole == "" {
		return j, err
	}
	onTarget, err := repo.CommitPatchIDs(ctx, mb, target)
	if err != nil {
		return j, err
	}
	if slices.Contains(onTarget, whole) {
		j.Landed, j.Unlanded = true, 0
	}
	return j, nil
}

// JudgeCached is tidy's judgement of place p's branch (T4), judge's made
// once: from its head and target as the tidy first read them
// (UnlandedCache.ReadTips), nothing to land when the head is its base, as
// JudgeLanding finds; the cached judgement when both stand where they
// stood when it was judged unlanded; judge's otherwise. A head read early
// that moved since only keeps the place: its branch is deleted leased on
// the head judged. A judgement is kept only when the target did not move
// while it was made.
func JudgeCached(ctx context.Context, repo *git.Repo, c *stage.UnlandedCache, p *record.Place, judge func(context.Context, *record.Place) (LandingJudgement, error)) (LandingJudgement, error) {
	head, target := c.Tip(p.BranchRef()), c.Tip("refs/heads/"+p.Target)
	switch {
	case head != "" && head == p.Base:
		return LandingJudgement{Head: head}, nil
	case head == "" || target == "":
		return judge(ctx, p) // unread, or gone: judge reads its own
	}
	if n, ok := c.Known(head, target); ok {
		return LandingJudgement{Head: head, Unlanded: n}, nil
	}
	j, err := judge(ctx, p)
	if err == nil && j.Head == head && !j.Landed && !j.Unknown && j.Unlanded > 0 {
		if after, err := repo.ResolveRef(ctx, "refs/heads/"+p.Target); err == nil && after == target {
			c.Keep(head, target, j.Unlanded)
		}
	}
	return j, err
}
