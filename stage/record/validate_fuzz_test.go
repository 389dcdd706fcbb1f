package record

import (
	"encoding/json"
	"os"
	"testing"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/refs"
)

// fuzzSeed is a record as flume writes it (report's fuzz test starts from it too).
var fuzzSeed = func() string {
	b, err := os.ReadFile("testdata/place-record.json")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// FuzzPlaceRecord_R5: whatever bytes a record holds (a hostile remote's, a
// hand edit's), checking and then using it never panics; a record the
// check accepts can be indexed by its current stage (`current: -5`
// panicked status, rollback and advance; report's fuzz test shows it).
func FuzzPlaceRecord_R5(f *testing.F) {
	f.Add([]byte(fuzzSeed))
	f.Add([]byte(`{"schema":1,"kind":"place","current":-5,"stages":[]}`))
	f.Add([]byte(`{"schema":1,"kind":"place","current":99}`))
	f.Add([]byte(`{"schema":1,"kind":"place","stages":null}`))
	f.Add([]byte(`{"schema":"1","kind":7}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	store := refs.New(nil, refs.Kinds{PlaceKind, refs.ClaimKind})
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := store.Check("refs/flume/places/fix--one", data); err != nil {
			return
		}
		var p Place
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatalf("the check accepted a record that does not decode: %v", err)
		}
		if err := validatePlace("fix--one", &p); err != nil {
			t.Fatalf("the store accepted a place the validator refuses: %v", err)
		}
		_ = p.Stages[p.Current]
		CurrentRun(&p)
	})
}

// TestValidatePlaceEveryField_R5_R6: a record that lies in any one field is
// refused, naming the field; the record flume writes passes.
func TestValidatePlaceEveryField_R5_R6(t *testing.T) {
	valid := func() *Place {
		var p Place
		if err := json.Unmarshal([]byte(fuzzSeed), &p); err != nil {
			t.Fatal(err)
		}
		return &p
	}
	if err := validatePlace("fix--one", valid()); err != nil {
		t.Fatalf("a valid record refused: %v", err)
	}
	bad := "not-an-id"
	cases := map[string]func(p *Place){
		"schema":             func(p *Place) { p.Schema = 2 },
		"kind":               func(p *Place) { p.Kind = "claim" },
		"id":                 func(p *Place) { p.ID = "fix--two" },
		"placeKind":          func(p *Place) { p.PlaceKind = "Fix" },
		"name":               func(p *Place) { p.Name = "../x" },
		"repo relative":      func(p *Place) { p.Repo, p.Path = "r", "r/places/fix--one" },
		"repo root":          func(p *Place) { p.Repo, p.Path = "/", "/places/fix--one" },
		"path":               func(p *Place) { p.Path = "/r/elsewhere" },
		"branch":             func(p *Place) { p.Branch = "main" },
		"host":               func(p *Place) { p.Host = "" },
		"phase":              func(p *Place) { p.Phase = "gone" },
		"base":               func(p *Place) { p.Base = "HEAD" },
		"target":             func(p *Place) { p.Target = "a..b" },
		"no stages":          func(p *Place) { p.Stages = nil; p.Current = 0 },
		"current negative":   func(p *Place) { p.Current = -5 },
		"current past end":   func(p *Place) { p.Current = 2 },
		"launcher pid":       func(p *Place) { p.Launcher = &Proc{PID: -1, Host: "h"} },
		"watcher pid":        func(p *Place) { p.Watcher = &Proc{PID: -1, Host: "h"} },
		"readying pid":       func(p *Place) { p.Ready = &ReadyResult{Running: &Proc{PID: -1}} },
		"tidied head":        func(p *Place) { p.Tidied = &TidyRecord{BranchHead: bad} },
		"stage name":         func(p *Place) { p.Stages[0].Name = "" },
		"stage runs":         func(p *Place) { p.Stages[0].Runs = -1 },
		"stage base":         func(p *Place) { p.Stages[0].Base = bad },
		"stage at":           func(p *Place) { p.Stages[0].At = bad },
		"agent pid":          func(p *Place) { p.Stages[0].Agent.PID = -1 },
		"snapshot ref":       func(p *Place) { p.Stages[0].Snapshots[0].Ref = "refs/heads/main" },
		"snapshot of other":  func(p *Place) { p.Stages[0].Snapshots[0].Ref = "refs/flume/snapshots/fix--two/1" },
		"snapshot commit":    func(p *Place) { p.Stages[0].Snapshots[0].Commit = bad },
		"start snapshot ref": func(p *Place) { p.Stages[0].Start = &Snapshot{Ref: "refs/heads/x", Commit: p.Base} },
		// accepted heads go to git as revisions; an exit as read
		"accepted head":     func(p *Place) { p.Stages[0].Accepted = []string{"--output=/tmp/x"} },
		"too many accepted": func(p *Place) { p.Stages[0].Accepted = make([]string, maxChildren+1) },
		"agent exit status": func(p *Place) { p.Stages[0].Agent.Exit = &agent.Exit{Status: -1} },
		"agent exit signal": func(p *Place) { p.Stages[0].Agent.Exit = &agent.Exit{Signal: 99} },
		// the delegation links
		"child not an id":       func(p *Place) { p.Children = []string{"../x"} },
		"child itself":          func(p *Place) { p.Children = []string{"fix--one"} },
		"too many children":     func(p *Place) { p.Children = make([]string, maxChildren+1) },
		"parent not an id":      func(p *Place) { delegated(p).Parent = "main" },
		"parent itself":         func(p *Place) { delegated(p).Parent = "fix--one" },
		"target not the parent": func(p *Place) { delegated(p); p.Target = "main" },
		"delegation stage":      func(p *Place) { delegated(p).Stage = -1 },
		"delegation outcome":    func(p *Place) { delegated(p).Outcome = "merged" },
		"delegation snapshot": func(p *Place) {
			delegated(p).Start = &Snapshot{Ref: "refs/flume/snapshots/fix--one/1", Commit: p.Base, Tree: p.Base}
		},
	}
	ok := valid()
	delegated(ok)
	if err := validatePlace("fix--one", ok); err != nil {
		t.Fatalf("a valid delegated record refused: %v", err)
	}
	for name, mutate := range cases {
		p := valid()
		mutate(p)
		if err := validatePlace("fix--one", p); err == nil {
			t.Errorf("%s: a record lying in it passed", name)
		}
	}
	if err := validatePlace("fix--two", valid()); err == nil {
		t.Error("a record under another place's ref name passed")
	}
}

// delegated makes p a valid child of lead--x and returns its link.
func delegated(p *Place) *Delegation {
	p.Target = "lead/x"
	p.Parent = &Delegation{Parent: "lead--x", Run: 1,
		Start: &Snapshot{Ref: "refs/flume/snapshots/lead--x/1-plan-1-delegate", Commit: p.Base, Tree: p.Base}}
	return p.Parent
}
