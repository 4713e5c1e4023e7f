// Package plugin runs a user's check executables: a program that judges one
// check aiconform does not ship, reads a JSON request on stdin and prints
// its verdict, with its evidence, in the report's own shape on stdout
// (docs/extending.md, "Plugins"). A plugin is found on PATH as
// aiconform-check-NAME, the way kubectl finds its plugins, or declared by
// the user with a path.
//
// Whatever a plugin does, aiconform's verdict stays honest: an answer that
// does not validate, a non-zero exit, or a plugin past its time is Error
// with the reason, never a pass; its process group is killed so that
// nothing it started outlives the check; its evidence is marked as the
// plugin's, since aiconform did not capture it.
package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/probe"
)

// Prefix is what a plugin's file name starts with on PATH; the rest is its
// name.
const Prefix = "aiconform-check-"

// DefaultTimeout bounds a plugin whose Spec gives none, so that no plugin
// runs unbounded even when the run itself has no deadline.
const DefaultTimeout = 2 * time.Minute

// MaxOutput bounds what is kept of a plugin's stdout: a runaway plugin must
// not exhaust aiconform's memory, and a real answer with its evidence is far
// smaller. A plugin that prints more is Error.
const MaxOutput = 4 << 20

// Spec is one plugin as the user declared it or as Discover found it.
type Spec struct {
	// Name is the plugin's name: NAME of aiconform-check-NAME, as
	// ValidName allows, since the check id defaults to "plugin-"+Name.
	Name string
	// Path is the executable; Args are passed to it as they are.
	Path string
	Args []string
	// ID is the check id it is reported under; empty means "plugin-"+Name.
	ID string
	// Title defaults to "Plugin "+Name.
	Title string
	// Requirement is the requirement it serves: a checklist id such as
	// robust_controller, or one of the user's own.
	Requirement string
	// Timeout bounds one run of it; zero means DefaultTimeout. The run's
	// own deadline, when sooner, wins.
	Timeout time.Duration
	// Source says where it was declared ("aiconform.yaml:12") or "PATH".
	Source string
	// Probe marks a plugin that writes to the cluster: like aiconform's own
	// probes it runs only under --probe (else it is skipped), after every
	// read-only check of the run, so that none judges what it wrote.
	Probe bool
}

// CheckID is the id the plugin's result is reported under.
func (s Spec) CheckID() string {
	if s.ID != "" {
		return s.ID
	}
	return "plugin-" + s.Name
}

// Conn is what a plugin's request carries from the command line.
type Conn struct {
	// Kubeconfig is the --kubeconfig path, empty for the default rules.
	Kubeconfig string
	// Context is the --context name, empty for the current context.
	Context string
	// RunID is the run's id when the run has no probe session; every plugin
	// of a run should get the same (probe.NewRunID at the run's start).
	// Empty makes each run of the check derive one.
	RunID string
}

// New makes a check of spec. It does not look at the executable: one that
// is missing or not executable is an Error result when the check runs, so
// that a broken plugin is reported rather than dropping out of the run.
func New(spec Spec, conn Conn) checks.Check {
	return &check{spec: spec, conn: conn}
}

type check struct {
	spec Spec
	conn Conn
}

// Meta says whose check it is and where it came from, because a reader of
// the report must tell the user's checks from aiconform's own.
func (c *check) Meta() checks.Meta {
	title := c.spec.Title
	if title == "" {
		title = "Plugin " + c.spec.Name
	}
	from := c.spec.Source
	if from == "" {
		from = "the configuration"
	}
	return checks.Meta{
		ID:          c.spec.CheckID(),
		Title:       title,
		Requirement: c.spec.Requirement,
		Probe:       c.spec.Probe,
		Description: fmt.Sprintf("A check of the user's own: plugin %s (%s), declared in %s. "+
			"aiconform runs it with a JSON request on stdin and reports the verdict it prints; "+
			"its evidence is the plugin's, not captured by aiconform. An answer that does not validate, "+
			"a non-zero exit or a run past its timeout is an error, never a pass.", c.spec.Name, c.spec.Path, from),
		Remediation: fmt.Sprintf("Read the plugin's reason and evidence; what it checks and how to fix it is for the plugin's author (%s) to say.", c.spec.Path),
	}
}

