package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/cluster"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// base is the fixed clock of every fixture: renderers read no clock, so the
// goldens only change when the renderers do.
var base = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

// fixture is a run a vendor could submit: KServe carries robust_controller
// while KubeRay's controller crash-loops and Kueue is absent; one of two GPU
// nodes is NotReady, so the run fails.
func fixture() *Report {
	kserveCRDs := []string{
		"clusterservingruntimes.serving.kserve.io",
		"inferenceservices.serving.kserve.io",
		"servingruntimes.serving.kserve.io",
	}
	return &Report{
		SchemaVersion: SchemaVersion,
		Tool:          Tool{Name: "aiconform", Version: "v0.1.0"},
		Run: Run{
			StartedAt:  at(0),
			FinishedAt: at(7250),
			Cluster: cluster.Info{
				Live:          true,
				Context:       "prod-gpu",
				Server:        "https://10.0.0.1:6443",
				ServerVersion: "v1.34.2",
				ClusterID:     "5f0c6d2e-8a7b-4f1e-9c3d-2b1a0e9f8c7d",
			},
		},
		Summary: Totals{
			Requirements: map[string]int{"Implemented": 1, "Not Implemented": 1},
			Checks:       map[string]int{"pass": 3, "fail": 2, "skip": 1},
		},
		Operators: []Operator{
			{Name: "kserve", Title: "KServe", Detected: true, CRDs: kserveCRDs, Versions: []string{"kserve/kserve-controller:v0.15.2"}},
			{Name: "kuberay", Title: "KubeRay", Detected: true, CRDs: []string{"rayclusters.ray.io", "rayjobs.ray.io", "rayservices.ray.io"}, Versions: []string{"quay.io/kuberay/operator:v1.4.2"}},
			{Name: "kueue", Title: "Kueue", Detected: false},
		},
		Requirements: []Requirement{
			{
				ID:         "robust_controller",
				Title:      "A complex AI operator with CRDs is installed and works",
				Category:   "operator",
				Level:      "MUST",
				Program:    "CNCF Kubernetes AI Conformance",
				Status:     "Implemented",
				Result:     "pass",
				Conclusion: "KServe meets it: CRDs established, controller Ready, webhooks served, custom resources reconciled (others: KubeRay: controller-ready: 0 of 1 controller pods Ready: kuberay-operator-7d9f8b6c5-x2v4q is in CrashLoopBackOff)",
				Operator:   "kserve",
				Operators: []OperatorVerdict{
					{Operator: "kserve", Result: "pass", Reason: "every check passed"},
					{Operator: "kuberay", Result: "fail", Reason: "controller-ready: 0 of 1 controller pods Ready: kuberay-operator-7d9f8b6c5-x2v4q is in CrashLoopBackOff"},
					{Operator: "kueue", Result: "skip", Reason: "not installed"},
				},
				Checks: []Check{
					{
						ID: "crds-established", Title: "Operator CRDs established", Operator: "kserve",
						Status: "pass", Reason: "3 CRDs of serving.kserve.io established",
						StartedAt: at(120), FinishedAt: at(480),
						Evidence: []Evidence{{
							Command: "kubectl get crd " + strings.Join(kserveCRDs, " "),
							Output: "NAME                                       CREATED AT\n" +
								"clusterservingruntimes.serving.kserve.io   2026-09-14T08:11:02Z\n" +
								"inferenceservices.serving.kserve.io        2026-09-14T08:11:02Z\n" +
								"servingruntimes.serving.kserve.io          2026-09-14T08:11:03Z\n",
							CapturedAt: at(470),
						}},
					},
					{
						ID: "controller-ready", Title: "Controller Deployment available, pods Ready", Operator: "kserve",
						Status: "pass", Reason: "Deployment kserve-controller-manager available, 1 of 1 pods Ready",
						StartedAt: at(130), FinishedAt: at(910),
						Evidence: []Evidence{{
							Command: "kubectl get deploy,pods -n kserve -l control-plane=kserve-controller-manager -o wide",
							Output: "NAME                                        READY   UP-TO-DATE   AVAILABLE   AGE   CONTAINERS                IMAGES                             SELECTOR\n" +
								"deployment.apps/kserve-controller-manager   1/1     1            1           76d   manager,kube-rbac-proxy   kserve/kserve-controller:v0.15.2   control-plane=kserve-controller-manager\n" +
								"\n" +
								"NAME                                            READY   STATUS    RESTARTS   AGE   IP             NODE       NOMINATED NODE   READINESS GATES\n" +
								"pod/kserve-controller-manager-6b8655594-5wxjk   2/2     Running   0          61d   10.244.5.125   worker-3   <none>           <none>\n",
							CapturedAt: at(900),
						}},
					},
					{
						ID: "crs-reconciled", Title: "Custom resources reconciled into children", Operator: "kserve",
						Status: "pass", Reason: "2 InferenceServices Ready, each owning a healthy Deployment and Ready pods",
						StartedAt: at(140), FinishedAt: at(1620),
						Evidence: []Evidence{
							{
								Command: "kubectl get inferenceservices.serving.kserve.io -A",
								Output: "NAMESPACE   NAME           URL                                       READY   PREV   LATEST   PREVROLLEDOUTREVISION   LATESTREADYREVISION   AGE\n" +
									"ml-prod     sklearn-iris   http://sklearn-iris.ml-prod.example.com   True                                                                 35d\n" +
									"ml-prod     qwen3-8b       http://qwen3-8b.ml-prod.example.com       True                                                                 51d\n",
								CapturedAt: at(1100),
							},
							{
								Command: "kubectl get deploy,svc,pods -n ml-prod -l serving.kserve.io/inferenceservice=qwen3-8b",
								Output: "NAME                                 READY   UP-TO-DATE   AVAILABLE   AGE\n" +
									"deployment.apps/qwen3-8b-predictor   1/1     1            1           51d\n" +
									"\n" +
									"NAME                         TYPE        CLUSTER-IP      EXTERNAL-IP   PORT(S)   AGE\n" +
									"service/qwen3-8b-predictor   ClusterIP   10.96.228.224   <none>        80/TCP    51d\n" +
									"\n" +
									"NAME                                      READY   STATUS    RESTARTS   AGE\n" +
									"pod/qwen3-8b-predictor-849686d494-fnmdh   1/1     Running   0          34d\n",
								CapturedAt: at(1600),
								Note:       "the children the controller made for qwen3-8b, found by its label",
							},
						},
					},
					{
						ID: "controller-ready", Title: "Controller Deployment available, pods Ready", Operator: "kuberay",
						Status: "fail", Reason: "0 of 1 controller pods Ready: kuberay-operator-7d9f8b6c5-x2v4q is in CrashLoopBackOff",
						Details: []string{
							"pod kuberay-operator-7d9f8b6c5-x2v4q: container kuberay-operator waiting: CrashLoopBackOff (restarted 14 times)",
							"Deployment kuberay-operator: Available=False (MinimumReplicasUnavailable)",
						},
						Remediation: "Read the crashing container's previous log: `kubectl logs -n ray-system deploy/kuberay-operator --previous`.",
						StartedAt:   at(150), FinishedAt: at(930),
						Evidence: []Evidence{{
							Command: "kubectl get deploy,pods -n ray-system -l app.kubernetes.io/name=kuberay-operator -o wide",
							Output: "NAME                               READY   UP-TO-DATE   AVAILABLE   AGE   CONTAINERS         IMAGES                            SELECTOR\n" +
								"deployment.apps/kuberay-operator   0/1     1            0           12d   kuberay-operator   quay.io/kuberay/operator:v1.4.2   app.kubernetes.io/name=kuberay-operator\n" +
								"\n" +
								"NAME                                    READY   STATUS             RESTARTS       AGE   IP            NODE       NOMINATED NODE   READINESS GATES\n" +
								"pod/kuberay-operator-7d9f8b6c5-x2v4q   0/1     CrashLoopBackOff   14 (2m ago)    12d   10.244.1.17   worker-1   <none>           <none>\n",
							CapturedAt: at(920),
						}},
					},
					{
						ID: "controller-ready", Title: "Controller Deployment available, pods Ready", Operator: "kueue",
						Status: "skip", Reason: "Kueue is not installed: the cluster serves no CRD of [kueue.x-k8s.io]",
						StartedAt: at(160), FinishedAt: at(160),
						Evidence: []Evidence{},
					},
				},
			},
			{
				ID:         "gpu_nodes_allocatable",
				Title:      "Accelerator nodes are Ready and their accelerators allocatable",
				Category:   "accelerators",
				Level:      "MUST",
				Program:    "aiconform",
				Status:     "Not Implemented",
				Result:     "fail",
				Conclusion: "gpu-allocatable: node gpu-2 is not Ready (Ready=Unknown: Kubelet stopped posting node status.)",
				Checks: []Check{{
					ID: "gpu-allocatable", Title: "GPU nodes Ready and allocatable",
					Status:    "fail",
					Reason:    "node gpu-2 is not Ready (Ready=Unknown: Kubelet stopped posting node status.)",
					Details:   []string{"node gpu-2 is not Ready (Ready=Unknown: Kubelet stopped posting node status.)"},
					StartedAt: at(170), FinishedAt: at(2400),
					Table: &Table{
						Header: []string{"NODE", "READY", "RESOURCE", "CAPACITY", "ALLOCATABLE", "REQUESTED"},
						Rows: [][]string{
							{"gpu-1", "True", "nvidia.com/gpu", "8", "8", "6"},
							{"gpu-2", "Unknown", "nvidia.com/gpu", "8", "8", "0"},
						},
					},
					Evidence: []Evidence{
						{
							Command: "kubectl get nodes gpu-1 gpu-2 -o wide",
							Output: "NAME    STATUS     ROLES    AGE    VERSION   INTERNAL-IP   EXTERNAL-IP   OS-IMAGE             KERNEL-VERSION     CONTAINER-RUNTIME\n" +
								"gpu-1   Ready      <none>   120d   v1.34.2   10.0.1.11     <none>        Ubuntu 24.04.3 LTS   6.8.0-87-generic   containerd://2.1.4\n" +
								"gpu-2   NotReady   <none>   120d   v1.34.2   10.0.1.12     <none>        Ubuntu 24.04.3 LTS   6.8.0-87-generic   containerd://2.1.4\n",
							CapturedAt: at(2100),
						},
						{
							Command: `kubectl get nodes gpu-1 gpu-2 -o 'custom-columns=NAME:.metadata.name,GPU_CAPACITY:.status.capacity.nvidia\.com/gpu,GPU_ALLOCATABLE:.status.allocatable.nvidia\.com/gpu'`,
							Output: "NAME    GPU_CAPACITY   GPU_ALLOCATABLE\n" +
								"gpu-1   8              8\n" +
								"gpu-2   8              8\n",
							CapturedAt: at(2100),
						},
						{
							Command: "kubectl get pods -A --field-selector spec.nodeName=gpu-1",
							Output: "NAMESPACE   NAME                                   READY   STATUS    RESTARTS   AGE\n" +
								"ml-prod     qwen3-8b-predictor-849686d494-fnmdh    1/1     Running   0          34d\n" +
								"ml-train    llama-ft-worker-0                      1/1     Running   0          2d\n",
							CapturedAt: at(2300),
							Note:       "pods on gpu-1, whose requests count against its allocatable",
						},
					},
				}},
			},
		},
	}
}

