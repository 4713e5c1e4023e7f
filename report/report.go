package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
)

// SchemaVersion is the version of the JSON contract (docs/report.schema.json).
// Fields are added without changing it; renaming or removing one bumps it.
const SchemaVersion = "1"

// Report is one run.
type Report struct {
	SchemaVersion string        `json:"schemaVersion"`
	Tool          Tool          `json:"tool"`
	Run           Run           `json:"run"`
	Summary       Totals        `json:"summary"`
	Operators     []Operator    `json:"operators"`
	Requirements  []Requirement `json:"requirements"`
	// Digest is the SHA-256 of the report's JSON with Digest empty.
	Digest string `json:"digest"`
}

// Tool names what made the report.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// CatalogDigest identifies the requirements, profiles and checks the run
	// judged by (checks.CatalogDigest).
	CatalogDigest string `json:"catalogDigest,omitempty"`
}

// Run says when, against what.
type Run struct {
	StartedAt  time.Time    `json:"startedAt"`
	FinishedAt time.Time    `json:"finishedAt"`
	Cluster    cluster.Info `json:"cluster"`
	// FailOn is the lowest requirement level that fails the run (MUST, or
	// SHOULD under --fail-on should).
	FailOn string `json:"failOn"`
	// Redacted is true when node names, addresses, hosts and cloud ids were
	// replaced by pseudonyms (check --redact; package redact).
	Redacted bool `json:"redacted,omitempty"`
	// Probe is set when the run wrote to the cluster (check --probe).
	Probe *ProbeRun `json:"probe,omitempty"`
}

// ProbeRun names what a run with probes wrote: everything is labelled
// aiconform.io/run=RunID, in Namespace (a cluster-scoped object is named
// after RunID instead), which the run deleted at its end.
type ProbeRun struct {
	RunID     string `json:"runID"`
	Namespace string `json:"namespace"`
}

// Totals counts verdicts; it is the report's "summary" object. The Go name
// differs from the JSON one because Summary is the terminal renderer.
type Totals struct {
	// Passed is true when every MUST requirement is met.
	Passed       bool           `json:"passed"`
	Requirements map[string]int `json:"requirements"`
	Checks       map[string]int `json:"checks"`
}

// Operator is an operator profile and whether the cluster has it.
type Operator struct {
	Name     string   `json:"name"`
	Title    string   `json:"title"`
	Detected bool     `json:"detected"`
	CRDs     []string `json:"crds,omitempty"`
	// Controller is where its controller was found, namespace/Deployment,
	// in any namespace; FoundBy says how.
	Controller string   `json:"controller,omitempty"`
	FoundBy    []string `json:"foundBy,omitempty"`
	// Versions are the controller's images, where it was found.
	Versions []string `json:"versions,omitempty"`
}

// Requirement is a catalog entry and its verdict.
type Requirement struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Category string `json:"category"`
	Level    string `json:"level"`
	Program  string `json:"program"`
	// Status is one of Implemented, Not Implemented, Partially Implemented, N/A.
	Status string `json:"status"`
	// Result is the verdict in check vocabulary: error (could not be
	// evaluated) stays apart from fail (not met).
	Result     string            `json:"result"`
	Conclusion string            `json:"conclusion"`
	Operator   string            `json:"operator,omitempty"`
	Operators  []OperatorVerdict `json:"operators,omitempty"`
	Checks     []Check           `json:"checks"`
}

// OperatorVerdict is one operator's standing on a per-operator requirement.
type OperatorVerdict struct {
	Operator string `json:"operator"`
	Result   string `json:"result"`
	Reason   string `json:"reason"`
}

// Check is one check's result for one target.
type Check struct {
	ID       string   `json:"id"`
	Title    string   `json:"title"`
	Operator string   `json:"operator,omitempty"`
	Status   string   `json:"status"`
	Reason   string   `json:"reason"`
	Details  []string `json:"details,omitempty"`
	// Remediation is what the check's author advises once it has not
	// passed; a pass or a not-applicable carries none, as nothing is to
	// be fixed.
	Remediation string     `json:"remediation,omitempty"`
	Table       *Table     `json:"table,omitempty"`
	Evidence    []Evidence `json:"evidence"`
	// StartedAt and FinishedAt time the check itself.
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
}

// Table is a summary aiconform computed, not kubectl output.
type Table struct {
	Header []string   `json:"header"`
	Rows   [][]string `json:"rows"`
}

// Evidence is one re-runnable block.
type Evidence struct {
	Command    string    `json:"command"`
	Output     string    `json:"output"`
	CapturedAt time.Time `json:"capturedAt"`
	Note       string    `json:"note,omitempty"`
}

