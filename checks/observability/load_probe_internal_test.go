package observability

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/probe"
	"github.com/aiconform/aiconform/simulate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

// underLoad is the world's DCGM Exporter body with GPU gpu's utilization
// at value; mine adds the labels its Kubernetes mapping gives a GPU held
// by the probe's pod.
func underLoad(gpu, value int, mine bool) string {
	h := simulate.DCGMHolder{GPU: gpu, Util: value}
	if mine {
		h.Namespace, h.Pod, h.Container = probeNS, podLoad, loadContainer
	}
	return string(simulate.DCGMMetrics("gpu-node-1", 8, "570.124.06", h))
}

// loadCase is a world, what its exporter answers at each read, and what
// the probe says of it.
type loadCase struct {
	name string
	edit func(w *checkstest.World)
	// bodies are the exporter's answers at the n-th read (from 0, the one
	// before the load); past the last, the last. nil is the world's own.
	bodies func(t *testing.T, idle string) []string
	// readErr answers every read instead, when set.
	readErr error
	// pod is the pod the fake's kubelet reports; nil is Running.
	pod    func(p *corev1.Pod)
	ticks  int
	status checks.Status
	reason string
	// errText is part of the error, for Error.
	errText string
}

// loadPodRunning is the probe's pod as the fake's kubelet reports it.
func loadPodRunning() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: probeNS, Name: podLoad, ResourceVersion: "2", Labels: map[string]string{LoadLabel: "probe", probe.RunLabel: probeRun}},
		Spec:       corev1.PodSpec{NodeName: "gpu-node-1"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// runLoadProbe runs the probe on the case's world; it returns the result,
// its error, the fake, and how many reads of the exporter were made.
func runLoadProbe(t *testing.T, tc loadCase, sess func(s *probe.Session)) (checks.Result, error, *checkstest.FakeCluster, int) {
	t.Helper()
	w := checkstest.NewWorld(t)
	if tc.edit != nil {
		tc.edit(w)
	}
	idle := w.Raw[checkstest.DCGMPath]
	bodies := []string{idle}
	if tc.bodies != nil {
		bodies = tc.bodies(t, idle)
	}
	f := w.Serve()
	var mu sync.Mutex
	reads := 0
	f.Get = func(path string) ([]byte, error) {
		if path != checkstest.DCGMPath {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods/proxy"}, path)
		}
		mu.Lock()
		n := reads
		reads++
		mu.Unlock()
		if tc.readErr != nil {
			return nil, tc.readErr
		}
		return []byte(bodies[min(n, len(bodies)-1)]), nil
	}
	f.Kubelet(t, probeNS, func(*corev1.Pod) *corev1.Pod {
		p := loadPodRunning()
		if tc.pod != nil {
			tc.pod(p)
		}
		return p
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	s := probe.NewSession(f.Dyn, mapper, probeRun, time.Minute)
	if sess != nil {
		sess(s)
	}
	ticks := make(chan time.Time, tc.ticks)
	for range tc.ticks {
		ticks <- checkstest.Clock
	}
	close(ticks)
	env := &checks.Env{Cluster: f.Cache(), Now: checkstest.FixedNow, Probe: s}
	r, err := AcceleratorLoadProbe{ticks: ticks}.Run(context.Background(), env)
	mu.Lock()
	defer mu.Unlock()
	return r, err, f, reads
}

func TestAcceleratorLoadProbe(t *testing.T) {
	risesOnThirdRead := func(mine bool) func(t *testing.T, idle string) []string {
		return func(t *testing.T, idle string) []string {
			return []string{idle, idle, underLoad(0, 0, mine), underLoad(0, 100, mine)}
		}
	}
	cases := []loadCase{
		{name: "the probe's GPU rises", bodies: risesOnThirdRead(true), ticks: 5,
			status: checks.Pass, reason: "on node gpu-node-1, the accelerator NVIDIA DCGM Exporter ties to the probe's pod " + probeNS + "/aiconform-load: DCGM_FI_DEV_GPU_UTIL of gpu=0 went from 0 to 100 0.0 s after the load started, read through the API server"},
		{name: "a GPU rises, no pod named", bodies: risesOnThirdRead(false), ticks: 5,
			status: checks.Warn, reason: "on node gpu-node-1, DCGM_FI_DEV_GPU_UTIL of gpu=0 went from 0 to 100 0.0 s after the load started while the probe's load ran, but no series of NVIDIA DCGM Exporter names the probe's pod (its pod mapping is off), so the rise cannot be tied to the load"},
		{name: "the probe's GPU stays idle", ticks: 3,
			bodies: func(t *testing.T, idle string) []string {
				return []string{idle, underLoad(0, 3, true)}
			},
			status: checks.Fail, reason: "on node gpu-node-1, DCGM_FI_DEV_GPU_UTIL of the accelerator NVIDIA DCGM Exporter ties to the probe's pod did not rise by 10 over 4 reads while the probe's load ran: gpu=0 0 before, at most 3"},
		{name: "another GPU busy before, nothing rises", ticks: 2,
			status: checks.Fail, reason: "on node gpu-node-1, no accelerator's DCGM_FI_DEV_GPU_UTIL rose by 10 over 3 reads while the probe's load ran: gpu=0 0 before, at most 0; gpu=1 37 before, at most 37; gpu=2 74 before, at most 74; gpu=3 11 before, at most 11; and 4 more"},
		{name: "a rise of less than 10 points", ticks: 1,
			bodies: func(t *testing.T, idle string) []string {
				return []string{idle, underLoad(3, 20, true)}
			},
			status: checks.Fail, reason: "did not rise by 10 over 2 reads while the probe's load ran: gpu=3 11 before, at most 20"},
		{name: "no utilization served", edit: func(w *checkstest.World) {
			w.Raw[checkstest.DCGMPath] = dropSeries(w.Raw[checkstest.DCGMPath], "DCGM_FI_DEV_GPU_UTIL")
		},
			status: checks.Fail, reason: "on node gpu-node-1, NVIDIA DCGM Exporter (nvidia-dcgm-exporter-x7k2p) serves none of DCGM_FI_DEV_GPU_UTIL, DCGM_FI_PROF_GR_ENGINE_ACTIVE: a load on its accelerators cannot be seen"},
		{name: "no exporter on the node",
			edit: func(w *checkstest.World) {
				w.Pods = dropPod(w.Pods, dcgmPodName)
			},
			status: checks.Fail, reason: "node gpu-node-1, the one with the most nvidia.com/gpu free, cannot show a load: no accelerator metrics exporter pod runs on it"},
		{name: "an exporter not Ready",
			edit: func(w *checkstest.World) {
				for _, p := range w.Pods {
					if p.Name == dcgmPodName {
						p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionUnknown}}
					}
				}
			},
			status: checks.Fail, reason: "cannot show a load: exporter pod gpu-operator/nvidia-dcgm-exporter-x7k2p is Running, not Ready"},
		{name: "AMD only: no load known",
			edit: func(w *checkstest.World) {
				for _, n := range w.Nodes {
					for _, rl := range []corev1.ResourceList{n.Status.Allocatable, n.Status.Capacity} {
						if q, ok := rl["nvidia.com/gpu"]; ok {
							delete(rl, "nvidia.com/gpu")
							rl["amd.com/gpu"] = q
						}
					}
				}
			},
			status: checks.Skip, reason: "no Ready node offers an accelerator resource the probe knows how to load (NVIDIA's nvidia.com/gpu): accelerator-metrics judges the others' metrics read-only"},
		{name: "the exporter refuses", readErr: apierrors.NewForbidden(schema.GroupResource{Resource: "pods/proxy"}, "nvidia-dcgm-exporter-x7k2p", fmt.Errorf("no")),
			status: checks.Error, errText: "metrics of node gpu-node-1: pods/proxy \"nvidia-dcgm-exporter-x7k2p\" is forbidden"},
		{name: "the exporter does not answer", readErr: apierrors.NewInternalError(fmt.Errorf("DCGM: failed to connect to the host engine")),
			status: checks.Error, errText: "on node gpu-node-1, NVIDIA DCGM Exporter's metrics do not answer"},
		{name: "the load crashes at once",
			pod: func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodFailed
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: loadContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 127, Reason: "Error"}}}}
			},
			status: checks.Error, errText: "the probe's load pod aiconform-load ended before it was seen running: Failed (load exited 127: Error)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err, _, _ := runLoadProbe(t, tc, nil)
			if tc.status == checks.Error {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errText)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
		})
	}
}

