package plugin

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const v = `"apiVersion":"aiconform.io/plugin/v1"`

// goodAnswer and badAnswers are shared with the schema's test, so that
// ParseAnswer and docs/report.schema.json agree on what an answer is.
var (
	goodAnswer = `{` + v + `,"status":"warn","reason":"r","details":["d"],"evidence":[{"command":"c","output":"","capturedAt":"2026-12-07T06:50:00.5Z","note":"n"}]}`
	badAnswers = map[string]string{
		"empty":                  ``,
		"not JSON":               `ok`,
		"two objects":            goodAnswer + goodAnswer,
		"no apiVersion":          `{"status":"pass","reason":"r"}`,
		"another apiVersion":     `{"apiVersion":"aiconform.io/plugin/v2","status":"pass","reason":"r"}`,
		"no status":              `{` + v + `,"reason":"r"}`,
		"status Pass":            `{` + v + `,"status":"Pass","reason":"r"}`,
		"no reason":              `{` + v + `,"status":"pass"}`,
		"blank reason":           `{` + v + `,"status":"pass","reason":" "}`,
		"unknown field":          `{` + v + `,"status":"pass","reason":"r","verdict":"pass"}`,
		"evidence without time":  `{` + v + `,"status":"pass","reason":"r","evidence":[{"command":"c","output":""}]}`,
		"evidence not UTC":       `{` + v + `,"status":"pass","reason":"r","evidence":[{"command":"c","output":"","capturedAt":"2026-12-07T07:50:00+01:00"}]}`,
		"evidence not a time":    `{` + v + `,"status":"pass","reason":"r","evidence":[{"command":"c","output":"","capturedAt":"yesterday"}]}`,
		"evidence no command":    `{` + v + `,"status":"pass","reason":"r","evidence":[{"output":"","capturedAt":"2026-12-07T06:50:00Z"}]}`,
		"evidence no output":     `{` + v + `,"status":"pass","reason":"r","evidence":[{"command":"c","capturedAt":"2026-12-07T06:50:00Z"}]}`,
		"evidence unknown field": `{` + v + `,"status":"pass","reason":"r","evidence":[{"command":"c","output":"","capturedAt":"2026-12-07T06:50:00Z","at":"x"}]}`,
		"evidence empty command": `{` + v + `,"status":"pass","reason":"r","evidence":[{"command":"","output":"","capturedAt":"2026-12-07T06:50:00Z"}]}`,
		"details not strings":    `{` + v + `,"status":"pass","reason":"r","details":[1]}`,
	}
)

func TestParseAnswer(t *testing.T) {
	a, err := ParseAnswer([]byte(goodAnswer + "\n"))
	require.NoError(t, err)
	assert.Equal(t, Answer{APIVersion: APIVersion, Status: "warn", Reason: "r", Details: []string{"d"},
		Evidence: []Evidence{{Command: "c", Output: "", CapturedAt: "2026-12-07T06:50:00.5Z", Note: "n"}}}, a)

	for name, out := range badAnswers {
		t.Run(name, func(t *testing.T) {
			_, err := ParseAnswer([]byte(out))
			assert.Error(t, err)
		})
	}
}
