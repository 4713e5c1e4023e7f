package checks

import (
	"context"
	"fmt"
	"time"

	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
)

// Status is a check's verdict.
type Status string

// The verdicts. Error means the claim could not be evaluated (the cluster
// refused a read, a timeout, a recording without the answer) and is never
// taken for a Pass.
const (
	Pass  Status = "pass"
	Warn  Status = "warn"
	Fail  Status = "fail"
	Skip  Status = "skip"
	Error Status = "error"
)

// rank orders verdicts from best to worst, for aggregation.
func (s Status) rank() int {
	switch s {
	case Pass:
		return 1
	case Warn:
		return 2
	case Fail:
		return 3
	case Error:
		return 4
	}
	return 0 // Skip: says nothing either way
}

// Worst returns the worse of two verdicts; Skip yields to anything.
func Worst(a, b Status) Status {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// Level is how strongly a requirement binds.
type Level string

// The levels of the CNCF checklists.
const (
	Must   Level = "MUST"
	Should Level = "SHOULD"
)

// Meta describes a check. ID is kebab-case and never renamed: reports cite it.
type Meta struct {
	ID          string
	Title       string
	Requirement string
	// PerOperator checks run once for each detected operator profile.
	PerOperator bool
	// Probe checks write to the cluster (dry runs, a canary in a namespace
	// of the run's own) and run only under --probe, after every read-only
	// check of the run has finished (see Run).
	Probe bool
	// OptIn is the flag a probe needs besides --probe, for one that costs
	// more than the others (a node added for minutes).
	OptIn string
	// ReadsNodePods marks a check that reads the pods of every accelerator
	// node (cluster.Cache.NodePods): the longest reads of a run. Run starts
	// these first and side by side, so that they overlap the rest rather
	// than finish after it. It is how a run is scheduled, not what it
	// judges by: it is not in the catalog's digest, nor in a report.
	ReadsNodePods bool `json:"-"`
	// Description says what is checked and how the verdict is reached.
	Description string
	// Remediation says what to do when the check fails.
	Remediation string
}

// Step is one block of evidence: a command a person can re-run, exactly what
// it printed, and when that was captured.
type Step struct {
	Command    string
	Output     string
	CapturedAt time.Time
	Note       string
}

// Result is a check's answer for one target (an operator, or the cluster).
type Result struct {
	Check    Meta
	Operator string // empty for cluster-wide checks
	Status   Status
	// Reason is one line saying why.
	Reason   string
	Evidence []Step
	// Details are further findings, one line each (a pod not Ready, a
	// certificate's expiry), in the order found.
	Details []string
	// Table is a summary aiconform computed (not kubectl output), such as
	// a GPU node's capacity, allocatable and requested.
	Table *Table
	// Versions found (an operator's image tags), for the report.
	Versions []string
	Started  time.Time
	Finished time.Time
}

// Table is a small table of strings.
type Table struct {
	Header []string
	Rows   [][]string
}

// Env is what a check may use. Profile is set for per-operator checks, and
// with it where its controller was found.
type Env struct {
	Cluster *cluster.Cache
	Profile *Profile
	// Install is where the profile's controller was found, nil when it was
	// found nowhere; LocateErr is why it could not be looked for.
	Install   *Install
	LocateErr error
	Now       func() time.Time
	// Probe is the run's probe session under --probe; nil keeps the run
	// read-only, and probe checks skip.
	Probe *probe.Session
}

// Fresh is env with a cache of its own, for what a probe reads after it
// wrote: the run's shared reads are of the cluster before any probe.
func (e *Env) Fresh() *Env {
	return &Env{Cluster: e.Cluster.Fresh(), Profile: e.Profile, Install: e.Install, LocateErr: e.LocateErr, Now: e.Now}
}

// Check is one question asked of the cluster.
//
// Run must not change the cluster. It returns an error only when the claim
// cannot be evaluated; an unmet claim is a Fail with a reason. The Result it
// returns alongside an error keeps the evidence gathered so far.
type Check interface {
	Meta() Meta
	Run(ctx context.Context, env *Env) (Result, error)
}

// AddEvidence renders g and adds it to r. A Table that cannot be read is kept
// as a step saying so, since partial evidence is still evidence of what
// was tried.
func (r *Result) AddEvidence(ctx context.Context, env *Env, g cluster.Get, note string) {
	out, at, err := env.Cluster.Print(ctx, g)
	r.addStep(env, g.Command(), out, at, err, note)
}

// AddRawEvidence is AddEvidence for `kubectl get --raw`.
func (r *Result) AddRawEvidence(ctx context.Context, env *Env, g cluster.GetRaw, note string) {
	out, at, err := env.Cluster.PrintRaw(ctx, g)
	r.addStep(env, g.Command(), out, at, err, note)
}

func (r *Result) addStep(env *Env, command, out string, at time.Time, err error, note string) {
	if err != nil {
		if out == "" {
			// Not an answer of the API server (a recording without it, a
			// timeout): say what happened rather than pretend kubectl's words.
			out = fmt.Sprintf("error: %v\n", err)
		}
		if at.IsZero() {
			at = env.Now()
		}
	}
	r.Evidence = append(r.Evidence, Step{Command: command, Output: out, CapturedAt: at.UTC(), Note: note})
}

// Finish sets a verdict and its reason.
func (r *Result) Finish(s Status, format string, args ...any) {
	r.Status = s
	r.Reason = fmt.Sprintf(format, args...)
}
