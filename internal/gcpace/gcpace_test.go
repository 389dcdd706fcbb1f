package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// TestGCTightensOnlyPastItsSize (issue 46): collections come sooner once
// one finds more than TightAt live, never before: a small command
// collects as Go's default does.
func TestGCTightensOnlyPastItsSize(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set: the user's setting stands")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	sample := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/live:bytes"}}
	read := func() (gogc, live uint64) {
		metrics.Read(sample)
		return sample[0].Value.Uint64(), sample[1].Value.Uint64()
	}
	// moved collects until GOGC leaves 100 or wait has passed (a
	// collection's finalizers run after it), and reads it then.
	moved := func(wait time.Duration) uint64 {
		runtime.GC()
		runtime.GC()
		for deadline := time.Now().Add(wait); ; runtime.GC() {
			if gogc, _ := read(); gogc != 100 || time.Now().After(deadline) {
				return gogc
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	Tighten()
	runtime.GC()
	if _, live := read(); live < TightAt/2 {
		if gogc := moved(100 * time.Millisecond); gogc != 100 {
			t.Fatalf("GOGC %d with %d bytes live; want 100 under %d", gogc, live, TightAt)
		}
	}
	held := make([][]byte, 0, 32)
	for range 32 {
		held = append(held, make([]byte, 1<<20))
	}
	if gogc := moved(5 * time.Second); gogc != 50 {
		t.Errorf("GOGC %d with 32 MB live; want 50 past %d", gogc, TightAt)
	}
	runtime.KeepAlive(held)
}
