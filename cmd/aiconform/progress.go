package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aiconform/aiconform/checks"
	"golang.org/x/term"
)

// progress tells a person at a terminal what a run is doing, on stderr:
// how many checks finished of how many, the time since the run started,
// which checks are running (the longest-running first) and the last write
// a probe sent. On a terminal it is one line, redrawn on every event and
// every second, so that the time moves while a probe waits, and erased at
// the end; elsewhere (--progress into a log) it is a line per finished
// check, and per probe write.
type progress struct {
	w       io.Writer
	now     func() time.Time
	started time.Time
	// live redraws one line; width bounds it (0: no bound).
	live  bool
	width int

	mu          sync.Mutex
	done, total int
	running     []runningCheck
	step        string
	drawn       bool
	// closed: a probe check left running past its deadline may still
	// write after the run; the erased line stays erased.
	closed    bool
	stop      chan struct{}
	stopped   sync.WaitGroup
	closeOnce sync.Once
}

type runningCheck struct {
	id, operator string
}

func (c runningCheck) String() string {
	if c.operator == "" {
		return c.id
	}
	return c.id + " " + c.operator
}

// newProgress starts a progress display on w: a live line when w is a
// terminal, a line per event when it is not.
func newProgress(w io.Writer, now func() time.Time) *progress {
	p := &progress{w: w, now: now, started: now(), stop: make(chan struct{})}
	if isTerminal(w) {
		p.live = true
		if cols, _, err := term.GetSize(int(w.(*os.File).Fd())); err == nil {
			p.width = cols
		}
		p.stopped.Add(1)
		go p.tick()
	}
	return p
}

// tick redraws the line every second.
func (p *progress) tick() {
	defer p.stopped.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			if p.drawn {
				p.draw()
			}
			p.mu.Unlock()
		}
	}
}

// Started is checks.RunOptions.Started.
func (p *progress) Started(m checks.Meta, operator string, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total = total
	p.running = append(p.running, runningCheck{id: m.ID, operator: operator})
	if p.live {
		p.draw()
	}
}

// Finished is checks.RunOptions.Progress.
func (p *progress) Finished(done, total int, r checks.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done, p.total = done, total
	c := runningCheck{id: r.Check.ID, operator: r.Operator}
	if i := slices.Index(p.running, c); i >= 0 {
		p.running = slices.Delete(p.running, i, i+1)
	}
	switch {
	case p.closed:
		return
	case p.live:
		p.draw()
		return
	}
	fmt.Fprintf(p.w, "[%d/%d] %s %s: %s\n", done, total, p.elapsed(), c, r.Status)
}

// Step is probe.Session.OnStep.
func (p *progress) Step(step string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.step = step
	switch {
	case p.closed:
		return
	case p.live:
		p.draw()
		return
	}
	fmt.Fprintf(p.w, "[%d/%d] %s probe: %s\n", p.done, p.total, p.elapsed(), step)
}

// Close stops the redrawing and erases the line, so that what the run
// prints next starts on a clean line; nothing is written after it. A
// second call does nothing.
func (p *progress) Close() {
	p.closeOnce.Do(func() {
		if p.live {
			close(p.stop)
			p.stopped.Wait()
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.drawn {
			fmt.Fprint(p.w, "\r\x1b[K")
			p.drawn = false
		}
		p.closed = true
	})
}

func (p *progress) elapsed() string {
	return p.now().Sub(p.started).Truncate(time.Second).String()
}

// draw writes the line over the last one. Callers hold mu.
func (p *progress) draw() {
	if p.closed {
		return
	}
	line := p.line()
	if p.width > 1 && len([]rune(line)) >= p.width {
		line = string([]rune(line)[:p.width-2]) + "…"
	}
	// Carriage return, the line, then erase what a longer line left.
	fmt.Fprint(p.w, "\r"+line+"\x1b[K")
	p.drawn = true
}

// line is what the live display shows, e.g.
// "[12/69] 14s running: crs-reconciled kserve, gpu-allocatable (+2) | create pods/x".
func (p *progress) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%d/%d] %s", p.done, p.total, p.elapsed())
	if n := len(p.running); n > 0 {
		const shown = 2
		names := make([]string, 0, shown)
		for _, c := range p.running[:min(n, shown)] {
			names = append(names, c.String())
		}
		fmt.Fprintf(&b, " running: %s", strings.Join(names, ", "))
		if n > shown {
			fmt.Fprintf(&b, " (+%d)", n-shown)
		}
	}
	if p.step != "" {
		fmt.Fprintf(&b, " | %s", p.step)
	}
	return b.String()
}
