//go:build linux

package plugin

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
	"github.com/aiconform/aiconform/report"
)

var fixedNow = time.Date(2026, 12, 7, 6, 52, 0, 0, time.UTC)

// fakeSpec is a spec running this test binary as the fake plugin mode.
func fakeSpec(t *testing.T, mode string, timeout time.Duration) Spec {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	return Spec{Name: mode, Path: self, Requirement: "robust_controller", Timeout: timeout, Source: "aiconform.yaml:12"}
}

func run(t *testing.T, ctx context.Context, spec Spec, conn Conn, env *checks.Env) checks.Result {
	t.Helper()
	if env == nil {
		env = &checks.Env{Now: func() time.Time { return fixedNow }}
	}
	res, err := New(spec, conn).Run(ctx, env)
	require.NoError(t, err, "a plugin's failure is a result, not an error")
	return res
}

func TestRunVerdicts(t *testing.T) {
	t.Setenv("FAKE_API_TOKEN", "s3cr3t-value-of-the-env")
	tests := []struct {
		mode   string
		status checks.Status
		reason []string
	}{
		{"pass", checks.Pass, []string{"every node is labelled"}},
		{"fail", checks.Fail, []string{"node n2 has no label second line"}},
		{"no-read", checks.Pass, []string{"did not read"}},
		{"invalid", checks.Error, []string{"printed no valid answer", "not a JSON answer", `"this is not JSON: xxx`, "… (2019 bytes in all)"}},
		{"exit", checks.Error, []string{"exited with code 3", `its stderr: "boom: cannot reach the cluster, token [$FAKE_API_TOKEN redacted]"`}},
		{"silent", checks.Error, []string{`printed nothing on stdout: no verdict; its stderr: "no cluster today"`}},
		{"no-status", checks.Error, []string{`no "status"`, `"status": "pass"`}},
		{"status-ok", checks.Error, []string{`"status" is "ok"`}},
		{"no-captured-at", checks.Error, []string{`evidence[0]: no "capturedAt"`}},
		{"huge", checks.Error, []string{"more than 4 MiB"}},
		{"unknown-mode", checks.Error, []string{"exited with code 99", "unknown fake unknown-mode"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			res := run(t, context.Background(), fakeSpec(t, tt.mode, time.Minute), Conn{}, nil)
			assert.Equal(t, tt.status, res.Status, res.Reason)
			for _, want := range tt.reason {
				assert.Contains(t, res.Reason, want)
			}
			assert.NotContains(t, res.Reason, "s3cr3t")
			if tt.status == checks.Error {
				assert.Empty(t, res.Evidence, "no evidence of an answer that does not count")
			}
		})
	}
}

func TestRunRequestAndEvidence(t *testing.T) {
	t.Setenv("FAKE_API_TOKEN", "s3cr3t-value-of-the-env")
	spec := fakeSpec(t, "pass", 30*time.Second)
	conn := Conn{Kubeconfig: "/home/u/.kube/config", Context: "prod", RunID: "20261207-065200-abcd"}
	before := time.Now()
	res := run(t, context.Background(), spec, conn, nil)
	require.Equal(t, checks.Pass, res.Status, res.Reason)
	require.Len(t, res.Details, 9)
	deadline, err := time.Parse(time.RFC3339, strings.TrimPrefix(res.Details[7], "deadline="))
	require.NoError(t, err, res.Details[7])
	assert.WithinRange(t, deadline, before.Add(29*time.Second), time.Now().Add(30*time.Second),
		"the deadline is by the wall clock, not the judging clock of env.Now")
	assert.Equal(t, []string{
		"runID=20261207-065200-abcd", "check=plugin-pass", "requirement=robust_controller",
		"kubeconfig=/home/u/.kube/config", "context=prod", "probe=false", "timeoutSeconds=30",
		res.Details[7], "token=[$FAKE_API_TOKEN redacted]",
	}, res.Details)
	require.Len(t, res.Evidence, 1)
	assert.Equal(t, checks.Step{
		Command: "kubectl get nodes", Output: "NAME   STATUS\nn1     Ready\n",
		CapturedAt: time.Date(2026, 12, 7, 6, 50, 0, 0, time.UTC),
		Note:       "printed by plugin pass, not captured by aiconform: from the fake",
	}, res.Evidence[0])

	t.Run("probe session's run id", func(t *testing.T) {
		env := &checks.Env{Now: func() time.Time { return fixedNow }, Probe: &probe.Session{RunID: "20261207-065000-beef"}}
		res := run(t, context.Background(), spec, conn, env)
		assert.Contains(t, res.Details, "runID=20261207-065000-beef")
		assert.Contains(t, res.Details, "probe=true")
	})
	t.Run("a probe plugin", func(t *testing.T) {
		probing := spec
		probing.Probe = true
		assert.True(t, New(probing, conn).Meta().Probe)
		res := run(t, context.Background(), probing, conn, nil)
		assert.Equal(t, checks.Skip, res.Status)
		assert.Equal(t, "plugin pass writes to the cluster and runs only under --probe", res.Reason)
		env := &checks.Env{Now: func() time.Time { return fixedNow }, Probe: &probe.Session{RunID: "20261207-065000-beef"}}
		res = run(t, context.Background(), probing, conn, env)
		assert.Equal(t, checks.Pass, res.Status, res.Reason)
		assert.Contains(t, res.Details, "probe=true")
	})
	t.Run("run id derived as probe makes them", func(t *testing.T) {
		res := run(t, context.Background(), spec, Conn{}, nil)
		require.NotEmpty(t, res.Details)
		assert.Regexp(t, `^runID=20261207-065200-[0-9a-f]{4}$`, res.Details[0])
	})
	t.Run("the run's deadline when sooner", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res := run(t, ctx, spec, conn, nil)
		var secs float64
		for _, d := range res.Details {
			if _, err := fmt.Sscanf(d, "timeoutSeconds=%g", &secs); err == nil {
				break
			}
		}
		assert.InDelta(t, 10, secs, 1)
	})
}

