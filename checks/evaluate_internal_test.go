package checks

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A probe that needs its own flag besides --probe is said with it.
func TestUnprobedSaysTheFlags(t *testing.T) {
	rs := []Result{
		{Check: Meta{ID: "hpa-probe", Probe: true}, Status: Skip},
		{Check: Meta{ID: "scale-up-probe", Probe: true, OptIn: "--probe-scale-up"}, Status: Skip},
		{Check: Meta{ID: "gang-probe", Probe: true}, Status: Skip},
		{Check: Meta{ID: "dra-probe", Probe: true}, Status: Pass},
		{Check: Meta{ID: "metrics-apis"}, Status: Skip},
	}
	assert.Equal(t, "; behaviour not probed (hpa-probe, gang-probe: run with --probe; scale-up-probe: run with --probe --probe-scale-up)", unprobed(rs, ""))
	assert.Empty(t, unprobed(rs[3:], ""))
}
