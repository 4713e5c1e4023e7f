package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	junit "github.com/joshdk/go-junit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJUnitGolden(t *testing.T) {
	reports := []struct {
		name   string
		report func() *Report
	}{
		{"failing", fixture},
		{"passing", passing},
		{"recorded", recorded},
	}
	for _, rep := range reports {
		t.Run(rep.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, JUnit(&buf, sealed(t, rep.report())))
			golden(t, rep.name+".xml", buf.Bytes())
		})
	}
}

// ingest renders r and reads it back with go-junit, a JUnit consumer of
// its own, and with a strict encoding/xml pass over every token, so that a
// file only this package could read does not pass.
func ingest(t *testing.T, r *Report) ([]junit.Suite, []byte) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, JUnit(&buf, r))
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "junit.xml is not well-formed XML:\n%s", buf.String())
	}
	suites, err := junit.Ingest(buf.Bytes())
	require.NoError(t, err)
	return suites, buf.Bytes()
}

// byName indexes a suite's testcases by name, failing on a duplicate: a
// name is what a PRODUCT.yaml cites, so it must pick one testcase.
func byName(t *testing.T, s junit.Suite) map[string]junit.Test {
	t.Helper()
	tests := map[string]junit.Test{}
	for _, tc := range s.Tests {
		require.NotContains(t, tests, tc.Name, "duplicate testcase name in suite %s", s.Name)
		assert.Equal(t, s.Name, tc.Classname, "classname is the requirement id")
		tests[tc.Name] = tc
	}
	return tests
}

func TestJUnitConsumer(t *testing.T) {
	suites, raw := ingest(t, sealed(t, fixture()))
	require.Len(t, suites, 2)
	assert.Equal(t, "robust_controller", suites[0].Name)
	assert.Equal(t, "gpu_nodes_allocatable", suites[1].Name)

	t.Run("a suite per requirement, with its verdict as properties", func(t *testing.T) {
		p := suites[0].Properties
		assert.Equal(t, "MUST", p["level"])
		assert.Equal(t, "operator", p["category"])
		assert.Equal(t, "Implemented", p["status"])
		assert.Equal(t, "pass", p["result"])
		assert.Equal(t, "kserve", p["operator"])
		assert.Equal(t, "true", p["live"])
		assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, p["digest"])
		assert.NotContains(t, suites[1].Properties, "operator", "no operator carries a requirement that is not per operator")
	})

	t.Run("a testcase per check result, and one for the verdict", func(t *testing.T) {
		rc := byName(t, suites[0])
		want := map[string]junit.Status{
			"crds-established/kserve":  junit.StatusPassed,
			"controller-ready/kserve":  junit.StatusPassed,
			"crs-reconciled/kserve":    junit.StatusPassed,
			"controller-ready/kuberay": junit.StatusFailed,
			"controller-ready/kueue":   junit.StatusSkipped,
			"robust_controller":        junit.StatusPassed,
		}
		got := map[string]junit.Status{}
		for name, tc := range rc {
			got[name] = tc.Status
		}
		assert.Equal(t, want, got)
		assert.Equal(t, []string{
			"crds-established/kserve", "controller-ready/kserve", "crs-reconciled/kserve",
			"controller-ready/kuberay", "controller-ready/kueue", "robust_controller",
		}, names(suites[0]), "report order")

		gpu := byName(t, suites[1])
		assert.Equal(t, junit.StatusFailed, gpu["gpu-allocatable"].Status)
		assert.Equal(t, junit.StatusFailed, gpu["gpu_nodes_allocatable"].Status, "a Not Implemented requirement fails")
	})

	t.Run("failure and skip carry the reason", func(t *testing.T) {
		rc := byName(t, suites[0])
		kuberay := rc["controller-ready/kuberay"]
		assert.Equal(t, "0 of 1 controller pods Ready: kuberay-operator-7d9f8b6c5-x2v4q is in CrashLoopBackOff", kuberay.Message)
		require.Error(t, kuberay.Error)
		assert.Equal(t, "fail", kuberay.Error.(junit.Error).Type)
		assert.Contains(t, kuberay.Error.Error(), "container kuberay-operator waiting: CrashLoopBackOff (restarted 14 times)\nDeployment kuberay-operator: Available=False")
		assert.Contains(t, kuberay.SystemOut, "$ kubectl get deploy,pods -n ray-system", "a failing check keeps its evidence")
		assert.Equal(t, "Kueue is not installed: the cluster serves no CRD of [kueue.x-k8s.io]", rc["controller-ready/kueue"].Message)
		assert.Empty(t, rc["controller-ready/kueue"].SystemOut, "nothing to show for an operator that is not there")

		verdict := byName(t, suites[1])["gpu_nodes_allocatable"]
		assert.Equal(t, "gpu-allocatable: node gpu-2 is not Ready (Ready=Unknown: Kubelet stopped posting node status.)", verdict.Message)
		require.Error(t, verdict.Error)
		assert.Equal(t, "Not Implemented", verdict.Error.(junit.Error).Type)
	})

	t.Run("system-out carries the evidence verbatim with its capture time", func(t *testing.T) {
		out := byName(t, suites[0])["crs-reconciled/kserve"].SystemOut
		assert.True(t, strings.HasPrefix(out, "pass: 2 InferenceServices Ready"), out)
		assert.Contains(t, out, "\n$ kubectl get inferenceservices.serving.kserve.io -A\n"+
			"NAMESPACE   NAME           URL                                       READY   PREV   LATEST   PREVROLLEDOUTREVISION   LATESTREADYREVISION   AGE\n")
		assert.Contains(t, out, "pod/qwen3-8b-predictor-849686d494-fnmdh   1/1     Running   0          34d\n# captured: 2026-11-29T12:00:01Z\n"+
			"# note: the children the controller made for qwen3-8b, found by its label\n")

		gpu := byName(t, suites[1])["gpu-allocatable"].SystemOut
		assert.Contains(t, gpu, "# computed by aiconform from the objects it read (a summary, not kubectl output):\nNODE    READY     RESOURCE")
		assert.Contains(t, gpu, "$ kubectl get nodes gpu-1 gpu-2 -o 'custom-columns=")
		assert.Contains(t, string(raw), "<![CDATA[", "output stays readable in the file")
	})

	t.Run("times come from the report", func(t *testing.T) {
		rc := byName(t, suites[0])
		assert.Equal(t, 360*time.Millisecond, rc["crds-established/kserve"].Duration)
		assert.Equal(t, 1480*time.Millisecond, rc["crs-reconciled/kserve"].Duration)
		assert.Contains(t, string(raw), `<testsuite name="robust_controller" tests="6" failures="1" errors="0" skipped="1" time="1.500" timestamp="2026-11-29T12:00:00Z">`)
		assert.Contains(t, string(raw), `<testsuites name="aiconform" tests="8" failures="3" errors="0" skipped="1" time="7.250">`)
	})
}

