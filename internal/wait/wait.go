package wait

import (
	"context"
	"os"
	"slices"
	"time"
)

// poll is how often a wait looks at its files: an agent's permission
// asked is seen within it by a watcher, not within its interval (A11). A
// look is one stat per file.
const poll = 250 * time.Millisecond

// Until waits for interval, or less when one of files changes size or
// modification time meanwhile (or comes or goes); with no files it is a
// sleep. It returns ctx's error when ctx ends first.
func Until(ctx context.Context, interval time.Duration, files []string) error {
	sizes := func() (n []int64) {
		for _, f := range files {
			size, when := int64(-1), int64(0)
			if info, err := os.Stat(f); err == nil {
				size, when = info.Size(), info.ModTime().UnixNano()
			}
			n = append(n, size, when)
		}
		return n
	}
	deadline := time.Now().Add(interval)
	was := sizes()
	for {
		step := min(time.Until(deadline), poll)
		if len(files) == 0 {
			step = time.Until(deadline)
		}
		if step <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(step):
		}
		if len(files) > 0 && !slices.Equal(sizes(), was) {
			return nil
		}
	}
}
