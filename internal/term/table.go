package term

import (
	"strings"
	"unicode/utf8"
)

// A table that fits a terminal: rows of fixed columns, then a reason and a
// next step, laid out in lines of at most a given width (status and the
// board, issue 47).

// Row is a line of a fitted table: its fixed columns, then why and the
// next step, each escaped already.
type Row struct {
	Cols         []string
	Reason, Next string
}

// FitLines lays rows out in lines of at most columns: each fixed column
// as wide as its longest value up to its limit in limits, the next step
// whole where it leaves the reason reasonAtLeast, or the longest reason
// when shorter (else its command before
// the words that explain it, else cut), the reason in what is left, cut;
// "…" marks a cut.
func FitLines(rows []Row, limits []int, columns, reasonAtLeast int) []string {
	widths := make([]int, len(limits))
	for _, r := range rows {
		for i, c := range r.Cols {
			widths[i] = max(widths[i], Width(c))
		}
	}
	room := columns
	for i := range widths {
		widths[i] = min(widths[i], limits[i])
		room -= widths[i] + 2
	}
	wn, wr := 0, 0
	for _, r := range rows {
		wr = max(wr, Width(r.Reason))
	}
	next := make([]string, len(rows))
	for i, r := range rows {
		next[i] = ShortNext(r.Next, room-2-min(reasonAtLeast, wr))
		wn = max(wn, Width(next[i]))
	}
	if wn > 0 {
		wr = min(wr, room-2-wn)
	}
	wr = min(wr, room)
	lines := make([]string, len(rows))
	for i, r := range rows {
		var b strings.Builder
		for j, c := range r.Cols {
			b.WriteString(Pad(Fit(c, widths[j]), widths[j]) + "  ")
		}
		b.WriteString(Pad(Fit(r.Reason, wr), wr))
		if next[i] != "" {
			b.WriteString("  " + next[i])
		}
		lines[i] = strings.TrimRight(b.String(), " ")
	}
	return lines
}

// ShortNext is a next step as it fits n columns: whole, else the command
// before its explanation (a parenthesis, ", or", a semicolon), else cut.
func ShortNext(next string, n int) string {
	if Width(next) <= n {
		return next
	}
	for _, sep := range []string{" (", ", or ", "; "} {
		if i := strings.Index(next, sep); i > 0 && Width(next[:i]) <= n {
			return next[:i]
		}
	}
	return Fit(next, n)
}

// Width is how many columns s takes: a column a character.
func Width(s string) int { return utf8.RuneCountInString(s) }

// Fit cuts s to n columns at most, its last one "…" when cut.
func Fit(s string, n int) string {
	if Width(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Pad widens s to n columns with spaces.
func Pad(s string, n int) string {
	if k := n - Width(s); k > 0 {
		return s + strings.Repeat(" ", k)
	}
	return s
}
