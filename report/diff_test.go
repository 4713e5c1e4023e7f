package report

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixtureReport runs every check on a built-in recording, as
// `aiconform check all --fixture name` does, on the fixed clock, so that
// the report and every diff of it are the same on every run.
func fixtureReport(t *testing.T, name string) *Report {
	t.Helper()
	data, err := fixtures.Recorded(name)
	require.NoError(t, err)
	rec, err := cluster.LoadRecording(name, data)
	require.NoError(t, err)
	info, err := rec.Info(context.Background())
	require.NoError(t, err)
	registry := builtin.Registry()
	catalog, err := checks.Catalog(registry)
	require.NoError(t, err)
	profiles, err := checks.BuiltinProfiles()
	require.NoError(t, err)
	now := func() time.Time { return base }
	out := checks.Run(context.Background(), cluster.NewCache(rec), profiles, checks.Selection{Requirements: catalog, Checks: registry},
		checks.RunOptions{Concurrency: 4, Timeout: time.Minute, JudgeAt: func() time.Time { return info.RecordedAt }}, now)
	r := Build(Tool{Name: "aiconform", Version: "v0.1.0"}, info, base, base, out, checks.Evaluate(catalog, out))
	require.NoError(t, r.Seal(checks.Must))
	return r
}

// clone copies a report through its JSON, so that a test can edit the copy.
func clone(t *testing.T, r *Report) *Report {
	t.Helper()
	data, err := json.Marshal(r)
	require.NoError(t, err)
	var c Report
	require.NoError(t, json.Unmarshal(data, &c))
	return &c
}

func diffText(t *testing.T, c Changes) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, DiffText(&buf, c))
	return buf.String()
}

func requirementOf(r *Report, id string) *Requirement {
	for i := range r.Requirements {
		if r.Requirements[i].ID == id {
			return &r.Requirements[i]
		}
	}
	return nil
}

func TestDiffFixtures(t *testing.T) {
	demo := fixtureReport(t, "demo")

	t.Run("identical reports: no changes, no regression", func(t *testing.T) {
		c := Diff(demo, fixtureReport(t, "demo"))
		assert.True(t, c.Empty())
		assert.False(t, c.Regressed)
		out := diffText(t, c)
		assert.Contains(t, out, "\nno changes\n")
		assert.True(t, strings.HasSuffix(out, "no regression: no requirement got worse\n"), out)
	})

	t.Run("controller crash-loop: kserve checks changed, Kubeflow Trainer now carries robust_controller", func(t *testing.T) {
		c := Diff(demo, fixtureReport(t, "controller-crashloop"))
		assert.False(t, c.Regressed, "%+v", c.Regressions)
		assert.True(t, c.DifferentClusters)
		assert.Contains(t, c.Requirements, RequirementChange{ID: "robust_controller", Level: "MUST", Kind: "operator", Old: "kserve", New: "kubeflow-trainer"})
		for _, r := range c.Requirements {
			assert.NotEqual(t, "status", r.Kind, "robust_controller stays Implemented")
		}
		var kserve []string
		for _, ch := range c.Checks {
			assert.Equal(t, "kserve", ch.Operator, "only kserve's checks changed: %+v", ch)
			if ch.Kind == "status" {
				kserve = append(kserve, ch.ID+": "+ch.OldStatus+" → "+ch.NewStatus)
			}
		}
		assert.Equal(t, []string{"controller-ready: pass → fail", "controller-lease: pass → fail", "webhooks-served: pass → fail"}, kserve)
		golden(t, "diff-demo-controller-crashloop.txt", []byte(diffText(t, c)))
	})

	t.Run("no operator: robust_controller, dra_support, ai_inference, the three networking SHOULDs, gang_scheduling, pod_autoscaling and ai_service_metrics regressed", func(t *testing.T) {
		// The scenario has no workload of models: no HPA shows the
		// adapter at work, no claim shows DRA at work, no gateway routes
		// to a model, and no monitoring system scrapes one.
		c := Diff(demo, fixtureReport(t, "no-operator"))
		assert.True(t, c.Regressed)
		require.Len(t, c.Regressions, 9)
		assert.Equal(t, Regression{Requirement: "robust_controller", Level: "MUST", Reason: "Implemented → Not Implemented, result pass → fail"}, c.Regressions[0])
		assert.Equal(t, Regression{Requirement: "dra_support", Level: "MUST", Reason: "Implemented → Not Implemented, result pass → fail"}, c.Regressions[1])
		assert.Equal(t, Regression{Requirement: "ai_inference", Level: "MUST", Reason: "Implemented → Not Implemented, result pass → fail"}, c.Regressions[2])
		for i, id := range []string{"advanced_inference_ingress", "high_performance_networking", "disaggregated_inference"} {
			assert.Equal(t, Regression{Requirement: id, Level: "SHOULD", Reason: "Implemented → Not Implemented"}, c.Regressions[3+i])
		}
		assert.Equal(t, Regression{Requirement: "gang_scheduling", Level: "MUST", Reason: "Implemented → Not Implemented, result pass → fail"}, c.Regressions[6])
		assert.Equal(t, Regression{Requirement: "pod_autoscaling", Level: "MUST", Reason: "Implemented → Not Implemented, result warn → fail"}, c.Regressions[7])
		assert.Equal(t, Regression{Requirement: "ai_service_metrics", Level: "MUST", Reason: "Implemented → Not Implemented, result pass → fail"}, c.Regressions[8])
		assert.Contains(t, c.Operators, OperatorChange{Operator: "kserve", Kind: "undetected"})
		assert.Contains(t, c.Operators, OperatorChange{Operator: "kuberay", Kind: "undetected"})
		out := diffText(t, c)
		assert.Contains(t, out, "robust_controller: Implemented → Not Implemented  [regression]\n")
		golden(t, "diff-demo-no-operator.txt", []byte(out))

		var js bytes.Buffer
		require.NoError(t, DiffJSON(&js, c))
		golden(t, "diff-demo-no-operator.json", js.Bytes())
	})

	t.Run("the way back is no regression", func(t *testing.T) {
		c := Diff(fixtureReport(t, "no-operator"), demo)
		assert.False(t, c.Regressed)
		assert.Contains(t, c.Operators, OperatorChange{Operator: "kserve", Kind: "detected"})
	})
}