// recorded is the fixture replayed from a recording instead of a cluster.
func recorded() *Report {
	r := fixture()
	r.Run.Cluster = cluster.Info{
		Live:          false,
		Source:        "gpu-kserve-kuberay",
		ServerVersion: "v1.34.2",
		ClusterID:     "5f0c6d2e-8a7b-4f1e-9c3d-2b1a0e9f8c7d",
		RecordedAt:    time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC),
	}
	return r
}

// passing is the fixture with the GPU node back: every MUST met.
func passing() *Report {
	r := fixture()
	gpu := &r.Requirements[1]
	gpu.Status, gpu.Result = "Implemented", "pass"
	gpu.Conclusion = "2 GPU node(s) Ready with accelerators allocatable"
	c := &gpu.Checks[0]
	c.Status, c.Reason, c.Details = "pass", "2 GPU node(s) Ready with accelerators allocatable", nil
	c.Table.Rows[1][1] = "True"
	r.Summary.Requirements = map[string]int{"Implemented": 2}
	r.Summary.Checks = map[string]int{"pass": 4, "fail": 1, "skip": 1}
	return r
}

func sealed(t *testing.T, r *Report) *Report {
	t.Helper()
	require.NoError(t, r.Seal(checks.Must))
	return r
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run `go test ./report -update`")
	assert.Equal(t, string(want), string(got), "%s is out of date; run `go test ./report -update` and read the diff", path)
}

