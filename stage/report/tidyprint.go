// How tidy's results read for people.

package report

import (
	"fmt"
	"io"

	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/stage/place"
)

// WriteTidy prints what tidy did for people.
func WriteTidy(w io.Writer, results []place.TidyResult, dryRun bool) {
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
