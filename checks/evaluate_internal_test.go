package checks

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A probe that needs its own flag besides --probe is said with it.
func TestUnprobedSaysTheFlags(t *testing.T) {
	off := ProbesOff + ": --probe would show it"
	rs := []Result{
		{Check: Meta{ID: "hpa-probe", Probe: true}, Status: Skip, Reason: off},
		{Check: Meta{ID: "scale-up-probe", Probe: true, OptIn: "--probe-scale-up"}, Status: Skip, Reason: off},
		{Check: Meta{ID: "gang-probe", Probe: true}, Status: Skip, Reason: off},
		{Check: Meta{ID: "dra-probe", Probe: true}, Status: Pass},
		{Check: Meta{ID: "metrics-apis"}, Status: Skip},
		// Skipped because there is nothing to probe, not for want of
		// --probe: no flag would run it.
		{Check: Meta{ID: "webhooks-answer", Probe: true}, Status: Skip, Reason: "no webhook: the webhook leg does not apply"},
	}
	assert.Equal(t, "; behaviour not probed (hpa-probe, gang-probe: run with --probe; scale-up-probe: run with --probe --probe-scale-up)", unprobed(rs, ""))
	assert.Empty(t, unprobed(rs[3:], ""))
	assert.Equal(t, "; not applicable: metrics-apis: ; webhooks-answer: no webhook: the webhook leg does not apply", inapplicable(rs, ""))
}
