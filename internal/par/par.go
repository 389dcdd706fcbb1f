package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// minPerWorker is how many steps make another goroutine worth starting: a
// step here is a few small file reads or one record's decoding.
const minPerWorker = 16

// Each runs do(0) … do(n-1) on up to four goroutines (one when n is small)
// and reports whether every call returned true; after a false one no new
// step starts. Steps must not depend on each other's order.
func Each(n int, do func(i int) bool) bool {
	workers := min(runtime.GOMAXPROCS(0), 4, n/minPerWorker)
	if workers < 2 {
		for i := range n {
			if !do(i) {
				return false
			}
		}
		return true
	}
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if !do(i) {
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	return !failed.Load()
}
