package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
)

// APIVersion names the request and answer contract (docs/report.schema.json,
// $defs pluginRequest and pluginAnswer). A plugin echoes it in its answer,
// so that a plugin written for a later contract is refused with the reason
// rather than half understood.
const APIVersion = "aiconform.io/plugin/v1"

// Request is what a plugin reads on stdin, one JSON object.
type Request struct {
	APIVersion string `json:"apiVersion"`
	// RunID is the run's id: the label of what a probe run creates
	// (aiconform.io/run=RunID), so that a plugin that writes under probe
	// labels its objects as aiconform's own cleanup finds them.
	RunID string `json:"runID"`
	// Check and Requirement are the ids the plugin's answer is reported
	// under.
	Check       string `json:"check"`
	Requirement string `json:"requirement,omitempty"`
	// Kubeconfig is the kubeconfig file aiconform was given; empty means
	// the default loading rules (KUBECONFIG, then ~/.kube/config).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Context is the kubeconfig context; empty means its current one.
	Context string `json:"context,omitempty"`
	// Probe is true when the run may write to the cluster (--probe); a
	// plugin that would write must not when it is false.
	Probe bool `json:"probe"`
	// TimeoutSeconds is how long the plugin has; Deadline is when its
	// process group is killed.
	TimeoutSeconds float64   `json:"timeoutSeconds"`
	Deadline       time.Time `json:"deadline"`
}

// Answer is what a plugin prints on stdout: one JSON object, a check result
// in the report's own shape (docs/report.schema.json, $defs check).
type Answer struct {
	APIVersion string `json:"apiVersion"`
	// Status is pass, fail, warn, skip or error; nothing else, and never
	// implied: an answer without it is not a pass.
	Status   string     `json:"status"`
	Reason   string     `json:"reason"`
	Details  []string   `json:"details,omitempty"`
	Evidence []Evidence `json:"evidence,omitempty"`
}

// Evidence is one block of a plugin's evidence, as the report writes one.
// CapturedAt is a string so that a missing or malformed time is told apart
// from a zero one.
type Evidence struct {
	Command    string `json:"command"`
	Output     string `json:"output"`
	CapturedAt string `json:"capturedAt"`
	Note       string `json:"note,omitempty"`
}

// rawAnswer decodes with pointers so that a missing field is told apart
// from an empty one.
type rawAnswer struct {
	APIVersion *string       `json:"apiVersion"`
	Status     *string       `json:"status"`
	Reason     *string       `json:"reason"`
	Details    []string      `json:"details"`
	Evidence   []rawEvidence `json:"evidence"`
}

type rawEvidence struct {
	Command    *string `json:"command"`
	Output     *string `json:"output"`
	CapturedAt *string `json:"capturedAt"`
	Note       *string `json:"note"`
}

// step is a validated evidence block.
type step struct {
	Command, Output, Note string
	CapturedAt            time.Time
}

// ParseAnswer decodes and validates what a plugin printed. It is strict in
// the way the schema is (no unknown field, nothing after the object), since
// a misspelt "Status" read as absent would turn a pass into an error with
// a reason nobody understands, and a misspelt "evidnce" would drop proof
// silently.
func ParseAnswer(out []byte) (Answer, error) {
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	var raw rawAnswer
	if err := dec.Decode(&raw); err != nil {
		return Answer{}, fmt.Errorf("not a JSON answer: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Answer{}, errors.New("not a JSON answer: more follows the object")
	}
	var a Answer
	switch {
	case raw.APIVersion == nil:
		return a, errors.New(`no "apiVersion"`)
	case *raw.APIVersion != APIVersion:
		return a, fmt.Errorf(`"apiVersion" is %q, not %q`, *raw.APIVersion, APIVersion)
	case raw.Status == nil:
		return a, errors.New(`no "status": an answer counts as a pass only when it says "status": "pass"`)
	}
	switch checks.Status(*raw.Status) {
	case checks.Pass, checks.Fail, checks.Warn, checks.Skip, checks.Error:
	default:
		return a, fmt.Errorf(`"status" is %q, not one of pass, fail, warn, skip, error`, *raw.Status)
	}
	if raw.Reason == nil || strings.TrimSpace(*raw.Reason) == "" {
		return a, errors.New(`no "reason": a verdict says why`)
	}
	a = Answer{APIVersion: *raw.APIVersion, Status: *raw.Status, Reason: *raw.Reason, Details: raw.Details}
	for i, e := range raw.Evidence {
		if _, err := e.step(); err != nil {
			return Answer{}, fmt.Errorf("evidence[%d]: %w", i, err)
		}
		ev := Evidence{Command: *e.Command, Output: *e.Output, CapturedAt: *e.CapturedAt}
		if e.Note != nil {
			ev.Note = *e.Note
		}
		a.Evidence = append(a.Evidence, ev)
	}
	return a, nil
}

func (e rawEvidence) step() (step, error) {
	switch {
	case e.Command == nil || *e.Command == "":
		return step{}, errors.New(`no "command": evidence names what a person can re-run`)
	case e.Output == nil:
		return step{}, errors.New(`no "output"`)
	case e.CapturedAt == nil:
		return step{}, errors.New(`no "capturedAt": evidence says when it was captured`)
	}
	at, err := parseUTC(*e.CapturedAt)
	if err != nil {
		return step{}, err
	}
	s := step{Command: *e.Command, Output: *e.Output, CapturedAt: at}
	if e.Note != nil {
		s.Note = *e.Note
	}
	return s, nil
}

// parseUTC accepts what the report writes: RFC 3339 in UTC, with a Z.
func parseUTC(s string) (time.Time, error) {
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf(`"capturedAt" %q is not an RFC 3339 time`, s)
	}
	if !strings.HasSuffix(s, "Z") {
		return time.Time{}, fmt.Errorf(`"capturedAt" %q is not in UTC (ends in Z)`, s)
	}
	return at.UTC(), nil
}