// started runs spec in the background and returns, once the fake wrote
// them, its pid and its child's, and the result when the run ends; ok is
// false, with the result, when the run ended before the fake said it
// started.
func started(t *testing.T, ctx context.Context, spec Spec) (pluginPid, childPid int, result <-chan checks.Result, ok bool) {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "ready")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	t.Setenv(readyEnv, fifo)
	results := make(chan checks.Result, 1)
	go func() {
		res, _ := New(spec, Conn{}).Run(ctx, &checks.Env{Now: time.Now})
		results <- res
	}()
	// The pids the fake wrote, or nil once the FIFO has no writer left
	// without them.
	pids := make(chan *[2]int, 1)
	go func() {
		f, err := os.Open(fifo) // blocks until a writer opens it
		if err != nil {
			pids <- nil
			return
		}
		defer f.Close()
		var p [2]int
		if _, err := fmt.Fscan(bufio.NewReader(f), &p[0], &p[1]); err != nil {
			pids <- nil
			return
		}
		pids <- &p
	}()
	select {
	case p := <-pids:
		if p != nil {
			return p[0], p[1], results, true
		}
		return 0, 0, results, false
	case res := <-results:
		// A plugin that started and ended at once (one that answers and
		// leaves a child behind) may end before the reader above has read
		// what it wrote, which the pipe keeps. Opening the FIFO as a writer
		// of our own, and closing it, lets the reader end either way.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			_ = w.Close()
		}
		ended := make(chan checks.Result, 1)
		ended <- res
		if p := <-pids; p != nil {
			return p[0], p[1], ended, true
		}
		return 0, 0, ended, false
	}
}

// mustStart is started for a plugin that has time enough to start.
func mustStart(t *testing.T, ctx context.Context, spec Spec) (pluginPid, childPid int, result <-chan checks.Result) {
	t.Helper()
	pluginPid, childPid, result, ok := started(t, ctx, spec)
	if !ok {
		res := <-result
		t.Fatalf("the plugin ended before it said it started: %s: %s", res.Status, res.Reason)
	}
	return pluginPid, childPid, result
}

// assertGone waits for child (ours since the test is a subreaper) and says
// it was killed, then that the plugin's process group is empty.
func assertGone(t *testing.T, pluginPid, childPid int) {
	t.Helper()
	type waited struct {
		status unix.WaitStatus
		err    error
	}
	w := make(chan waited, 1)
	go func() {
		var ws unix.WaitStatus
		_, err := unix.Wait4(childPid, &ws, 0, nil)
		w <- waited{ws, err}
	}()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case got := <-w:
		require.NoError(t, got.err)
		assert.True(t, got.status.Signaled() && got.status.Signal() == unix.SIGKILL, "the plugin's child was killed: %v", got.status)
	case <-timer.C:
		_ = unix.Kill(childPid, unix.SIGKILL)
		t.Fatalf("the plugin's child %d is still running", childPid)
	}
	assert.Equal(t, unix.ESRCH, unix.Kill(-pluginPid, 0), "the plugin's process group is gone")
}

