package main

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The limit stays softLimit while what is live leaves the heap room under
// it, or but for a moment, and then gives the heap room to double,
// following it up.
func TestLimitFor(t *testing.T) {
	assert.Equal(t, int64(softLimit), limitFor(0, 0, softLimit))
	assert.Equal(t, int64(softLimit), limitFor(70<<20, 78<<20, softLimit), "bench/live's cluster: within the limit")
	assert.Equal(t, int64(softLimit), limitFor(60<<20, 90<<20, softLimit), "a moment of many pages in flight")
	assert.Equal(t, int64(softLimit), limitFor(90<<20, 60<<20, softLimit))
	assert.Equal(t, int64(2*100<<20+runtimeOverhead), limitFor(90<<20, 100<<20, softLimit), "a larger cluster: the default collector's room")
	limit, prev := int64(softLimit), uint64(0)
	for live := uint64(0); live < 1<<30; live += 7 << 20 {
		limit, prev = limitFor(prev, live, limit), live
		assert.Greater(t, limit, int64(live), "never a limit below what is live (%d MiB)", live>>20)
	}
	assert.Equal(t, int64(300<<20), limitFor(100<<20, 100<<20, 300<<20), "never lowered")
}

// fn runs after each collection, not only the first: three collections,
// three runs, each within a deadline rather than a hang.
func TestAfterEachCollection(t *testing.T) {
	var runs atomic.Int32
	ran := make(chan struct{}, 1)
	afterEachCollection(func() {
		runs.Add(1)
		select {
		case ran <- struct{}{}:
		default:
		}
	})
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for i := range 3 {
		runtime.GC()
		select {
		case <-ran:
		case <-deadline.C:
			require.FailNow(t, "fn did not run after a collection", "%d runs after %d collections", runs.Load(), i+1)
		}
	}
	assert.GreaterOrEqual(t, runs.Load(), int32(3), "once after each of 3 collections")
}
