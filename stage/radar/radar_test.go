package radar

import (
	"slices"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/stage/record"
)

func TestOverlap(t *testing.T) {
	base, other := strings.Repeat("b", 40), strings.Repeat("c", 40)
	fp := func(b string, files ...record.File) *record.Fingerprint {
		return &record.Fingerprint{Base: b, Head: b, Files: files}
	}
	for _, tc := range []struct {
		name string
		a, b *record.Fingerprint
		want []string
	}{
		{"same lines", fp(base, record.File{Path: "f", Spans: [][2]int{{3, 3}}}), fp(base, record.File{Path: "f", Spans: [][2]int{{3, 4}}}), []string{"f"}},
		{"adjacent lines", fp(base, record.File{Path: "f", Spans: [][2]int{{3, 3}}}), fp(base, record.File{Path: "f", Spans: [][2]int{{4, 4}}}), []string{"f"}},
		{"insertions at one point", fp(base, record.File{Path: "f", Spans: [][2]int{{5, 4}}}), fp(base, record.File{Path: "f", Spans: [][2]int{{5, 4}}}), []string{"f"}},
		{"a line apart", fp(base, record.File{Path: "f", Spans: [][2]int{{3, 3}}}), fp(base, record.File{Path: "f", Spans: [][2]int{{5, 6}}}), nil},
		{"whole file", fp(base, record.File{Path: "f", Spans: nil}), fp(base, record.File{Path: "f", Spans: [][2]int{{90, 90}}}), []string{"f"}},
		{"other files", fp(base, record.File{Path: "f", Spans: nil}), fp(base, record.File{Path: "g", Spans: nil}), nil},
		{"other bases share a file", fp(base, record.File{Path: "f", Spans: [][2]int{{1, 1}}}), fp(other, record.File{Path: "f", Spans: [][2]int{{50, 50}}}), []string{"f"}},
		{"nil", nil, fp(base, record.File{Path: "f", Spans: nil}), nil},
	} {
		if got := Overlap(tc.a, tc.b); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Overlap = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestValidateRefusesHostileFingerprints(t *testing.T) {
	id := strings.Repeat("a", 40)
	for _, tc := range []struct {
		name string
		f    record.Fingerprint
	}{
		{"base not an id", record.Fingerprint{Base: "HEAD", Head: id}},
		{"snapshot not an id", record.Fingerprint{Base: id, Head: id, Snapshot: "--upload-pack=x"}},
		{"absolute path", record.Fingerprint{Base: id, Head: id, Files: []record.File{{Path: "/etc/passwd"}}}},
		{"empty path", record.Fingerprint{Base: id, Head: id, Files: []record.File{{}}}},
		{"bad range", record.Fingerprint{Base: id, Head: id, Files: []record.File{{Path: "f", Spans: [][2]int{{0, 3}}}}}},
		{"too many files", record.Fingerprint{Base: id, Head: id, Files: make([]record.File, record.MaxFiles+1)}},
	} {
		if err := tc.f.Validate(); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	ok := record.Fingerprint{Base: id, Head: id, Files: []record.File{{Path: "f", Spans: [][2]int{{1, 0}, {3, 9}}}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("a sound fingerprint refused: %v", err)
	}
}
