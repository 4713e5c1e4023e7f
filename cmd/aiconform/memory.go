package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// A run keeps what it reads until it ends, and Go's default collector lets
// the heap grow to twice what is live before it collects: on bench/live's
// 2,000-node cluster, about 70 MB live made a peak of 200 MiB resident. CI
// runners may have a few hundred MiB. So, unless the user tunes the
// collector (GOMEMLIMIT or GOGC), aiconform asks it to keep its memory
// within softLimit, which costs some more collections near the end of a
// run on such a cluster. On a larger cluster, once what is live nears the
// limit, the limit gives way to the default (twice what is live): a limit
// below what is live would have the collector run without pause.
const (
	// softLimit is the 150 MiB the scale budget allows a run, less the
	// 40 MiB the binary's own pages take resident and 10 for what the
	// runtime holds beyond the limit between collections.
	softLimit = 100 << 20
	// runtimeOverhead is what the runtime holds beyond the live heap:
	// stacks, the collector's own data, free spans not yet returned.
	runtimeOverhead = 16 << 20
)

// limitFor is the memory limit after a collection that left live bytes
// live under limit, the one before it having left prevLive: limit, or, once
// two collections running have left more than 85% of it live, room for
// the heap to double, as the default collector gives it. One such
// collection is a moment of many pages in flight; two are a cluster
// larger than the limit is for.
func limitFor(prevLive, live uint64, limit int64) int64 {
	high := func(l uint64) bool { return int64(l) > limit/100*85 }
	if !high(prevLive) || !high(live) {
		return limit
	}
	return max(limit, int64(2*live)+runtimeOverhead)
}

// collectWithinLimit sets the limit and keeps it where limitFor says after
// each collection, until the process ends.
func collectWithinLimit() {
	if os.Getenv("GOMEMLIMIT") != "" || os.Getenv("GOGC") != "" {
		return
	}
	var mu sync.Mutex // cleanups may run on any goroutine
	limit, prevLive := int64(softLimit), uint64(0)
	debug.SetMemoryLimit(limit)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	afterEachCollection(func() {
		mu.Lock()
		defer mu.Unlock()
		metrics.Read(sample)
		live := sample[0].Value.Uint64()
		if want := limitFor(prevLive, live, limit); want != limit {
			limit = want
			debug.SetMemoryLimit(limit)
		}
		prevLive = live
	})
}

// afterEachCollection calls fn after each collection, as a cleanup of the
// runtime's: an object no one holds is collected by the next cycle, and
// its cleanup, once fn returns, makes the next such object, so that fn
// never runs twice at once.
func afterEachCollection(fn func()) {
	sentinel := new(gcSentinel)
	runtime.AddCleanup(sentinel, func(struct{}) {
		fn()
		afterEachCollection(fn)
	}, struct{}{})
}

// gcSentinel holds a pointer so that it is not batched with other small
// objects, which would keep it alive past a collection.
type gcSentinel struct{ _ *byte }