// dropSeries drops a metric's lines from an exposition.
func dropSeries(body, name string) string {
	var kept []string
	for _, l := range strings.SplitAfter(body, "\n") {
		if !strings.HasPrefix(l, name+"{") && !strings.HasPrefix(l, "# HELP "+name+" ") && !strings.HasPrefix(l, "# TYPE "+name+" ") {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "")
}

// dcgmPodName is the world's exporter pod.
const dcgmPodName = "nvidia-dcgm-exporter-x7k2p"

func dropPod(pods []*corev1.Pod, name string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.Name != name {
			out = append(out, p)
		}
	}
	return out
}

// The reads stop at the rise; the evidence shows the read before the load
// and the one that rose, each as `kubectl get --raw ... | grep`, the pod,
// and what the load printed; the timeline tells the story.
func TestAcceleratorLoadProbeEvidence(t *testing.T) {
	tc := loadCase{ticks: 9, bodies: func(t *testing.T, idle string) []string {
		return []string{idle, underLoad(2, 100, true)}
	}}
	r, err, _, reads := runLoadProbe(t, tc, nil)
	require.NoError(t, err)
	require.Equal(t, checks.Pass, r.Status, r.Reason)
	assert.Equal(t, 2, reads, "one read before the load, one that saw it")
	var cmds []string
	for _, s := range r.Evidence {
		cmds = append(cmds, s.Command)
	}
	grep := "kubectl get --raw /api/v1/namespaces/gpu-operator/pods/nvidia-dcgm-exporter-x7k2p:9400/proxy/metrics | grep -E '^DCGM_FI_DEV_GPU_UTIL\\{'"
	assert.Equal(t, []string{
		grep,
		"kubectl create -n " + probeNS + " -f - <<'EOF'",
		"kubectl get pods -n " + probeNS + " -l aiconform.io/load -o wide",
		grep,
		"kubectl logs -n " + probeNS + " aiconform-load -c load",
		"kubectl delete pods aiconform-load -n " + probeNS,
	}, firstLines(cmds))
	assert.Contains(t, r.Evidence[3].Output, `DCGM_FI_DEV_GPU_UTIL{gpu="2",`)
	assert.Contains(t, r.Evidence[3].Output, `pod="aiconform-load"} 100`)
	assert.NotContains(t, r.Evidence[0].Output, "aiconform-load", "the read before the load is shown as it was")
	require.NotNil(t, r.Table)
	var events []string
	for _, row := range r.Table.Rows {
		events = append(events, row[0])
	}
	assert.Equal(t, []string{"created pods/aiconform-load", "pod aiconform-load bound to gpu-node-1", "pod aiconform-load running: the load started", "DCGM_FI_DEV_GPU_UTIL of gpu=2 at 100", "deleted pods/aiconform-load"}, events)
}

