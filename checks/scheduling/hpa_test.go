package scheduling_test

import (
	"context"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/scheduling"
	"github.com/aiconform/aiconform/probe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

func runOne(t *testing.T, w *checkstest.World, c checks.Check) checks.Result {
	t.Helper()
	out := w.Serve().Run([]checks.Check{c}, nil)
	return checkstest.Result(t, out, c.Meta().ID, "")
}

// worldCase is the healthy world changed by edit, and what c says of it.
type worldCase struct {
	name   string
	edit   func(w *checkstest.World)
	status checks.Status
	reason string
}

// runCases runs c on each case's world; its first evidence is command.
func runCases(t *testing.T, c checks.Check, command string, cases []worldCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := checkstest.NewWorld(t)
			if tc.edit != nil {
				tc.edit(w)
			}
			r := runOne(t, w, c)
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
			require.NotEmpty(t, r.Evidence)
			assert.Equal(t, command, r.Evidence[0].Command)
		})
	}
}

func TestMetricsAPIs(t *testing.T) {
	runCases(t, scheduling.MetricsAPIs{}, "kubectl get apiservices | grep -E 'NAME|metrics\\.k8s\\.io'", []worldCase{
		{
			name:   "served and Available",
			status: checks.Pass,
			reason: "external.metrics.k8s.io served by KEDA (keda/keda-operator-metrics-apiserver)",
		},
		{
			name: "an adapter the data file does not know",
			edit: func(w *checkstest.World) {
				w.APIServices = append(w.APIServices, checkstest.APIService("v1beta2.custom.metrics.k8s.io", "monitoring", "my-adapter", "True"))
			},
			status: checks.Pass,
			reason: "custom.metrics.k8s.io served by the Service monitoring/my-adapter; external.metrics.k8s.io served by KEDA",
		},
		{
			name: "the adapter unavailable",
			edit: func(w *checkstest.World) {
				w.APIServices[1] = checkstest.APIService("v1beta1.external.metrics.k8s.io", "keda", "keda-operator-metrics-apiserver", "False")
			},
			status: checks.Fail,
			reason: "1 metrics APIService not Available: v1beta1.external.metrics.k8s.io, served by KEDA (keda/keda-operator-metrics-apiserver): Available=False (FailedDiscoveryCheck: failing or missing response)",
		},
		{
			name: "Available unknown is not Available",
			edit: func(w *checkstest.World) {
				w.APIServices[0] = checkstest.APIService("v1beta1.metrics.k8s.io", "kube-system", "metrics-server", "Unknown")
			},
			status: checks.Fail,
			reason: "v1beta1.metrics.k8s.io, served by metrics-server (kube-system/metrics-server): Available=Unknown",
		},
		{
			name:   "resource metrics only",
			edit:   func(w *checkstest.World) { w.APIServices = w.APIServices[:1] },
			status: checks.Fail,
			reason: "neither custom.metrics.k8s.io nor external.metrics.k8s.io is registered: an HPA can scale on CPU and memory only",
		},
		{
			name:   "no resource metrics",
			edit:   func(w *checkstest.World) { w.APIServices = w.APIServices[1:] },
			status: checks.Warn,
			reason: "metrics.k8s.io is not registered",
		},
	})
}

