package engine

import (
	"strings"
	"unicode/utf8"

	"github.com/git-flume/git-flume/stage/record"
)

// Report bounds: a field keeps at most this much text.
const maxReportField = 2000

// ParseReport finds the STAGE REPORT block in an agent's final message: a
// line naming it (any case, markdown marks aside), then "done:", "files:",
// "notes:" and "blockers:" lines, a field's further lines continuing it.
// It returns nil when there is none.
func ParseReport(text string) *record.Report {
	lines := strings.Split(text, "\n")
	start := -1
	for i, l := range lines {
		if strings.EqualFold(strings.Trim(l, " \t#*_`:-"), "stage report") {
			start = i
		}
	}
	if start < 0 {
		return nil
	}
	r := &record.Report{}
	var cur *string
	found := false
	for _, l := range lines[start+1:] {
		t := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "-*"))
		key, rest, ok := strings.Cut(t, ":")
		field := map[string]*string{"done": &r.Done, "files": &r.Files, "notes": &r.Notes, "blockers": &r.Blockers}[strings.ToLower(strings.Trim(key, " *_`"))]
		switch {
		case ok && field != nil:
			cur, found = field, true
			*cur = strings.TrimSpace(rest)
		case strings.HasPrefix(t, "```"):
			continue
		case cur != nil && t != "":
			*cur += "\n" + t
		}
		if cur != nil && len(*cur) > maxReportField {
			// Cut at a character's start, never inside one.
			n := maxReportField
			for n > 0 && !utf8.RuneStart((*cur)[n]) {
				n--
			}
			*cur = (*cur)[:n]
		}
	}
	if !found {
		return nil
	}
	return r
}