func firstLines(cmds []string) []string {
	out := make([]string, len(cmds))
	for i, c := range cmds {
		out[i], _, _ = strings.Cut(c, "\n")
	}
	return out
}

// The pod sent: the vendor's load, for no longer than the probe timeout,
// holding one GPU with CPU and memory enough for CUDA's host side, on the
// node, as no root and with no privilege; --probe-load-image replaces the
// image only.
func TestAcceleratorLoadPod(t *testing.T) {
	for _, tc := range []struct {
		name, image, want string
	}{
		{name: "the vendor's image", want: "nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04"},
		{name: "--probe-load-image", image: "registry.example/mirror/dcgm:4.2.3-1-ubuntu22.04", want: "registry.example/mirror/dcgm:4.2.3-1-ubuntu22.04"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err, f, _ := runLoadProbe(t, loadCase{bodies: func(t *testing.T, idle string) []string {
				return []string{idle, underLoad(0, 100, true)}
			}}, func(s *probe.Session) { s.LoadImage = tc.image })
			require.NoError(t, err)
			var pod corev1.Pod
			for _, a := range f.Dyn.Actions() {
				if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "pods" {
					require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(c.GetObject().(*unstructured.Unstructured).Object, &pod))
				}
			}
			require.Len(t, pod.Spec.Containers, 1)
			c := pod.Spec.Containers[0]
			assert.Equal(t, tc.want, c.Image)
			assert.Equal(t, []string{"/usr/bin/dcgmproftester12", "--no-dcgm-validation", "-t", "1007", "-d", "60"}, c.Command, "a minute: the probe timeout, under the two minutes a load runs at most")
			one := resource.MustParse("1")
			for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				assert.True(t, one.Equal(rl["nvidia.com/gpu"]), "one GPU: %v", rl)
				assert.Equal(t, "1Gi", ptrQ(rl[corev1.ResourceMemory]))
				assert.Equal(t, "1", ptrQ(rl[corev1.ResourceCPU]))
			}
			assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy)
			require.NotNil(t, pod.Spec.ActiveDeadlineSeconds)
			assert.Equal(t, int64(180), *pod.Spec.ActiveDeadlineSeconds)
			assert.Equal(t, "gpu-node-1", pod.Spec.NodeName, "the world's node has no hostname label: pinned by name")
			assert.True(t, *pod.Spec.SecurityContext.RunAsNonRoot)
			assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
			assert.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
			assert.Contains(t, pod.Spec.Tolerations, corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists})
		})
	}
}

