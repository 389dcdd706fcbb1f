package git

import (
	"context"
	"fmt"

	"github.com/git-flume/git-flume/internal/git/patch"
)

// ChangedLines lists the files that differ from commit from to commit to,
// each with the line ranges of from's version the change replaces (a diff
// with no context lines, by the histogram algorithm git's merge uses,
// renames not followed: a rename is a deletion and
// an addition).
func (repo *Repo) ChangedLines(ctx context.Context, from, to string) ([]patch.File, error) {
	out, err := repo.read(ctx, nil, "-c", "core.quotePath=false", "diff", "--unified=0", "--no-renames", "--diff-algorithm=histogram",
		"--no-color", "--no-ext-diff", "--no-textconv", "--end-of-options", from, to, "--")
	if err != nil {
		return nil, fmt.Errorf("diff %.12s %.12s: %w", from, to, err)
	}
	return patch.Parse(out)
}
