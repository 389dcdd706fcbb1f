package jsonfmt

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// Indent lays out what Marshal writes exactly as json.Indent does.
func TestIndentAgreesWithEncodingJSON(t *testing.T) {
	values := []any{
		nil, true, 12.5, "", "a\"b\\c\u001b\u2028<&>", []any{}, map[string]any{},
		[]any{[]any{}, map[string]any{}, 1, "x"},
		map[string]any{"a": []any{map[string]any{"b": "}]\\\"{[,:"}}, "c": map[string]any{"d": nil}, "": ""},
		struct {
			Place     string   `json:"place"`
			Conflicts []string `json:"conflicts"`
			Run       *int     `json:"run"`
			Raw       json.RawMessage
		}{Place: "fix--p1", Conflicts: []string{"f1.txt", "f\n2"}, Raw: json.RawMessage(` { "x" : [ 1 , 2 ] } `)},
	}
	for _, v := range values {
		checkIndent(t, v)
	}
}

// Write writes what Indent lays out, in pieces where it is long, and
// says a writer's failure.
func TestWriteLaysOutLongValuesInPieces(t *testing.T) {
	var places []map[string]any
	for i := range 2000 {
		places = append(places, map[string]any{"place": "fix--p" + strings.Repeat("x", i%50), "conflicts": []any{"a", map[string]any{}}})
	}
	v := map[string]any{"places": places, "problems": []any{}}
	want, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 3*flushAt {
		t.Fatalf("%d bytes: not long enough to be written in pieces", len(want))
	}
	var got bytes.Buffer
	w := &countingWriter{w: &got}
	if err := Write(w, v); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), append(want, '\n')) {
		t.Fatal("Write's output differs from encoding/json's")
	}
	if w.n < 3 {
		t.Fatalf("written in %d pieces", w.n)
	}
	if err := Write(failingWriter{}, v); err == nil {
		t.Fatal("a writer's failure not said")
	}
}

type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) { c.n++; return c.w.Write(p) }

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func FuzzIndentAgreesWithEncodingJSON(f *testing.F) {
	f.Add(`{"a":[1,{"b":"c"}],"d":{}}`)
	f.Add(`["\"\\",[],{}]`)
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return
		}
		checkIndent(t, v)
	})
}

func checkIndent(t *testing.T, v any) {
	t.Helper()
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	src := bytes.TrimSuffix(compact.Bytes(), []byte("\n"))
	var want bytes.Buffer
	if err := json.Indent(&want, src, "", "  "); err != nil {
		t.Fatal(err)
	}
	if got := Indent(nil, src, "  "); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("Indent(%s):\n%s\nwant:\n%s", src, got, want.Bytes())
	}
}

func BenchmarkIndent(b *testing.B) {
	src := statusLike()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		Indent(nil, src, "  ")
	}
}

func BenchmarkEncodingJSONIndent(b *testing.B) {
	src := statusLike()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		var buf bytes.Buffer
		_ = json.Indent(&buf, src, "", "  ")
	}
}

// statusLike is status --json's shape at 100 places, each in conflict
// with nine others.
func statusLike() []byte {
	type conflict struct {
		With  string   `json:"with"`
		Files []string `json:"files"`
		Exact bool     `json:"exact"`
	}
	type place struct {
		Place, Repo, Branch, Path, Base, Brief string
		Conflicts                              []conflict
	}
	var places []place
	for i := range 100 {
		p := place{Place: "fix--p1", Repo: "/tmp/repo", Branch: "fix/p1", Path: "/tmp/repo/places/fix--p1", Base: "890b0217091119c23bfeb197ef6bedf9ff2871e2", Brief: "place"}
		for j := range 9 {
			p.Conflicts = append(p.Conflicts, conflict{With: "fix--p" + string(rune('0'+j)), Files: []string{"f1.txt"}, Exact: i%2 == 0})
		}
		places = append(places, p)
	}
	src, _ := json.Marshal(map[string]any{"schema": 1, "places": places})
	return src
}

// TestStreamInPiecesLaysOutAsWhole: a document fed to a Stream in pieces,
// cut after any structural byte (so between tokens), is laid out byte for
// byte as Write lays out the whole, empty objects and arrays split from
// their closing bracket included.
func TestStreamInPiecesLaysOutAsWhole(t *testing.T) {
	for _, doc := range []string{
		`{"a":[],"b":{},"c":[{"d":1,"e":"x,y"},[],{}],"f":null}`,
		`[[[]],{"a":{"b":[1,2,{}]}}]`,
		`{}`,
	} {
		var whole bytes.Buffer
		if err := Write(&whole, json.RawMessage(doc)); err != nil {
			t.Fatal(err)
		}
		inString := false
		for cut := 1; cut < len(doc); cut++ {
			if doc[cut-1] == '"' {
				inString = !inString // no escaped quote in these documents
			}
			if inString || !structural[doc[cut-1]] || doc[cut-1] == '"' {
				continue
			}
			var pieces bytes.Buffer
			s := NewStream(&pieces)
			s.Raw(doc[:cut])
			s.Raw(doc[cut:])
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if pieces.String() != whole.String() {
				t.Errorf("%s cut at %d:\n%s\nwant\n%s", doc, cut, pieces.String(), whole.String())
			}
		}
	}
}
