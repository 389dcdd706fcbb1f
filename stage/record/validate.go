package record

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
)

// Every place record is checked before any code acts on it, local or
// fetched: a record is input, and a hostile host sharing the sync remote
// (or a hand edit) can write any bytes into one. The store runs this check
// on every read and write of a "place", so an invalid record is a
// *refs.MalformedError named by its ref (R5): status and fsck report it,
// and nothing can act on it or overwrite it.
// PlaceKind is the place record, stage's kind.
var PlaceKind = refs.Kind{Name: "place", Schema: 1, Validate: validatePlaceRecord}

// maxStages bounds a kind's stages in a record.
const maxStages = 64

func validatePlaceRecord(ref string, data []byte) (any, error) {
	var p Place
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("not a place record: %v", err)
	}
	if err := validatePlace(strings.TrimPrefix(ref, PlacePrefix), &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// DecodePlace returns the place a record holds: the one its validation
// decoded, when no one took it yet, else a fresh decoding.
func DecodePlace(rec *refs.Record) (*Place, error) {
	if p, ok := rec.Take().(*Place); ok {
		return p, nil
	}
	var p Place
	if err := rec.Decode(&p); err != nil {
		return nil, err
	}
	return &p, nil
}

// validatePlace checks that a place record is the record flume would have
// written for the place id: the names valid (R6), the branch
// <kind>/<name> and the path <repo>/places/<kind>--<name> derived from
// them, every commit a full object id, the current stage one of its stages.
// What it cannot check alone (that Repo is this repository's main checkout,
// that no part of the path is a symlink) is checked where a place is acted
// on (CheckHome).
func validatePlace(id string, p *Place) error {
	if p.Kind != "place" || p.Schema != 1 {
		return fmt.Errorf("invalid place record: kind %q schema %d, want place 1", p.Kind, p.Schema)
	}
	for _, check := range []func(id string, p *Place) error{placeNames, placeState} {
		if err := check(id, p); err != nil {
			return fmt.Errorf("invalid place record: %v", err)
		}
	}
	for i := range p.Stages {
		if err := validateStage(p, &p.Stages[i]); err != nil {
			return fmt.Errorf("invalid place record: stage %d: %v", i+1, err)
		}
	}
	if err := validateDelegation(p); err != nil {
		return fmt.Errorf("invalid place record: %v", err)
	}
	return nil
}

// placeNames checks what a place's names derive (R6): its id, branch and
// path from its kind and name, its repository a clean absolute path, its
// host a host's name.
func placeNames(id string, p *Place) error {
	if err := refs.ValidateName("kind", p.PlaceKind); err != nil {
		return err
	}
	if err := refs.ValidateName("name", p.Name); err != nil {
		return err
	}
	if want := p.PlaceKind + "--" + p.Name; p.ID != want || id != want {
		return fmt.Errorf("id %q under ref name %q, want %q for kind %q and name %q", p.ID, id, want, p.PlaceKind, p.Name)
	}
	if want := p.PlaceKind + "/" + p.Name; p.Branch != want {
		return fmt.Errorf("branch %q, want %q", p.Branch, want)
	}
	if !filepath.IsAbs(p.Repo) || filepath.Clean(p.Repo) != p.Repo || p.Repo == "/" {
		return fmt.Errorf("repo %q is not a clean absolute path", p.Repo)
	}
	if want := filepath.Join(p.Repo, PlacesDir, p.ID); p.Path != want {
		return fmt.Errorf("path %q, want %q", p.Path, want)
	}
	if err := checkAdoption(p.Adopts); err != nil {
		return err
	}
	if p.Runner != "" {
		if err := refs.ValidateName("runner", p.Runner); err != nil {
			return err
		}
	}
	return refs.ValidateHost(p.Host)
}

// placeState checks where a place stands: its phase, full object ids, a
// branch name for its target, a current stage among its stages, process
// ids that can be.
func placeState(_ string, p *Place) error {
	switch p.Phase {
	case PhaseMaking, PhaseMade, PhaseTidied:
	default:
		return fmt.Errorf("phase %q", p.Phase)
	}
	if !git.IsObjectID(p.Base) {
		return fmt.Errorf("base %q is not a full object id", p.Base)
	}
	if p.ConfigAt != "" && !git.IsObjectID(p.ConfigAt) {
		return fmt.Errorf("configAt %q is not a full object id", p.ConfigAt)
	}
	if err := git.CheckRefName("refs/heads/" + p.Target); err != nil || p.Target == "" {
		return fmt.Errorf("target %q is not a branch name", p.Target)
	}
	if n := len(p.Stages); n == 0 || n > maxStages {
		return fmt.Errorf("%d stages, want 1 to %d", n, maxStages)
	}
	if p.Current < 0 || p.Current >= len(p.Stages) {
		return fmt.Errorf("current stage %d, want 0 to %d", p.Current, len(p.Stages)-1)
	}
	procs := []*Proc{p.Launcher, p.Watcher}
	if p.Ready != nil {
		procs = append(procs, p.Ready.Running)
	}
	for _, pr := range procs {
		if pr != nil && pr.PID < 0 {
			return fmt.Errorf("process id %d", pr.PID)
		}
		if pr != nil && (len(pr.Start) > 20 || strings.Trim(pr.Start, "0123456789") != "") {
			return fmt.Errorf("process start %q, want clock ticks", pr.Start)
		}
	}
	if p.Tidied != nil && p.Tidied.BranchHead != "" && !git.IsObjectID(p.Tidied.BranchHead) {
		return fmt.Errorf("tidied branch head %q", p.Tidied.BranchHead)
	}
	return nil
}

// maxChildren bounds the places one place's record names as delegated.
const maxChildren = 256

// validateDelegation checks a delegation's links (R5): a parent and
// children named as place ids, never the place itself; a child landing on
// its parent's branch, from a stage and run that can exist, with an
// outcome flume writes and a kept work tree among the parent's snapshots.
func validateDelegation(p *Place) error {
	if len(p.Children) > maxChildren {
		return fmt.Errorf("%d children, want at most %d", len(p.Children), maxChildren)
	}
	for _, c := range p.Children {
		if _, err := PlaceID(c); err != nil || c == p.ID || strings.Contains(c, "/") {
			return fmt.Errorf("child %q is not another place's id", c)
		}
	}
	d := p.Parent
	if d == nil {
		return nil
	}
	if _, err := PlaceID(d.Parent); err != nil || d.Parent == p.ID || strings.Contains(d.Parent, "/") {
		return fmt.Errorf("parent %q is not another place's id", d.Parent)
	}
	kind, name, _ := strings.Cut(d.Parent, "--")
	if p.Target != kind+"/"+name {
		return fmt.Errorf("target %q, want its parent's branch %s/%s", p.Target, kind, name)
	}
	if d.Stage < 0 || d.Stage >= maxStages || d.Run < 0 {
		return fmt.Errorf("delegated from stage %d run %d", d.Stage, d.Run)
	}
	switch d.Outcome {
	case "", OutcomeAccepted, OutcomeRolledBack:
	default:
		return fmt.Errorf("delegation outcome %q", d.Outcome)
	}
	if s := d.Start; s != nil && (!strings.HasPrefix(s.Ref, refs.SnapshotPrefix+d.Parent+"/") || !git.IsObjectID(s.Commit) || !git.IsObjectID(s.Tree)) {
		return fmt.Errorf("delegation snapshot %q at %q is not one of its parent's", s.Ref, s.Commit)
	}
	return nil
}

func validateStage(p *Place, st *StageRecord) error {
	if st.Name == "" || st.Runs < 0 {
		return fmt.Errorf("name %q, runs %d", st.Name, st.Runs)
	}
	if st.Preexisting != "" && !isContentID(st.Preexisting) {
		return fmt.Errorf("preexisting %q is not a content id", st.Preexisting)
	}
	if r := st.Resume; r != nil && (!filepath.IsAbs(r.Transcript) || strings.ContainsFunc(r.Program+r.Session+r.Transcript, unicode.IsControl)) {
		return fmt.Errorf("resume of session %q from %q: not a session and an absolute transcript path", r.Session, r.Transcript)
	}
	if st.Starter != nil && st.Starter.PID < 0 {
		return fmt.Errorf("starter process id %d", st.Starter.PID)
	}
	for _, id := range []string{st.Base, st.At} {
		if id != "" && !git.IsObjectID(id) {
			return fmt.Errorf("commit %q is not a full object id", id)
		}
	}
	// accepted heads are passed to git as revisions.
	if len(st.Accepted) > maxChildren {
		return fmt.Errorf("%d accepted heads, want at most %d", len(st.Accepted), maxChildren)
	}
	for _, id := range st.Accepted {
		if !git.IsObjectID(id) {
			return fmt.Errorf("accepted head %q is not a full object id", id)
		}
	}
	runs := st.Earlier
	if st.Agent != nil {
		runs = append(runs[:len(runs):len(runs)], *st.Agent)
	}
	for _, a := range runs {
		if a.PID < 0 || a.Sends < 0 || a.Tells < 0 {
			return fmt.Errorf("agent pid %d, sends %d, tells %d", a.PID, a.Sends, a.Tells)
		}
		if x := a.Exit; x != nil && (x.Status < 0 || x.Status > 255 || x.Signal < 0 || x.Signal > 64) {
			return fmt.Errorf("agent exit status %d, signal %d", x.Status, x.Signal)
		}
	}
	if len(st.Earlier) >= max(st.Runs, 1) {
		return fmt.Errorf("%d earlier runs of %d", len(st.Earlier), st.Runs)
	}
	snaps := st.Snapshots
	if st.Start != nil {
		snaps = append([]Snapshot{*st.Start}, snaps...)
	}
	for _, s := range snaps {
		if !strings.HasPrefix(s.Ref, refs.SnapshotPrefix+p.ID+"/") || !git.IsObjectID(s.Commit) {
			return fmt.Errorf("snapshot %q at %q is not one of this place's", s.Ref, s.Commit)
		}
	}
	return nil
}

// isContentID reports a hex SHA-256 (contentID).
func isContentID(s string) bool { return len(s) == 64 && git.IsObjectID(s) }

// maxWhy bounds an adoption's reason (R5).
const maxWhy = 4 << 10

// checkAdoption checks what a place says it adopts: a place id, hosts'
// names, a commit id and a bounded reason.
func checkAdoption(a *Adoption) error {
	if a == nil {
		return nil
	}
	if id, err := PlaceID(a.Place); err != nil || id != a.Place {
		return fmt.Errorf("adopts %q: not a place", a.Place)
	}
	if !git.IsObjectID(a.Work) || len(a.Why) > maxWhy {
		return fmt.Errorf("adopts %s: work %q, a reason of %d bytes", a.Place, a.Work, len(a.Why))
	}
	if err := refs.ValidateHost(a.Host); err != nil {
		return err
	}
	return refs.ValidateHost(a.By)
}