func TestDiffIsDeterministic(t *testing.T) {
	old, new := fixtureReport(t, "demo"), fixtureReport(t, "controller-crashloop")
	first := diffText(t, Diff(old, new))
	for range 5 {
		assert.Equal(t, first, diffText(t, Diff(old, new)))
	}
}

func TestDiffRegressions(t *testing.T) {
	demo := fixtureReport(t, "demo")
	tests := []struct {
		name      string
		edit      func(r *Report)
		regressed bool
		reason    string
	}{
		{"Implemented → Partially Implemented", func(r *Report) {
			requirementOf(r, "robust_controller").Status = "Partially Implemented"
		}, true, "Implemented → Partially Implemented"},
		{"Implemented → N/A is neutral", func(r *Report) {
			requirementOf(r, "robust_controller").Status = "N/A"
		}, false, ""},
		{"MUST pass → error, status unchanged", func(r *Report) {
			requirementOf(r, "gpu_nodes_allocatable").Result = "error"
		}, true, "result pass → error"},
		{"MUST pass → warn is no regression", func(r *Report) {
			requirementOf(r, "gpu_nodes_allocatable").Result = "warn"
		}, false, ""},
		{"demoted to SHOULD and failing: the old run's MUST counts", func(r *Report) {
			req := requirementOf(r, "gpu_nodes_allocatable")
			req.Result = "fail"
			req.Level = "SHOULD"
		}, true, "result pass → fail"},
		{"an Implemented requirement no longer judged", func(r *Report) {
			r.Requirements = r.Requirements[:1]
		}, true, "Implemented → not judged"},
		{"a version bump is no regression", func(r *Report) {
			r.Operators[0].Versions = []string{"kserve/kserve-controller:v0.16.0", "quay.io/brancz/kube-rbac-proxy:v0.18.0"}
		}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			new := clone(t, demo)
			tt.edit(new)
			c := Diff(demo, new)
			assert.Equal(t, tt.regressed, c.Regressed, "%+v", c)
			if tt.regressed {
				require.NotEmpty(t, c.Regressions)
				assert.Equal(t, tt.reason, c.Regressions[0].Reason)
				assert.Contains(t, DiffVerdict(c), "REGRESSION")
			} else {
				assert.Empty(t, c.Regressions)
			}
		})
	}

	t.Run("SHOULD in both runs: pass → fail is no regression", func(t *testing.T) {
		old, new := clone(t, demo), clone(t, demo)
		requirementOf(old, "gpu_nodes_allocatable").Level = "SHOULD"
		requirementOf(new, "gpu_nodes_allocatable").Level = "SHOULD"
		requirementOf(new, "gpu_nodes_allocatable").Result = "fail"
		assert.False(t, Diff(old, new).Regressed)
	})
}