// Run runs the plugin once. Every way it can fail is an Error result with
// the reason and a nil error, so that the reason the runner reports is the
// plugin's story (exit code, what it printed), not a bare Go error.
func (c *check) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	now := time.Now
	if env != nil && env.Now != nil {
		now = env.Now
	}
	res := checks.Result{Check: c.Meta()}
	if c.spec.Probe && (env == nil || env.Probe == nil) {
		res.Finish(checks.Skip, "plugin %s writes to the cluster and runs only under --probe", c.spec.Name)
		return res, nil
	}
	timeout := c.spec.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		// To the millisecond, for a reason that reads well.
		timeout = time.Until(d).Truncate(time.Millisecond)
	}
	if ctx.Err() != nil {
		res.Finish(checks.Error, "plugin %s not started: the run was over (%v)", c.spec.Name, context.Cause(ctx))
		return res, nil
	}
	if timeout <= 0 {
		res.Finish(checks.Error, "plugin %s not started: no time was left of the run", c.spec.Name)
		return res, nil
	}
	req := Request{
		APIVersion: APIVersion, RunID: c.runID(env, now), Check: c.spec.CheckID(), Requirement: c.spec.Requirement,
		Kubeconfig: c.conn.Kubeconfig, Context: c.conn.Context, Probe: env != nil && env.Probe != nil,
		// The wall clock, not env.Now: a run judged at a recording's time
		// still kills its plugin by the real one.
		TimeoutSeconds: timeout.Seconds(), Deadline: time.Now().Add(timeout).UTC().Truncate(time.Second),
	}
	body, err := json.Marshal(req)
	if err != nil {
		res.Finish(checks.Error, "plugin %s: encode its request: %v", c.spec.Name, err)
		return res, nil
	}
	ran := execute(ctx, c.spec, body, timeout)
	secrets := secretValues(os.Environ())
	switch {
	case ran.startErr != nil:
		res.Finish(checks.Error, "plugin %s not started: %v", c.spec.Name, ran.startErr)
	case ran.timedOut:
		res.Finish(checks.Error, "plugin %s did not answer within %s; its process group was killed%s", c.spec.Name, timeout, stderrTail(ran.stderr, secrets))
	case ran.cancelled:
		res.Finish(checks.Error, "plugin %s stopped: %v; its process group was killed", c.spec.Name, context.Cause(ctx))
	case ran.exitErr != nil:
		var ee *exec.ExitError
		if errors.As(ran.exitErr, &ee) && ee.ExitCode() >= 0 {
			res.Finish(checks.Error, "plugin %s exited with code %d%s", c.spec.Name, ee.ExitCode(), stderrTail(ran.stderr, secrets))
		} else {
			res.Finish(checks.Error, "plugin %s: %v%s", c.spec.Name, ran.exitErr, stderrTail(ran.stderr, secrets))
		}
	case ran.stdout.truncated:
		res.Finish(checks.Error, "plugin %s printed more than %d MiB on stdout; nothing of it is kept", c.spec.Name, MaxOutput>>20)
	default:
		c.judge(&res, ran.stdout.Bytes(), ran.stderr, secrets)
	}
	return res, nil
}

// judge turns what the plugin printed into the result.
func (c *check) judge(res *checks.Result, out []byte, stderr *tail, secrets []secret) {
	if len(bytes.TrimSpace(out)) == 0 {
		res.Finish(checks.Error, "plugin %s printed nothing on stdout: no verdict%s", c.spec.Name, stderrTail(stderr, secrets))
		return
	}
	a, err := ParseAnswer(out)
	if err != nil {
		res.Finish(checks.Error, "plugin %s printed no valid answer (%v); it printed: %s", c.spec.Name, scrub(err.Error(), secrets), quote(out, secrets))
		return
	}
	for _, e := range a.Evidence {
		at, _ := parseUTC(e.CapturedAt) // ParseAnswer checked it
		note := fmt.Sprintf("printed by plugin %s, not captured by aiconform", c.spec.Name)
		if e.Note != "" {
			note += ": " + e.Note
		}
		res.Evidence = append(res.Evidence, checks.Step{
			Command: scrub(e.Command, secrets), Output: scrub(e.Output, secrets), CapturedAt: at, Note: scrub(note, secrets),
		})
	}
	for _, d := range a.Details {
		res.Details = append(res.Details, scrub(d, secrets))
	}
	res.Finish(checks.Status(a.Status), "%s", scrub(oneLine(a.Reason), secrets))
}

// runID is the probe session's id, so that what a plugin writes under
// --probe carries the label aiconform cleanup removes; without a session,
// the run's id from Conn, or one made as probe makes them.
func (c *check) runID(env *checks.Env, now func() time.Time) string {
	switch {
	case env != nil && env.Probe != nil:
		return env.Probe.RunID
	case c.conn.RunID != "":
		return c.conn.RunID
	}
	return probe.NewRunID(now())
}

// oneLine keeps a reason on one line, as the report's renderers expect.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
