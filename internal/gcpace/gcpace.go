package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// TightAt is the live heap past which collections come sooner: a read
// of thousands of places keeps tens of megabytes live, and at the
// default GOGC of 100 the heap grows to twice that before the next
// collection. Status at 10,000 places peaked above the floor's largest
// git process so (issue 46: 53 vs 52 MB); a command that stays under
// it (every command at a hundred places) collects as Go's default does,
// where a GOGC of 50 from the start cost three collections instead of
// one (+12–15% wall).
const TightAt = 8 << 20

// Tighten lowers the GC percent to 50 once a collection finds more
// than TightAt live; a GOGC the user set stands.
func Tighten() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var arm func()
	arm = func() {
		// A finalizer runs once the collection that found its object
		// unreachable is done: one look per collection.
		runtime.SetFinalizer(&struct{ _ *int }{}, func(any) {
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > TightAt {
				debug.SetGCPercent(50)
				return
			}
			arm()
		})
	}
	arm()
}