func TestRunTimeoutKillsTheGroup(t *testing.T) {
	// A loaded machine may take longer than a short timeout to start the
	// fake and its child; the run is then an Error all the same, but the
	// test learns no pid to look for: it tries again with more time.
	for _, timeout := range []time.Duration{300 * time.Millisecond, time.Second, 5 * time.Second} {
		pluginPid, childPid, results, ok := started(t, context.Background(), fakeSpec(t, "hang", timeout))
		res := <-results
		assert.Equal(t, checks.Error, res.Status)
		assert.Contains(t, res.Reason, fmt.Sprintf("plugin hang did not answer within %s; its process group was killed", timeout))
		if !ok {
			t.Logf("not started within %s; again with more time", timeout)
			continue
		}
		assert.Contains(t, res.Reason, `its stderr: "waiting for ever"`)
		assertGone(t, pluginPid, childPid)
		return
	}
	t.Fatal("the fake plugin never started in time")
}

func TestRunCancelKillsTheGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pluginPid, childPid, results := mustStart(t, ctx, fakeSpec(t, "hang", time.Minute))
	cancel() // as Ctrl-C does to the run
	res := <-results
	assert.Equal(t, checks.Error, res.Status)
	assert.Contains(t, res.Reason, "plugin hang stopped: context canceled; its process group was killed")
	assertGone(t, pluginPid, childPid)
}

func TestRunKillsWhatAPluginLeft(t *testing.T) {
	pluginPid, childPid, results := mustStart(t, context.Background(), fakeSpec(t, "orphan", time.Minute))
	res := <-results
	assert.Equal(t, checks.Pass, res.Status, res.Reason)
	assertGone(t, pluginPid, childPid)
}

func TestRunNotStarted(t *testing.T) {
	res := run(t, context.Background(), Spec{Name: "gone", Path: filepath.Join(t.TempDir(), "aiconform-check-gone")}, Conn{}, nil)
	assert.Equal(t, checks.Error, res.Status)
	assert.Contains(t, res.Reason, "plugin gone not started")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res = run(t, ctx, fakeSpec(t, "pass", time.Minute), Conn{}, nil)
	assert.Equal(t, checks.Error, res.Status)
	assert.Equal(t, "plugin pass not started: the run was over (context canceled)", res.Reason)
}

// TestRequestSchema validates the request a plugin really reads against
// docs/report.schema.json.
func TestRequestSchema(t *testing.T) {
	s := schemaDef(t, "pluginRequest")
	for name, conn := range map[string]Conn{
		"defaults":        {},
		"kubeconfig, run": {Kubeconfig: "/k", Context: "c", RunID: "20261207-065200-abcd"},
	} {
		t.Run(name, func(t *testing.T) {
			res := run(t, context.Background(), fakeSpec(t, "request", time.Minute), conn, nil)
			require.Equal(t, checks.Skip, res.Status, res.Reason)
			require.Len(t, res.Details, 1)
			doc, err := jsonschema.UnmarshalJSON(strings.NewReader(res.Details[0]))
			require.NoError(t, err)
			assert.NoError(t, s.Validate(doc), res.Details[0])
		})
	}
}

// TestReportValidates puts plugins' results, a pass with its evidence and
// an error quoting what a plugin printed, in a report, and validates the
// report.json against docs/report.schema.json.
func TestReportValidates(t *testing.T) {
	var results []checks.Result
	for _, mode := range []string{"pass", "invalid"} {
		res := run(t, context.Background(), fakeSpec(t, mode, time.Minute), Conn{}, nil)
		res.Started, res.Finished = fixedNow, fixedNow.Add(time.Second)
		results = append(results, res)
	}
	req := checks.Requirement{ID: "robust_controller", Title: "t", Category: "operator", Level: checks.Must, Program: "cncf"}
	r := report.Build(report.Tool{Name: "aiconform", Version: "test"}, cluster.Info{Live: true}, fixedNow, fixedNow.Add(time.Minute),
		checks.Outcome{Results: results},
		[]checks.Verdict{{Requirement: req, Status: checks.NotImplemented, Result: checks.Error, Conclusion: "c", Results: results}})
	require.NoError(t, r.Seal(checks.Must))
	var buf bytes.Buffer
	require.NoError(t, report.JSON(&buf, r))
	written := buf.String()
	doc, err := jsonschema.UnmarshalJSON(&buf)
	require.NoError(t, err)

	f, err := os.Open(filepath.Join("..", "docs", "report.schema.json"))
	require.NoError(t, err)
	defer f.Close()
	schemaDoc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	require.NoError(t, c.AddResource("report.schema.json", schemaDoc))
	s, err := c.Compile("report.schema.json")
	require.NoError(t, err)
	assert.NoError(t, s.Validate(doc))
	assert.Contains(t, written, "printed by plugin pass, not captured by aiconform")
	assert.Contains(t, written, "plugin invalid printed no valid answer")
}
