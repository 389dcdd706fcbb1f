package wait

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestUntilEndsWhenAFileChanges_A11: a file written during the wait ends
// it within a poll, long before its interval.
func TestUntilEndsWhenAFileChanges_A11(t *testing.T) {
	f := filepath.Join(t.TempDir(), "events")
	go func() {
		time.Sleep(100 * time.Millisecond)
		os.WriteFile(f, []byte("x\n"), 0o644)
	}()
	start := time.Now()
	if err := Until(context.Background(), time.Minute, []string{f}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= time.Minute {
		t.Errorf("waited %s, its whole interval, for a file that came at 100ms", took)
	}
}

// TestUntilWithNoFilesSleepsItsInterval: no file to hear, the whole
// interval passes; an ended context ends it with its error.
func TestUntilWithNoFilesSleepsItsInterval(t *testing.T) {
	start := time.Now()
	if err := Until(context.Background(), 300*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("returned after %s, before its interval of 300ms", took)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Until(ctx, time.Hour, nil); err != context.Canceled {
		t.Errorf("an ended context: %v, want %v", err, context.Canceled)
	}
}