func TestRenderersGolden(t *testing.T) {
	renderers := []struct {
		ext    string
		render func(*bytes.Buffer, *Report) error
	}{
		{"md", func(b *bytes.Buffer, r *Report) error { return Markdown(b, r) }},
		{"json", func(b *bytes.Buffer, r *Report) error { return JSON(b, r) }},
		{"txt", func(b *bytes.Buffer, r *Report) error { return Summary(b, r) }},
		{"html", func(b *bytes.Buffer, r *Report) error { return HTML(b, r) }},
	}
	reports := []struct {
		name   string
		report func() *Report
	}{
		{"failing", fixture},
		{"passing", passing},
		{"recorded", recorded},
	}
	for _, rep := range reports {
		for _, rend := range renderers {
			name := rep.name + "." + rend.ext
			t.Run(name, func(t *testing.T) {
				var buf bytes.Buffer
				require.NoError(t, rend.render(&buf, sealed(t, rep.report())))
				golden(t, name, buf.Bytes())
			})
		}
	}
}

func TestMarkdown(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Report)
		want    []string
		notWant []string
	}{
		{
			name: "evidence is numbered across a requirement and keeps its output",
			edit: func(*Report) {},
			want: []string{
				"**Evidence 1**\n\n```text\n$ kubectl get crd clusterservingruntimes.serving.kserve.io",
				"**Evidence 4**\n\n```text\n$ kubectl get deploy,svc,pods -n ml-prod",
				"**Evidence 5**\n\n```text\n$ kubectl get deploy,pods -n ray-system",
				// The next requirement starts again at 1.
				"**Evidence 1**\n\n```text\n$ kubectl get nodes gpu-1 gpu-2 -o wide",
				"pod/kuberay-operator-7d9f8b6c5-x2v4q   0/1     CrashLoopBackOff   14 (2m ago)    12d   10.244.1.17   worker-1   <none>           <none>\n# captured: 2026-11-29T12:00:00Z\n```",
				"Note: the children the controller made for qwen3-8b, found by its label",
				"→ KServe meets it",
				"Computed by aiconform",
				"| gpu-2 | Unknown | nvidia.com/gpu | 8 | 8 | 0 |",
				"- **Source:** live cluster",
				"- **Verdict:** FAILED: MUST requirement not met: gpu_nodes_allocatable (fail)",
			},
			notWant: []string{"Recorded, not live"},
		},
		{
			name: "a recording says so",
			edit: func(r *Report) { *r = *recorded() },
			want: []string{
				"> **Recorded, not live.**",
				"- **Source:** fixture `gpu-kserve-kuberay` recorded at 2026-11-28T09:30:00Z (a recording, not a live cluster)",
			},
			notWant: []string{"- **Source:** live cluster"},
		},
		{
			name: "probes and redaction are said in the header",
			edit: func(r *Report) {
				r.Run.Probe = &ProbeRun{RunID: "20261129-120000-abcd", Namespace: "aiconform-probe-20261129-120000-abcd"}
				r.Run.Redacted = true
			},
			want: []string{
				"- **Probes:** on: run `20261129-120000-abcd` wrote in namespace `aiconform-probe-20261129-120000-abcd`, labelled `aiconform.io/run=20261129-120000-abcd`, and deleted it at the end\n",
				"- **Redacted:** node names, addresses, hosts and cloud account ids are keyed pseudonyms",
			},
			notWant: []string{"- **Probes:** off"},
		},
		{
			name: "output holding a fence gets a longer fence",
			edit: func(r *Report) {
				r.Requirements[1].Checks[0].Evidence = []Evidence{{
					Command: "kubectl get cm notes -o jsonpath={.data.readme}", CapturedAt: base,
					Output: "```yaml\nkey: value\n```\n````\n",
				}}
			},
			want: []string{"`````text\n$ kubectl get cm notes -o jsonpath={.data.readme}\n```yaml\nkey: value\n```\n````\n# captured: 2026-11-29T12:00:00Z\n`````\n"},
		},
		{
			name: "output without a final newline is not changed, the capture line still stands alone",
			edit: func(r *Report) {
				r.Requirements[1].Checks[0].Evidence = []Evidence{{Command: "kubectl version", Output: "  indented  ", CapturedAt: at(1500)}}
			},
			want: []string{"$ kubectl version\n  indented  \n# captured: 2026-11-29T12:00:01Z\n"},
		},
		{
			name: "markup in reasons is escaped and a pipe does not split a cell",
			edit: func(r *Report) {
				r.Requirements[0].Operators[1].Reason = "node <none> has *no* [gpu] | see `kubectl`"
			},
			want: []string{"node \\<none> has \\*no\\* \\[gpu\\] \\| see \\`kubectl\\`"},
		},
		{
			name: "a multi-line detail gets a code block",
			edit: func(r *Report) {
				r.Requirements[1].Checks[0].Details = []string{"one line", "panic: boom\ngoroutine 1 [running]:\nmain.main()"}
			},
			want: []string{"- one line\n\n```\npanic: boom\ngoroutine 1 [running]:\nmain.main()\n```\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fixture()
			tt.edit(r)
			var buf bytes.Buffer
			require.NoError(t, Markdown(&buf, sealed(t, r)))
			for _, w := range tt.want {
				assert.Contains(t, buf.String(), w)
			}
			for _, w := range tt.notWant {
				assert.NotContains(t, buf.String(), w)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		name string
		r    *Report
		last string
	}{
		{"failing", fixture(), "FAILED: MUST requirement not met: gpu_nodes_allocatable (fail)"},
		{"passing", passing(), "PASSED: every MUST requirement met"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, Summary(&buf, sealed(t, tt.r)))
			lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
			assert.Equal(t, tt.last, lines[len(lines)-1])
			assert.NotContains(t, buf.String(), "\x1b[", "no colours")
		})
	}
}