func TestDiffOperators(t *testing.T) {
	old := &Report{Operators: []Operator{
		{Name: "kserve", Detected: true, CRDs: []string{"a.kserve.io", "b.kserve.io"},
			Versions: []string{"kserve/kserve-controller:v0.15.0", "registry:5000/proxy:v1", "gone/sidecar:v2"}},
		{Name: "old-only", Detected: false},
	}}
	new := &Report{Operators: []Operator{
		{Name: "kserve", Detected: true, CRDs: []string{"a.kserve.io", "c.kserve.io"},
			Versions: []string{"kserve/kserve-controller:v0.15.2", "registry:5000/proxy@sha256:abc", "new/sidecar:v1"}},
		{Name: "new-only", Detected: true},
	}}
	c := Diff(old, new)
	assert.Equal(t, []OperatorChange{
		{Operator: "kserve", Kind: "version", Subject: "kserve/kserve-controller", Old: "v0.15.0", New: "v0.15.2"},
		{Operator: "kserve", Kind: "version", Subject: "registry:5000/proxy", Old: "v1", New: "@sha256:abc"},
		{Operator: "kserve", Kind: "image-added", Subject: "new/sidecar:v1"},
		{Operator: "kserve", Kind: "image-removed", Subject: "gone/sidecar:v2"},
		{Operator: "kserve", Kind: "crd-added", Subject: "c.kserve.io"},
		{Operator: "kserve", Kind: "crd-removed", Subject: "b.kserve.io"},
		{Operator: "new-only", Kind: "added", New: "detected"},
		{Operator: "old-only", Kind: "removed", Old: "not detected"},
	}, c.Operators)
	assert.Contains(t, diffText(t, c), "  kserve: kserve/kserve-controller v0.15.0 → v0.15.2\n")
}

func TestDiffRun(t *testing.T) {
	old := &Report{Tool: Tool{Version: "v0.1.0"}, Run: Run{Cluster: cluster.Info{Live: true, ClusterID: "a", ServerVersion: "v1.34.2"}}}
	t.Run("same cluster, new release", func(t *testing.T) {
		new := &Report{Tool: Tool{Version: "v0.2.0"}, Run: Run{Cluster: cluster.Info{Live: true, ClusterID: "a", ServerVersion: "v1.35.0"}}}
		c := Diff(old, new)
		assert.False(t, c.DifferentClusters)
		assert.Equal(t, []RunChange{{"serverVersion", "v1.34.2", "v1.35.0"}, {"toolVersion", "v0.1.0", "v0.2.0"}}, c.Run)
		assert.NotContains(t, diffText(t, c), "different clusters")
	})
	t.Run("live against a recording of another cluster", func(t *testing.T) {
		new := &Report{Tool: Tool{Version: "v0.1.0"}, Run: Run{Cluster: cluster.Info{Source: "demo", ClusterID: "b", ServerVersion: "v1.34.2"}}}
		c := Diff(old, new)
		assert.True(t, c.DifferentClusters)
		out := diffText(t, c)
		assert.Contains(t, out, "  source: live → recording demo\n")
		assert.Contains(t, out, "the two runs are of different clusters")
	})
	t.Run("an unknown cluster id is not a different cluster", func(t *testing.T) {
		new := clone(t, old)
		new.Run.Cluster.ClusterID = ""
		assert.False(t, Diff(old, new).DifferentClusters)
	})
}