func names(s junit.Suite) []string {
	var n []string
	for _, tc := range s.Tests {
		n = append(n, tc.Name)
	}
	return n
}

// TestJUnitOutcomes holds each status mapping to what a consumer reads, and
// above all that a requirement not met is never a file without failures.
func TestJUnitOutcomes(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*Report)
		test   string
		status junit.Status
		want   string // in the message, or in system-out for a pass
	}{
		{
			name: "warn is a pass with the warning in system-out",
			edit: func(r *Report) {
				c := &r.Requirements[0].Checks[1]
				c.Status, c.Reason = "warn", "pod restarted 3 times in the last hour"
			},
			test: "controller-ready/kserve", status: junit.StatusPassed, want: "warning: pod restarted 3 times in the last hour",
		},
		{
			name: "error is an error",
			edit: func(r *Report) {
				c := &r.Requirements[1].Checks[0]
				c.Status, c.Reason, c.Details = "error", "list nodes: forbidden", nil
				r.Requirements[1].Result = "error"
			},
			test: "gpu-allocatable", status: junit.StatusError, want: "list nodes: forbidden",
		},
		{
			name: "a requirement that could not be evaluated is an error",
			edit: func(r *Report) {
				c := &r.Requirements[1].Checks[0]
				c.Status, c.Reason = "error", "list nodes: forbidden"
				r.Requirements[1].Result = "error"
				r.Requirements[1].Conclusion = "could not be fully evaluated: gpu-allocatable: list nodes: forbidden"
			},
			test: "gpu_nodes_allocatable", status: junit.StatusError, want: "could not be fully evaluated",
		},
		{
			name: "no operator installed: every check skipped, the requirement still fails",
			edit: func(r *Report) {
				req := &r.Requirements[0]
				for i := range req.Checks {
					req.Checks[i].Status, req.Checks[i].Reason = "skip", "not installed"
				}
				req.Status, req.Result, req.Operator = "Not Implemented", "fail", ""
				req.Conclusion = "no AI operator with CRDs was found (looked for: KServe, KubeRay, Kueue)"
			},
			test: "robust_controller", status: junit.StatusFailed, want: "no AI operator with CRDs was found",
		},
		{
			name: "not applicable is skipped",
			edit: func(r *Report) {
				req := &r.Requirements[1]
				req.Checks[0].Status, req.Checks[0].Reason = "skip", "no GPU node"
				req.Status, req.Result, req.Conclusion = "N/A", "skip", "not applicable: no GPU node"
			},
			test: "gpu_nodes_allocatable", status: junit.StatusSkipped, want: "not applicable: no GPU node",
		},
		{
			name: "a partial run that found nothing wrong is skipped, never a pass",
			edit: func(r *Report) {
				req := &r.Requirements[0]
				req.Status = "Partially Implemented"
				req.Conclusion = "only some checks ran (not run: webhooks-served); of those: KServe meets it"
			},
			test: "robust_controller", status: junit.StatusSkipped, want: "only some checks ran",
		},
		{
			name: "partially implemented with a failure fails",
			edit: func(r *Report) {
				req := &r.Requirements[0]
				req.Status, req.Result, req.Operator = "Partially Implemented", "fail", ""
				req.Conclusion = "no operator passed every check"
			},
			test: "robust_controller", status: junit.StatusFailed, want: "no operator passed every check",
		},
		{
			name: "a status this code does not know is never a pass",
			edit: func(r *Report) { r.Requirements[0].Checks[0].Status = "ok" },
			test: "crds-established/kserve", status: junit.StatusFailed, want: "3 CRDs of serving.kserve.io established",
		},
		{
			name: "an Implemented status with a failing result is not a pass",
			edit: func(r *Report) { r.Requirements[0].Result = "fail" },
			test: "robust_controller", status: junit.StatusFailed, want: "KServe meets it",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fixture()
			tt.edit(r)
			suites, _ := ingest(t, sealed(t, r))
			var found *junit.Test
			for _, s := range suites {
				for i, tc := range s.Tests {
					if tc.Name == tt.test {
						found = &s.Tests[i]
					}
				}
			}
			require.NotNil(t, found, "no testcase %s", tt.test)
			assert.Equal(t, tt.status, found.Status)
			if tt.status == junit.StatusPassed {
				assert.Contains(t, found.SystemOut, tt.want)
			} else {
				assert.Contains(t, found.Message, tt.want)
			}
			failing := 0
			for _, s := range suites {
				failing += s.Totals.Failed + s.Totals.Error
			}
			for _, req := range r.Requirements {
				if req.Result == "fail" || req.Result == "error" {
					assert.NotZero(t, failing, "requirement %s is not met, so the file must have a failing test", req.ID)
				}
			}
		})
	}
}