func TestShorten(t *testing.T) {
	long := strings.Repeat("é", 100)
	tests := []struct {
		name, in, want string
	}{
		{"short", "fine", "fine"},
		{"newlines joined", "a\nb  c", "a b c"},
		{"cut with ellipsis", long, strings.Repeat("é", 79) + "…"},
		{"exactly the width", strings.Repeat("x", 80), strings.Repeat("x", 80)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := shorten(tt.in, reasonWidth)
			assert.Equal(t, tt.want, got)
			assert.LessOrEqual(t, len([]rune(got)), reasonWidth)
		})
	}
}

func TestVerdict(t *testing.T) {
	tests := []struct {
		name   string
		failOn checks.Level
		edit   func(*Report)
		want   string
	}{
		{"must failed", checks.Must, func(*Report) {}, "FAILED: MUST requirement not met: gpu_nodes_allocatable (fail)"},
		{"must errored", checks.Must, func(r *Report) { r.Requirements[1].Result = "error" }, "FAILED: MUST requirement not met: gpu_nodes_allocatable (error)"},
		{"should counted", checks.Should, func(r *Report) { r.Requirements[1].Level = "SHOULD" }, "FAILED: SHOULD requirement not met (--fail-on should): gpu_nodes_allocatable (fail)"},
		{"should not counted", checks.Must, func(r *Report) { r.Requirements[1].Level = "SHOULD" }, "PASSED: every MUST requirement met"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fixture()
			tt.edit(r)
			require.NoError(t, r.Seal(tt.failOn))
			assert.Equal(t, tt.want, verdict(r))
		})
	}
}

