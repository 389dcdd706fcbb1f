package engine

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestReportFieldsAreBounded_W2: an agent's report is parsed into the
// record bounded, each field at most maxReportField bytes, cut at a
// character's start; the fields after a long one are still read.
func TestReportFieldsAreBounded_W2(t *testing.T) {
	long := strings.Repeat("a", maxReportField-1) + "é" + strings.Repeat("b", 3000)
	r := ParseReport("Done.\n\nSTAGE REPORT\ndone: " + long + "\nfiles: a.go\nnotes: none\nblockers: none")
	if r == nil {
		t.Fatal("no report parsed")
	}
	if len(r.Done) > maxReportField || !utf8.ValidString(r.Done) || !strings.HasPrefix(long, r.Done) {
		t.Errorf("done: %d bytes, valid %v; want at most %d, a prefix, valid UTF-8", len(r.Done), utf8.ValidString(r.Done), maxReportField)
	}
	if len(r.Done) < maxReportField-1 {
		t.Errorf("done: %d bytes, cut shorter than it needed", len(r.Done))
	}
	if r.Files != "a.go" || r.Notes != "none" || r.Blockers != "none" {
		t.Errorf("the fields after it: %+v", r)
	}
	many := ParseReport("STAGE REPORT\nnotes: x\n" + strings.Repeat("more words\n", 1000))
	if many == nil || len(many.Notes) > maxReportField {
		t.Errorf("a field continued over many lines: %d bytes", len(many.Notes))
	}
}
