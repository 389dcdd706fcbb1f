package term

import (
	"bytes"
	"strings"
	"testing"
)

// hostile are strings a record from a hostile host may hold.
var hostile = []string{
	"\x1b]52;c;aGVsbG8=\x07", // OSC 52: write the clipboard
	"\x1b[2J\x1b[H",          // clear the screen
	"ok\r\x1b[Kforged",       // overwrite the line
	"a\nfix--forged  done",   // forge a line
	"nul\x00byte",            // NUL
	"\xc2\x9b31m",            // C1 CSI
	"\x9b31m",                // a lone 8-bit CSI (not UTF-8)
	"evil\u202egnp.exe",      // right-to-left override
	"\x7fdel",                // DEL
	"tab\there",              // a tab in one line
}

// TestCleanLeavesNothingATerminalActsOn_R5: every control character is
// written as an escape, and the text stays readable.
func TestCleanLeavesNothingATerminalActsOn_R5(t *testing.T) {
	for _, s := range hostile {
		got := Clean(s)
		if bad := acted(got, false); bad != "" {
			t.Errorf("Clean(%q) = %q: %s", s, got, bad)
		}
	}
	for in, want := range map[string]string{
		"plain text":       "plain text",
		"très spécial ✓ 🙂": "très spécial ✓ 🙂",
		"a\nb":             `a\nb`,
		"\x1b[2J":          `\x1b[2J`,
		"\xc2\x9b":         `\u009b`,
		"\x9b":             `\x9b`,
		"x\u202ey":         `x\u202ey`,
		"👨\u200d👩":         "👨\u200d👩",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWriterEscapesAcrossWrites_R5: the writer lets newlines and tabs
// through and escapes the rest, also when a sequence is split between
// writes.
func TestWriterEscapesAcrossWrites_R5(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	text := "line one\n" + strings.Join(hostile, "\n") + "\nlast ✓\n"
	// byte by byte: every UTF-8 sequence is split
	for i := 0; i < len(text); i++ {
		w.Write([]byte{text[i]})
	}
	w.Flush()
	if bad := acted(out.String(), true); bad != "" {
		t.Fatalf("%q: %s", out.String(), bad)
	}
	if !strings.HasPrefix(out.String(), "line one\n") || !strings.HasSuffix(out.String(), "\nlast ✓\n") {
		t.Errorf("plain lines changed: %q", out.String())
	}
	if n := strings.Count(out.String(), "\n"); n != strings.Count(text, "\n") {
		t.Errorf("%d lines, want %d", n, strings.Count(text, "\n"))
	}
}

// acted says what in s a terminal would act on, "" when nothing.
func acted(s string, lines bool) string {
	for _, r := range s {
		switch {
		case lines && (r == '\n' || r == '\t'):
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0xfffd:
			return "holds a control character"
		case isBidi(r):
			return "holds a bidirectional override"
		}
	}
	return ""
}
