package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func jsonOf(t *testing.T, r *Report) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, JSON(&buf, r))
	return buf.String()
}

// A report stays valid however it is indented, and when it was written by
// a version that did not know a field this one has (a field with
// omitempty is simply absent).
func TestReadIgnoresLayout(t *testing.T) {
	good := jsonOf(t, sealed(t, fixture()))
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, []byte(good)))
	for name, data := range map[string]string{
		"compact":  compact.String(),
		"tabs":     strings.ReplaceAll(good, "\n  ", "\n\t"),
		"CRLF":     strings.ReplaceAll(good, "\n", "\r\n"),
		"no final": strings.TrimSuffix(good, "\n"),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Read(strings.NewReader(data))
			assert.NoError(t, err)
		})
	}
}

// What Seal wrote, Read takes back unchanged: the hand-made fixture (HTML
// characters, tables, notes), a recording, and what Build really makes.
func TestReadAcceptsSealed(t *testing.T) {
	for name, r := range map[string]*Report{
		"fixture":  sealed(t, fixture()),
		"recorded": sealed(t, recorded()),
		"built":    sealed(t, built(t)),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Read(strings.NewReader(jsonOf(t, r)))
			require.NoError(t, err)
			assert.Equal(t, r.Digest, got.Digest)
			assert.Equal(t, jsonOf(t, r), jsonOf(t, got), "a report read back renders the same")
			resealed := *got
			require.NoError(t, resealed.Seal(checks.Level(r.Run.FailOn)))
			assert.Equal(t, r.Digest, resealed.Digest, "Seal and Read agree on the digest")
		})
	}
}

func TestReadRefuses(t *testing.T) {
	good := jsonOf(t, sealed(t, fixture()))
	unsealed := jsonOf(t, fixture())
	tests := []struct {
		name, data, want string
	}{
		{"an evidence byte changed", strings.Replace(good, "CrashLoopBackOff", "Running", 1), "does not match the content"},
		{"the digest changed", strings.Replace(good, `"digest": "sha256:`, `"digest": "sha256:0`, 1), "does not match the content"},
		{"never sealed", unsealed, "no digest"},
		{"not JSON", "{\n\"schemaVersion\": \"1\",\n}", "not a report.json: line 3: invalid character '}'"},
		{"not a report", `{"kind": "List"}`, "no schemaVersion"},
		{"a newer schema", strings.Replace(good, `"schemaVersion": "1",`, `"schemaVersion": "2", "newThing": {},`, 1), `schemaVersion "2" is not one this aiconform reads`},
		{"an unknown field", strings.Replace(good, `"schemaVersion": "1",`, `"schemaVersion": "1", "surprise": true,`, 1), `unknown field "surprise"`},
		{"two documents", good + "{}\n", "not a report.json: line "},
		{"the digest twice", strings.Replace(good, `"schemaVersion": "1",`, `"schemaVersion": "1", "digest": "x",`, 1), "digest is given twice"},
		{"reindented, then one byte changed", strings.Replace(strings.ReplaceAll(good, "\n  ", "\n\t"), `"failOn": "MUST"`, `"failOn": "SHOULD"`, 1), "does not match the content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NotEqual(t, good, tt.data, "the case must change the report")
			_, err := Read(strings.NewReader(tt.data))
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	r := sealed(t, fixture())
	require.NoError(t, os.WriteFile(path, []byte(jsonOf(t, r)), 0o644))
	got, err := ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, r.Digest, got.Digest)

	_, err = ReadFile(filepath.Join(dir, "nope.json"))
	assert.ErrorContains(t, err, "read report: open ")
	assert.ErrorContains(t, err, "nope.json: no such file")

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"kind": "List"}`), 0o644))
	_, err = ReadFile(bad)
	assert.EqualError(t, err, bad+": no schemaVersion: not a report.json written by aiconform")
}
