package probe

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestTimelineRows(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	tl := Timeline{T0: t0}
	tl.Add(t0, "created %s", "jobs/a")
	tl.Add(t0.Add(2450*time.Millisecond), "bound")
	assert.Equal(t, [][]string{
		{"created jobs/a", "09:00:00.000", "+0.0 s"},
		{"bound", "09:00:02.450", "+2.5 s"},
	}, tl.Rows)
}