func TestSeal(t *testing.T) {
	t.Run("digest covers the content and not itself", func(t *testing.T) {
		a := sealed(t, fixture())
		assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, a.Digest)

		again := a.Digest
		require.NoError(t, a.Seal(checks.Must))
		assert.Equal(t, again, a.Digest, "sealing twice gives the same digest")

		b := fixture()
		b.Requirements[1].Checks[0].Evidence[0].Output += "gpu-3   Ready   <none>   1d   v1.34.2\n"
		assert.NotEqual(t, a.Digest, sealed(t, b).Digest, "a changed evidence output changes the digest")

		c := fixture()
		c.Run.Cluster.ClusterID = "another-cluster"
		assert.NotEqual(t, a.Digest, sealed(t, c).Digest, "another cluster changes the digest")
	})

	tests := []struct {
		name   string
		level  string
		result string
		failOn checks.Level
		passed bool
	}{
		{"MUST pass", "MUST", "pass", checks.Must, true},
		{"MUST warn", "MUST", "warn", checks.Must, true},
		{"MUST not applicable", "MUST", "skip", checks.Must, true},
		{"MUST fail", "MUST", "fail", checks.Must, false},
		{"MUST error is never a pass", "MUST", "error", checks.Must, false},
		{"SHOULD fail under --fail-on must", "SHOULD", "fail", checks.Must, true},
		{"SHOULD fail under --fail-on should", "SHOULD", "fail", checks.Should, false},
		{"SHOULD error under --fail-on should", "SHOULD", "error", checks.Should, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := passing()
			r.Requirements[1].Level, r.Requirements[1].Result = tt.level, tt.result
			require.NoError(t, r.Seal(tt.failOn))
			assert.Equal(t, tt.passed, r.Summary.Passed)
		})
	}
}