func ptrQ(q resource.Quantity) string { return q.String() }

// The verdict of a load that ran and ended: a load that exits in error
// is the probe's failure to judge, one that ran to its end a Fail.
func TestLoadVerdictAfterTheEnd(t *testing.T) {
	e := exporterNamed(t, "NVIDIA DCGM Exporter")
	target := loadTarget{node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-node-1"}}, exporter: &e}
	o := &loadObservation{metric: e.Load.Watch[0], base: map[string]loadSample{"0": {value: 0}}, peak: map[string]float64{"0": 1}, reads: 12, deviceLabel: "gpu"}
	ended := func(phase corev1.PodPhase, code int32) *loadWatch {
		p := loadPodRunning()
		p.Status.Phase = phase
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: loadContainer, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error"}}}}
		return &loadWatch{pod: p, startedAt: checkstest.Clock, endedAt: checkstest.Clock}
	}
	st, why := o.verdict(target, ended(corev1.PodFailed, 1))
	assert.Equal(t, checks.Error, st)
	assert.Equal(t, "on node gpu-node-1, the load did not run to its end: container load exited 1 (Error), and no device's DCGM_FI_DEV_GPU_UTIL rose (its logs are in the evidence; is --probe-load-image an image with /usr/bin/dcgmproftester12?)", why)
	st, why = o.verdict(target, ended(corev1.PodSucceeded, 0))
	assert.Equal(t, checks.Fail, st)
	assert.Equal(t, "on node gpu-node-1, no accelerator's DCGM_FI_DEV_GPU_UTIL rose by 10 over 12 reads while the probe's load ran to its end: gpu=0 0 before, at most 1", why)
}

func exporterNamed(t *testing.T, name string) exporter {
	t.Helper()
	known, err := exporters()
	require.NoError(t, err)
	for _, e := range known {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no exporter %s", name)
	return exporter{}
}

// An exposition as DCGM Exporter writes it with its Kubernetes mapping on
// (testdata, written from its documented format): the GPU a pod holds is
// named with the pod, the others are not; the ratio field is read too.
func TestParseLoad(t *testing.T) {
	body, err := os.ReadFile("testdata/dcgm-pod-mapping.txt")
	require.NoError(t, err)
	e := exporterNamed(t, "NVIDIA DCGM Exporter")
	lr, err := e.parseLoad(body)
	require.NoError(t, err)
	assert.Equal(t, map[string]loadSample{
		"0": {value: 97, pod: "llm-server-7d9f8-x2x4q", namespace: "ml"},
		"1": {value: 0},
	}, lr.series["DCGM_FI_DEV_GPU_UTIL"])
	assert.Equal(t, map[string]loadSample{
		"0": {value: 0.912345, pod: "llm-server-7d9f8-x2x4q", namespace: "ml"},
		"1": {value: 0},
	}, lr.series["DCGM_FI_PROF_GR_ENGINE_ACTIVE"])
	_, err = e.parseLoad([]byte("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\" 1\n"))
	assert.ErrorContains(t, err, "not the Prometheus text format")
}
