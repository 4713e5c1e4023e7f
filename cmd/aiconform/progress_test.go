package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The live line names what runs, longest first, and the last probe write;
// a line too wide for the terminal is cut, and Close erases it.
func TestProgressLine(t *testing.T) {
	clock := fixedClock()
	var out bytes.Buffer
	p := &progress{w: &out, now: func() time.Time { return clock }, started: clock, live: true, stop: make(chan struct{})}
	p.Started(checks.Meta{ID: "crs-reconciled"}, "kserve", 5)
	p.Started(checks.Meta{ID: "gpu-allocatable"}, "", 5)
	p.Started(checks.Meta{ID: "webhooks-served"}, "kuberay", 5)
	clock = clock.Add(75 * time.Second)
	p.Step("create pods/aiconform-isolation-1")
	assert.Equal(t, "[0/5] 1m15s running: crs-reconciled kserve, gpu-allocatable (+1) | create pods/aiconform-isolation-1", p.line())

	p.Finished(1, 5, checks.Result{Check: checks.Meta{ID: "crs-reconciled"}, Operator: "kserve", Status: checks.Pass})
	assert.Equal(t, "[1/5] 1m15s running: gpu-allocatable, webhooks-served kuberay | create pods/aiconform-isolation-1", p.line())

	out.Reset()
	p.width = 20
	p.draw()
	assert.Equal(t, "\r[1/5] 1m15s runnin…\x1b[K", out.String(), "cut to the terminal's width")

	out.Reset()
	p.Close()
	p.Close()
	p.Step("delete pods/late")
	assert.Equal(t, "\r\x1b[K", out.String(), "the line erased once, and not drawn again")
}

// Where stderr is not a terminal, --progress writes a line per finished
// check and per probe write, and nothing that redraws.
func TestProgressLog(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out, fixedClock)
	require.False(t, p.live)
	p.Started(checks.Meta{ID: "gpu-allocatable"}, "", 2)
	p.Step("delete pods/x")
	p.Finished(1, 2, checks.Result{Check: checks.Meta{ID: "gpu-allocatable"}, Status: checks.Fail})
	p.Close()
	p.Step("delete pods/late")
	assert.Equal(t, "[0/2] 0s probe: delete pods/x\n[1/2] 0s gpu-allocatable: fail\n", out.String(), "nothing after Close")
}

// A run writes progress to a stderr that is not a terminal only with
// --progress, and never with --quiet.
func TestProgressFlags(t *testing.T) {
	_, _, errOut := run(t, "check", "robust_controller", "--fixture", "demo")
	assert.NotContains(t, errOut, "[1/")

	code, _, errOut := run(t, "check", "robust_controller", "--fixture", "demo", "--progress")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "0s crds-established kserve: pass\n")
	assert.Equal(t, 88, strings.Count(errOut, "/88] 0s "), "a line per check of each of the eleven operator profiles:\n%s", errOut)

	code, _, errOut = run(t, "check", "robust_controller", "--fixture", "demo", "--progress", "--quiet")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--progress and --quiet contradict")
}
