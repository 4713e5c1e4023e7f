package scheduling_test

import (
	"context"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/scheduling"
	"github.com/aiconform/aiconform/probe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The scale-up probe adds a node: it runs only when asked for by name, on
// top of --probe.
func TestScaleUpProbeOptIn(t *testing.T) {
	env := &checks.Env{Now: checkstest.FixedNow}
	r, err := scheduling.ScaleUpProbe{}.Run(context.Background(), env)
	require.NoError(t, err)
	assert.Equal(t, checks.Skip, r.Status)
	assert.Contains(t, r.Reason, "probes are off: --probe --probe-scale-up")

	env.Probe = &probe.Session{}
	r, err = scheduling.ScaleUpProbe{}.Run(context.Background(), env)
	require.NoError(t, err)
	assert.Equal(t, checks.Skip, r.Status)
	assert.Contains(t, r.Reason, "runs only with --probe-scale-up")
	assert.Empty(t, r.Evidence, "nothing read, nothing written")
}