// TestJUnitUnsafeText feeds what a cluster can put in a reason or an
// output and XML 1.0 cannot hold: the file must still parse, and a reader
// must still see where the characters were.
func TestJUnitUnsafeText(t *testing.T) {
	r := fixture()
	c := &r.Requirements[1].Checks[0]
	c.Reason = "bell\a and nul\x00 in a reason\nover two lines"
	c.Evidence = []Evidence{{
		Command:    "kubectl logs gpu-probe",
		Output:     "\x1b[31mred\x1b[0m ]]> <tag> & \xff\xfe bad bytes, \ufffe, a real \ufffd, tab\tend\n",
		CapturedAt: at(2200),
	}}
	suites, raw := ingest(t, sealed(t, r))
	tc := byName(t, suites[1])["gpu-allocatable"]
	assert.Equal(t, "bell\\x07 and nul\\x00 in a reason\nover two lines", tc.Message)
	assert.Contains(t, tc.SystemOut, "$ kubectl logs gpu-probe\n\\x1b[31mred\\x1b[0m ]]> <tag> & \\xff\\xfe bad bytes, \\ufffe, a real \ufffd, tab\tend\n# captured: 2026-11-29T12:00:02Z\n")
	assert.NotContains(t, string(raw), "\x1b")
	assert.NotContains(t, string(raw), "\x00")
}

func TestJUnitFromBuild(t *testing.T) {
	r := sealed(t, built(t))
	suites, _ := ingest(t, r)
	require.Len(t, suites, len(r.Requirements))
	for i, req := range r.Requirements {
		assert.Equal(t, req.ID, suites[i].Name)
		assert.Len(t, suites[i].Tests, len(req.Checks)+1, "each check and the verdict")
	}
	gpu := byName(t, suites[1])
	assert.Equal(t, junit.StatusError, gpu["gpu-allocatable"].Status)
	assert.Equal(t, junit.StatusError, gpu["gpu_nodes_allocatable"].Status)
}

func TestJUnitNoReport(t *testing.T) {
	assert.Error(t, JUnit(io.Discard, nil))
}
