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
		// issue 47: the same lines replaced by the same lines on both
		// sides is one change, which git merges cleanly; other lines in
		// place of them, or a digest unknown on one side, still conflict
		{"the same change", fp(base, record.File{Path: "f", Spans: [][2]int{{3, 4}}, Hunks: []string{"00000000000000aa"}}),
			fp(base, record.File{Path: "f", Spans: [][2]int{{3, 4}, {9, 9}}, Hunks: []string{"00000000000000aa", "00000000000000bb"}}), nil},
		{"other lines in the same place", fp(base, record.File{Path: "f", Spans: [][2]int{{3, 4}}, Hunks: []string{"00000000000000aa"}}),
			fp(base, record.File{Path: "f", Spans: [][2]int{{3, 4}}, Hunks: []string{"00000000000000cc"}}), []string{"f"}},
		{"the same lines, one side's digest unknown", fp(base, record.File{Path: "f", Spans: [][2]int{{3, 4}}}),
			fp(base, record.File{Path: "f", Spans: [][2]int{{3, 4}}, Hunks: []string{"00000000000000aa"}}), []string{"f"}},
		{"the same change beside another", fp(base, record.File{Path: "f", Spans: [][2]int{{3, 4}}, Hunks: []string{"00000000000000aa"}}),
			fp(base, record.File{Path: "f", Spans: [][2]int{{3, 4}, {5, 5}}, Hunks: []string{"00000000000000aa", "00000000000000bb"}}), []string{"f"}},
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
		{"a digest per range, not", record.Fingerprint{Base: id, Head: id, Files: []record.File{{Path: "f", Spans: [][2]int{{1, 1}, {3, 3}}, Hunks: []string{"00000000000000aa"}}}}},
		{"a digest not one", record.Fingerprint{Base: id, Head: id, Files: []record.File{{Path: "f", Spans: [][2]int{{1, 1}}, Hunks: []string{"\x1b[2J0000000000"}}}}},
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
