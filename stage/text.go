// Small text helpers the workflows' messages share.

package stage

import (
	"fmt"
	"strings"
)

// listErrors formats several independent failures one per line.
func listErrors(es []error) string {
	if len(es) == 1 {
		return es[0].Error()
	}
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = "  " + e.Error()
	}
	return fmt.Sprintf("%d places could not be tidied:\n%s", len(es), strings.Join(lines, "\n"))
}

func orDetached(ref string) string {
	if ref == "" {
		return "a detached HEAD"
	}
	return ref
}

func listSome(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return fmt.Sprintf("%s (+%d more)", strings.Join(xs[:n], ", "), len(xs)-n)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func FirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TreeName is a place's name in a table, indented under its commissioner
// by its depth (issue 17).
func TreeName(id string, depth int) string {
	if depth == 0 {
		return id
	}
	return strings.Repeat("  ", depth-1) + "└ " + id
}
