package probe

import (
	"fmt"
	"time"
)

// Timeline is what a probe saw happen, in order: each event with its time
// (UTC, to the millisecond) and the time since the probe began, so that a
// reader sees both when and how long.
type Timeline struct {
	// T0 is when the probe began: its first write.
	T0   time.Time
	Rows [][]string
}

// Add records one event seen at at.
func (t *Timeline) Add(at time.Time, format string, args ...any) {
	t.Rows = append(t.Rows, []string{fmt.Sprintf(format, args...), at.UTC().Format("15:04:05.000"), "+" + Seconds(at.Sub(t.T0))})
}

// Seconds is a duration as probe verdicts say it: "2.4 s".
func Seconds(d time.Duration) string {
	return fmt.Sprintf("%.1f s", d.Seconds())
}