// schema compiles docs/report.schema.json, asserting formats so that a
// time that is not RFC 3339 fails.
func schema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", "report.schema.json"))
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const url = "report.schema.json"
	require.NoError(t, c.AddResource(url, doc))
	s, err := c.Compile(url)
	require.NoError(t, err)
	return s
}

// instance renders r with JSON and decodes it as the validator expects.
func instance(t *testing.T, r *Report) any {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, JSON(&buf, r))
	v, err := jsonschema.UnmarshalJSON(&buf)
	require.NoError(t, err)
	return v
}

func TestSchema(t *testing.T) {
	s := schema(t)
	valid := []struct {
		name string
		r    *Report
	}{
		{"failing", sealed(t, fixture())},
		{"passing", sealed(t, passing())},
		{"recorded", sealed(t, recorded())},
		{"built from a run", sealed(t, built(t))},
		{"probed and redacted", sealed(t, func() *Report {
			r := passing()
			r.Run.Probe = &ProbeRun{RunID: "20261129-120000-abcd", Namespace: "aiconform-probe-20261129-120000-abcd"}
			r.Run.Redacted = true
			return r
		}())},
	}
	for _, tt := range valid {
		t.Run("valid/"+tt.name, func(t *testing.T) {
			assert.NoError(t, s.Validate(instance(t, tt.r)))
		})
	}

	// Each edit goes through the decoded JSON, as a hand-edited or
	// foreign report.json would arrive.
	invalid := []struct {
		name string
		edit func(doc map[string]any)
	}{
		{"requirement status Done", func(d map[string]any) { requirement(d, 0)["status"] = "Done" }},
		{"check status ok", func(d map[string]any) { check(d, 0, 0)["status"] = "ok" }},
		{"requirement result Implemented", func(d map[string]any) { requirement(d, 0)["result"] = "Implemented" }},
		{"schema version 2", func(d map[string]any) { d["schemaVersion"] = "2" }},
		{"evidence without capturedAt", func(d map[string]any) { delete(evidence(d, 0, 0, 0), "capturedAt") }},
		{"evidence without output", func(d map[string]any) { delete(evidence(d, 0, 0, 0), "output") }},
		{"capturedAt not a time", func(d map[string]any) { evidence(d, 0, 0, 0)["capturedAt"] = "yesterday" }},
		{"capturedAt not UTC", func(d map[string]any) { evidence(d, 0, 0, 0)["capturedAt"] = "2026-11-29T13:00:00+01:00" }},
		{"unknown check field", func(d map[string]any) { check(d, 0, 0)["verdict"] = "pass" }},
		{"unknown top-level field", func(d map[string]any) { d["signature"] = "x" }},
		{"summary count of an unknown status", func(d map[string]any) {
			d["summary"].(map[string]any)["checks"].(map[string]any)["ok"] = json.Number("1")
		}},
		{"digest missing", func(d map[string]any) { delete(d, "digest") }},
	}
	for _, tt := range invalid {
		t.Run("invalid/"+tt.name, func(t *testing.T) {
			doc := instance(t, sealed(t, fixture())).(map[string]any)
			tt.edit(doc)
			assert.Error(t, s.Validate(doc))
		})
	}
}