func TestHPAsActive(t *testing.T) {
	cpuOnly := func(w *checkstest.World) {
		w.HPAs[0].Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU}}}
	}
	runCases(t, scheduling.HPAsActive{}, "kubectl get hpa -A", []worldCase{
		{
			name:   "an HPA scales GPU pods on an external metric",
			status: checks.Pass,
			reason: "1 HPA scaling accelerator pods on custom or external metrics: ml/llm-server (Deployment/llm-server, pods requesting nvidia.com/gpu, on external metric s0-queue-depth)",
		},
		{
			name: "it cannot get its metric",
			edit: func(w *checkstest.World) {
				w.HPAs[0] = checkstest.GPUHPA("ml", "llm-server", "s0-queue-depth", corev1.ConditionFalse)
			},
			status: checks.Fail,
			reason: "ScalingActive=False (FailedGetExternalMetric",
		},
		{
			name: "ScalingActive Unknown is not active",
			edit: func(w *checkstest.World) {
				w.HPAs[0] = checkstest.GPUHPA("ml", "llm-server", "s0-queue-depth", corev1.ConditionUnknown)
			},
			status: checks.Fail,
			reason: "ScalingActive=Unknown",
		},
		{
			name: "one works, another does not",
			edit: func(w *checkstest.World) {
				other := w.Deployments[0].DeepCopy()
				other.Name = "embedder"
				w.Deployments = append(w.Deployments, other)
				w.HPAs = append(w.HPAs, checkstest.GPUHPA("ml", "embedder", "s1-rps", corev1.ConditionFalse))
			},
			status: checks.Warn,
			reason: "1 HPA scaling accelerator pods on custom or external metrics; 1 cannot: ml/embedder",
		},
		{
			name:   "on CPU only",
			edit:   cpuOnly,
			status: checks.Skip,
			reason: "no HPA scales accelerator pods on a custom or external metric (1 HPA read, 0 on such metrics)",
		},
		{
			name: "its pods ask no accelerator",
			edit: func(w *checkstest.World) {
				w.Deployments[0].Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
			},
			status: checks.Skip,
			reason: "(1 HPA read, 1 on such metrics)",
		},
		{
			name: "a StatefulSet's pods",
			edit: func(w *checkstest.World) {
				w.HPAs[0].Spec.ScaleTargetRef.Kind = "StatefulSet"
				set := &appsv1.StatefulSet{ObjectMeta: w.Deployments[0].ObjectMeta, Spec: appsv1.StatefulSetSpec{Template: w.Deployments[0].Spec.Template}}
				w.Deployments = nil
				w.StatefulSets = []*appsv1.StatefulSet{set}
			},
			status: checks.Pass,
			reason: "ml/llm-server (StatefulSet/llm-server, pods requesting nvidia.com/gpu",
		},
		{
			name: "a probe's HPA is not judged",
			edit: func(w *checkstest.World) {
				w.HPAs[0].Labels = map[string]string{probe.RunLabel: "20260601-120000-abcd"}
			},
			status: checks.Skip,
			reason: "(1 HPA read, 0 on such metrics)",
		},
		{
			name: "an HPA disabled by scaling its target to zero shows nothing",
			edit: func(w *checkstest.World) {
				w.HPAs[0].Status.Conditions[1] = autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse, Reason: "ScalingDisabled"}
			},
			status: checks.Skip,
		},
	})
}

func TestHPAProbeSkipsWithoutProbes(t *testing.T) {
	env := &checks.Env{Now: checkstest.FixedNow}
	r, err := scheduling.HPAProbe{}.Run(context.Background(), env)
	require.NoError(t, err)
	assert.Equal(t, checks.Skip, r.Status)
	assert.Contains(t, r.Reason, "probes are off: --probe scales a Deployment of accelerator pods")
}

// The read-only checks judge the cluster as it is; the requirement is not
// met by served APIs alone.
func TestPodAutoscalingVerdict(t *testing.T) {
	reqs, err := checks.Catalog(builtin.Registry())
	require.NoError(t, err)
	var pa []checks.Requirement
	for _, r := range reqs {
		if r.ID == "pod_autoscaling" {
			pa = append(pa, r)
		}
	}
	require.Len(t, pa, 1)
	judge := func(w *checkstest.World) checks.Verdict {
		out := w.Serve().Run([]checks.Check{scheduling.MetricsAPIs{}, scheduling.HPAsActive{}, scheduling.HPAProbe{}}, nil)
		return checks.Evaluate(pa, out)[0]
	}

	v := judge(checkstest.NewWorld(t))
	assert.Equal(t, checks.Implemented, v.Status, v.Conclusion)
	assert.Contains(t, v.Conclusion, "behaviour not probed (hpa-probe: run with --probe)")

	w := checkstest.NewWorld(t)
	w.HPAs = nil
	v = judge(w)
	assert.Equal(t, checks.NotImplemented, v.Status, v.Conclusion)
	assert.False(t, v.Met())
	assert.Contains(t, v.Conclusion, "not shown at work: hpas-active: no HPA scales accelerator pods")
	assert.Contains(t, v.Conclusion, "hpa-probe: probes are off")
}
