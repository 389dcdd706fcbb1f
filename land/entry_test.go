package land

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestEntriesAreCheckedWhole_R5_Q3: an entry is input; one that names
// another place than its ref, a tip that is not an object id, a state
// flume does not write, or a landing without a passed proof is refused.
func TestEntriesAreCheckedWhole_R5_Q3(t *testing.T) {
	id := strings.Repeat("1", 40)
	good := func() *Entry {
		return &Entry{Schema: 1, Kind: "land", Place: "fix--one", Branch: "fix/one", Target: "main", Tip: id, Host: "h",
			Submitted: time.Unix(0, 0).UTC(), State: Landed,
			Proof: &Proof{Base: id, Candidate: id, Tree: id, Passed: true, Checks: []Check{{Argv: []string{"make", "test"}}}}}
	}
	for _, c := range []struct {
		name string
		edit func(*Entry)
		ref  string
		want string
	}{
		{name: "as written", edit: func(*Entry) {}},
		{name: "another place's ref", edit: func(*Entry) {}, ref: Prefix + "fix--two", want: "under ref name"},
		{name: "branch not the place's", edit: func(e *Entry) { e.Branch = "fix/other" }, want: "branch"},
		{name: "tip not an id", edit: func(e *Entry) { e.Tip = "HEAD" }, want: "tip"},
		{name: "a target git refuses", edit: func(e *Entry) { e.Target = "a..b" }, want: "target"},
		{name: "unknown state", edit: func(e *Entry) { e.State = "merged" }, want: "state"},
		{name: "landed unproven", edit: func(e *Entry) { e.Proof.Passed = false }, want: "without a passed proof"},
		{name: "landed with no proof", edit: func(e *Entry) { e.Proof = nil }, want: "without a passed proof"},
		{name: "a proof naming no commit", edit: func(e *Entry) { e.Proof.Candidate = "x" }, want: "not a full object id"},
		{name: "a check's tail too long", edit: func(e *Entry) { e.Proof.Checks[0].Tail = strings.Repeat("x", maxTail+1) }, want: "tail"},
	} {
		e := good()
		c.edit(e)
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		ref := c.ref
		if ref == "" {
			ref = Ref("fix--one")
		}
		_, err = validateEntry(ref, data)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want refused for %q", c.name, err, c.want)
		}
	}
}