func TestDiffEvidence(t *testing.T) {
	deploy := "NAME                 READY   UP-TO-DATE   AVAILABLE   AGE   CONTAINERS\n" +
		"deployment.apps/ctl  1/1     1            1           2s    manager\n" +
		"\n" +
		"NAME        READY   STATUS    RESTARTS   AGE   IP\n" +
		"pod/ctl-x   1/1     Running   0          2s    10.0.0.1\n"
	tests := []struct {
		name     string
		old, new string
		diff     []string
		omitted  int
	}{
		{"only AGE changed", deploy, strings.ReplaceAll(deploy, "2s ", "9d3h"), nil, 0},
		{"a wider AGE shifts the columns after it",
			"NAME        READY   AGE   IP\npod/ctl-x   1/1     2s    10.0.0.1\n",
			"NAME        READY   AGE    IP\npod/ctl-x   1/1     10d    10.0.0.1\n", nil, 0},
		{"a headerless (grep) row: trailing age ignored",
			"validatingwebhookconfiguration.admissionregistration.k8s.io/x   1          0s\n",
			"validatingwebhookconfiguration.admissionregistration.k8s.io/x   1          5m2s\n", nil, 0},
		{"a headerless row whose count changed",
			"validatingwebhookconfiguration.admissionregistration.k8s.io/x   1          0s\n",
			"validatingwebhookconfiguration.admissionregistration.k8s.io/x   2          0s\n",
			[]string{"@@ -1 +1 @@",
				"-validatingwebhookconfiguration.admissionregistration.k8s.io/x   1          0s",
				"+validatingwebhookconfiguration.admissionregistration.k8s.io/x   2          0s"}, 0},
		{"a crash-looping pod, with a space inside its RESTARTS cell",
			deploy,
			strings.Replace(deploy, "pod/ctl-x   1/1     Running   0          2s", "pod/ctl-x   0/1     CrashLoopBackOff   7 (2m3s ago)   3s", 1),
			[]string{"@@ -5 +5 @@",
				"-pod/ctl-x   1/1     Running   0          2s    10.0.0.1",
				"+pod/ctl-x   0/1     CrashLoopBackOff   7 (2m3s ago)   3s    10.0.0.1"}, 0},
		{"a line added", "a\nb\n", "a\nb\nc\n", []string{"@@ -2,0 +3 @@", "+c"}, 0},
		{"a line removed", "a\nb\nc\n", "a\nc\n", []string{"@@ -2 +1,0 @@", "-b"}, 0},
		{"at most ten changed lines", "x\n", strings.Repeat("y\n", 15), append(
			[]string{"@@ -1 +1,15 @@", "-x"}, strings.Split(strings.Repeat("+y\n", 9), "\n")[:9]...), 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, omitted := outputDiff(tt.old, tt.new)
			assert.Equal(t, tt.diff, lines)
			assert.Equal(t, tt.omitted, omitted)
		})
	}

	t.Run("commands added, removed, and changed, per check", func(t *testing.T) {
		ev := func(cmd, out string) Evidence { return Evidence{Command: cmd, Output: out} }
		rep := func(es ...Evidence) *Report {
			return &Report{Requirements: []Requirement{{ID: "r", Checks: []Check{{ID: "c", Operator: "op", Status: "pass", Evidence: es}}}}}
		}
		c := Diff(rep(ev("kubectl get a", "1\n"), ev("kubectl get gone", "x\n")),
			rep(ev("kubectl get a", "2\n"), ev("kubectl get new", "y\n")))
		assert.Equal(t, []EvidenceChange{
			{Check: "c", Operator: "op", Kind: "output", Command: "kubectl get a", Diff: []string{"@@ -1 +1 @@", "-1", "+2"}},
			{Check: "c", Operator: "op", Kind: "added", Command: "kubectl get new"},
			{Check: "c", Operator: "op", Kind: "removed", Command: "kubectl get gone"},
		}, c.Evidence)
		out := diffText(t, c)
		assert.Contains(t, out, "  c (op): output changed: kubectl get a\n      @@ -1 +1 @@\n      -1\n      +2\n")
		assert.Contains(t, out, "  c (op): new command: kubectl get new\n")
		assert.Contains(t, out, "  c (op): command gone: kubectl get gone\n")
	})
}

func TestDiffJSONIsStable(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, DiffJSON(&buf, Diff(nil, nil)))
	// Every list is present and empty rather than null, so that a consumer
	// can iterate without a null check.
	assert.JSONEq(t, `{"schemaVersion":"1","old":{"source":"recording","startedAt":"0001-01-01T00:00:00Z"},
		"new":{"source":"recording","startedAt":"0001-01-01T00:00:00Z"},"differentClusters":false,
		"run":[],"requirements":[],"operators":[],"checks":[],"evidence":[],"regressions":[],"regressed":false}`, buf.String())
}
