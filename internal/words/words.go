package words

import (
	"fmt"
	"strings"
)

// ListSome joins the first n of xs with commas and counts the rest.
func ListSome(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return fmt.Sprintf("%s (+%d more)", strings.Join(xs[:n], ", "), len(xs)-n)
}

// Plural is the "s" that follows a count of n.
func Plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// FirstLine is s up to its first newline.
func FirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TreeName is a place's name in a table, indented under its commissioner
// by its depth.
func TreeName(id string, depth int) string {
	if depth == 0 {
		return id
	}
	return strings.Repeat("  ", depth-1) + "└ " + id
}

// OneLine is s with every run of white space, newlines included, one space.
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// LastLines are the last n lines of s, without its final newline.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