// Build assembles a report from a run's outcome and verdicts.
func Build(tool Tool, info cluster.Info, started, finished time.Time, out checks.Outcome, verdicts []checks.Verdict) *Report {
	r := &Report{
		SchemaVersion: SchemaVersion,
		Tool:          tool,
		Run:           Run{StartedAt: started.UTC(), FinishedAt: finished.UTC(), Cluster: info},
		Summary:       Totals{Passed: true, Requirements: map[string]int{}, Checks: map[string]int{}},
		Operators:     []Operator{},
		Requirements:  []Requirement{},
	}
	for _, d := range out.Detections {
		op := Operator{Name: d.Profile.Name, Title: d.Profile.Title, Detected: d.Found, CRDs: d.CRDs}
		if d.Install != nil {
			op.Controller, op.FoundBy = d.Install.Namespace+"/"+d.Install.Deployment, d.Install.FoundBy
		}
		for _, res := range out.Results {
			if res.Operator == d.Profile.Name && len(res.Versions) > 0 {
				op.Versions = res.Versions
			}
		}
		r.Operators = append(r.Operators, op)
	}
	for _, res := range out.Results {
		r.Summary.Checks[string(res.Status)]++
	}
	for _, v := range verdicts {
		req := Requirement{
			ID: v.Requirement.ID, Title: v.Requirement.Title, Category: v.Requirement.Category,
			Level: string(v.Requirement.Level), Program: v.Requirement.Program,
			Status: string(v.Status), Result: string(v.Result), Conclusion: v.Conclusion,
			Operator: v.Operator, Checks: []Check{},
		}
		for _, ov := range v.Operators {
			req.Operators = append(req.Operators, OperatorVerdict{Operator: ov.Operator, Result: string(ov.Verdict), Reason: ov.Reason})
		}
		for _, res := range v.Results {
			req.Checks = append(req.Checks, checkOf(res))
		}
		r.Summary.Requirements[req.Status]++
		r.Requirements = append(r.Requirements, req)
	}
	return r
}

func checkOf(res checks.Result) Check {
	c := Check{
		ID: res.Check.ID, Title: res.Check.Title, Operator: res.Operator, Status: string(res.Status),
		Reason: res.Reason, Details: res.Details, Evidence: []Evidence{},
		StartedAt: res.Started.UTC(), FinishedAt: res.Finished.UTC(),
	}
	switch res.Status {
	case checks.Fail, checks.Warn, checks.Error:
		c.Remediation = res.Check.Remediation
	}
	if res.Table != nil {
		// A table of no row is an empty list in JSON, as the schema says.
		c.Table = &Table{Header: res.Table.Header, Rows: res.Table.Rows}
		if c.Table.Rows == nil {
			c.Table.Rows = [][]string{}
		}
	}
	for _, e := range res.Evidence {
		c.Evidence = append(c.Evidence, Evidence{Command: e.Command, Output: e.Output, CapturedAt: e.CapturedAt.UTC(), Note: e.Note})
	}
	return c
}

// Seal decides whether the run passed, under failOn (the lowest level that
// counts), and computes the digest. Call it once, after Build.
func (r *Report) Seal(failOn checks.Level) error {
	r.Run.FailOn = string(failOn)
	r.Summary.Passed = true
	for _, req := range r.Requirements {
		counts := req.Level == string(checks.Must) || failOn == checks.Should
		met := req.Result == string(checks.Pass) || req.Result == string(checks.Warn) || req.Result == string(checks.Skip)
		if counts && !met {
			r.Summary.Passed = false
		}
	}
	r.Digest = ""
	// Hash the compact form of what JSON writes (no HTML escaping, no
	// trailing newline), so that anyone can check the digest with
	// `jq -cj '.digest=""' report.json | sha256sum`.
	h := &hashButLast{h: sha256.New()}
	enc := json.NewEncoder(h)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return err
	}
	if !bytes.Equal(h.last, []byte("\n")) {
		return fmt.Errorf("seal: the encoding ends in %q, not a newline", h.last)
	}
	r.Digest = "sha256:" + hex.EncodeToString(h.h.Sum(nil))
	return nil
}

// hashButLast hashes what is written to it but its last byte, which is
// the newline Encode ends with: the report is hashed as it is encoded,
// not copied whole into memory first (2 MB on bench/live's cluster).
type hashButLast struct {
	h    hash.Hash
	last []byte
}

func (w *hashButLast) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	w.h.Write(w.last)
	w.h.Write(p[:len(p)-1])
	w.last = append(w.last[:0], p[len(p)-1])
	return len(p), nil
}

// shown is false for the results of an operator the cluster does not have:
// each is a skip saying so, which report.json keeps but a reader need not
// see once per check.
func (r *Report) shown(c Check) bool {
	if c.Operator == "" {
		return true
	}
	for _, op := range r.Operators {
		if op.Name == c.Operator {
			return op.Detected
		}
	}
	return true
}

// absent names the operators the cluster does not have.
// installed is whether the operator profile name was detected; a name the
// report does not list counts as installed, so that its rows are shown.
func (r *Report) installed(name string) bool {
	for _, op := range r.Operators {
		if op.Name == name {
			return op.Detected
		}
	}
	return true
}

func (r *Report) absent() []string {
	var names []string
	for _, op := range r.Operators {
		if !op.Detected {
			names = append(names, op.Name)
		}
	}
	return names
}