func requirement(doc map[string]any, i int) map[string]any {
	return doc["requirements"].([]any)[i].(map[string]any)
}

func check(doc map[string]any, req, i int) map[string]any {
	return requirement(doc, req)["checks"].([]any)[i].(map[string]any)
}

func evidence(doc map[string]any, req, c, i int) map[string]any {
	return check(doc, req, c)["evidence"].([]any)[i].(map[string]any)
}

// built is a report made by Build from a run's outcome, so that the schema
// is held to what the code really writes, not only to the hand-made fixture.
func built(t *testing.T) *Report {
	t.Helper()
	kserve := &checks.Profile{Name: "kserve", Title: "KServe", Groups: []string{"serving.kserve.io"}}
	kueue := &checks.Profile{Name: "kueue", Title: "Kueue", Groups: []string{"kueue.x-k8s.io"}}
	registry := builtin.Registry()
	meta := map[string]checks.Meta{}
	for _, c := range registry {
		meta[c.Meta().ID] = c.Meta()
	}
	out := checks.Outcome{
		Detections: []checks.Detection{
			{Profile: kserve, Found: true, CRDs: []string{"inferenceservices.serving.kserve.io"}, Install: &checks.Install{
				Namespace: "kserve-system", Deployment: "kserve-controller-manager", FoundBy: []string{"its pod template's labels control-plane=kserve-controller-manager"}}},
			{Profile: kueue, Found: false},
		},
	}
	for _, id := range []string{"crds-established", "controller-ready", "webhooks-served", "crs-reconciled"} {
		out.Results = append(out.Results,
			checks.Result{
				Check: meta[id], Operator: "kserve", Status: checks.Pass, Reason: id + " ok",
				Evidence: []checks.Step{{Command: "kubectl get crd", Output: "NAME   CREATED AT\n", CapturedAt: at(100)}},
				Versions: []string{"kserve/kserve-controller:v0.15.2"}, Started: at(10), Finished: at(200),
			},
			checks.Result{
				Check: meta[id], Operator: "kueue", Status: checks.Skip, Reason: "Kueue is not installed",
				Started: at(10), Finished: at(10),
			})
	}
	out.Results = append(out.Results, checks.Result{
		Check: meta["gpu-allocatable"], Status: checks.Error, Reason: "list nodes: forbidden",
		Details: []string{"nodes is forbidden: User \"auditor\" cannot list resource \"nodes\""},
		Table:   &checks.Table{Header: []string{"NODE"}, Rows: [][]string{}},
		Started: at(10), Finished: at(20),
	})
	reqs, err := checks.Catalog(registry)
	require.NoError(t, err)
	info := cluster.Info{Live: true, Context: "kind-kind", Server: "https://127.0.0.1:6443", ServerVersion: "v1.34.0", ClusterID: "uid"}
	return Build(Tool{Name: "aiconform", Version: "dev"}, info, at(0), at(3000), out, checks.Evaluate(reqs, out))
}

func TestRemediationOnlyWhereSomethingIsToFix(t *testing.T) {
	meta := checks.Meta{ID: "x", Title: "x", Remediation: "Run `kubectl describe x`."}
	for status, want := range map[checks.Status]string{
		checks.Pass: "", checks.Skip: "",
		checks.Fail: meta.Remediation, checks.Warn: meta.Remediation, checks.Error: meta.Remediation,
	} {
		got := checkOf(checks.Result{Check: meta, Status: status})
		assert.Equal(t, want, got.Remediation, "status %s", status)
	}
}

func TestCodeSpans(t *testing.T) {
	assert.Equal(t, "Run `kubectl get x -A` and read \\*it\\*.", withCode("Run `kubectl get x -A` and read *it*."))
	// An unbalanced backtick is text, escaped.
	assert.Equal(t, "a \\` b", withCode("a ` b"))
	assert.Equal(t, []part{{Text: "kubectl", Code: true}, {Text: " first"}}, codeSpans("`kubectl` first"))
}
