// How tidy's results read for people.

package stage

import (
	"fmt"
	"io"
	"strings"

	"github.com/git-flume/git-flume/internal/term"
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

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// WriteTidy prints what tidy did for people.
func WriteTidy(w io.Writer, results []TidyResult, dryRun bool) {
	if len(results) == 0 {
		fmt.Fprintln(w, "nothing to tidy")
		return
	}
	for _, r := range results {
		verdict := "tidied"
		switch {
		case r.Kept != "":
			verdict = "kept"
		case dryRun:
			verdict = "would tidy"
		}
		fmt.Fprintf(w, "%s %s (%s): worktree %s, branch %s", verdict, term.Clean(r.Place), term.Clean(r.Reason), r.Worktree, r.Branch)
		if r.Kept != "" {
			fmt.Fprintf(w, ": %s", term.Clean(r.Kept))
		}
		fmt.Fprintln(w)
	}
}
