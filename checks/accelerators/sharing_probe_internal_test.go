package accelerators

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/probe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	restfake "k8s.io/client-go/rest/fake"
)

var updateSharing = flag.Bool("update", false, "rewrite the golden files under testdata/")

// The GPUs of testdata's outputs, as nvidia-smi names them.
const (
	gpuA = "GPU-8e4f2c1a-3b7d-4f0e-9a6c-2d1b5e7f9c30"
	gpuB = "GPU-1c9a7e35-62d4-4b8f-a013-7f5e2d9c4b61"
	gpuM = "GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77"
	gpuN = "GPU-b7c2e914-0a5f-4d63-8e21-3f9d6c0a1e58"
)

// shareOut is one of testdata's outputs of a share pod, written in the
// formats the tools print: `nvidia-smi -L` (a GPU line, and the MIG
// devices under it), its complaints, the device plugin's
// NVIDIA_VISIBLE_DEVICES, and BusyBox's errors.
func shareOut(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sharing-"+name+".txt"))
	require.NoError(t, err)
	return string(b)
}

func TestSmiGPUsAndVisibleIDs(t *testing.T) {
	for _, tc := range []struct {
		file    string
		gpus    []smiGPU
		visible []string
	}{
		{"slice-a0", []smiGPU{{name: "NVIDIA H100 80GB HBM3", uuid: gpuA}}, []string{gpuA + "::0"}},
		{"mig-m0", []smiGPU{{name: "NVIDIA A100-SXM4-40GB", uuid: gpuM, migs: []string{"MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f"}}}, []string{"MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f"}},
		{"mig-n0-legacy", []smiGPU{{name: "NVIDIA A100-SXM4-40GB", uuid: gpuN, migs: []string{"MIG-" + gpuN + "/7/0"}}}, []string{"MIG-" + gpuN + "/7/0"}},
		{"every-gpu", []smiGPU{{name: "NVIDIA H100 80GB HBM3", uuid: gpuA}, {name: "NVIDIA H100 80GB HBM3", uuid: gpuB}}, nil},
		{"smi-failed", nil, nil},
		{"no-devices", nil, nil},
		{"no-smi-a1", nil, []string{gpuA + "::1"}},
		{"no-smi-index0", nil, []string{"0"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			out := checks.CommandOutputs(shareOut(t, tc.file))
			assert.Equal(t, tc.gpus, smiGPUs(out[smiListCommand]))
			assert.Equal(t, tc.visible, visibleIDs(out[visibleCommand]))
		})
	}
	assert.Empty(t, checks.CommandOutputs(shareOut(t, "no-shell")), "a runtime's complaint before any heading is no command's")
	assert.Equal(t, []string{gpuA, gpuB}, visibleIDs(gpuA+","+gpuB))
	assert.Nil(t, visibleIDs("/var/run/nvidia-container-devices"))

	for id, want := range map[string]string{
		gpuA + "::3":           gpuA,
		gpuA:                   gpuA,
		"MIG-" + gpuN + "/7/0": gpuN,
		"3":                    "GPU index 3",
		"1:2":                  "GPU index 1",
		"MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f::1": "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f",
	} {
		assert.Equal(t, want, physicalOf(id), id)
	}
}

// shareNode is a GPU node as GPU Feature Discovery labels it, with
// allocatable of the resources given.
func shareNode(name string, labels map[string]string, alloc corev1.ResourceList) *corev1.Node {
	n := checkstest.Node(name, corev1.ConditionTrue, alloc)
	n.Labels = map[string]string{corev1.LabelHostname: name, "nvidia.com/gpu.present": "true"}
	for k, v := range labels {
		n.Labels[k] = v
	}
	return n
}

// timeSliced labels a node of gpus GPUs time-sliced replicas ways.
func timeSliced(gpus, replicas int) map[string]string {
	return map[string]string{"nvidia.com/gpu.count": fmt.Sprint(gpus), "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
		"nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.replicas": fmt.Sprint(replicas)}
}

func TestJudgeSharing(t *testing.T) {
	node := shareNode("gpu-node-1", nil, nil)
	slicing := shareTarget{shareOffer: shareOffer{node: node, res: "nvidia.com/gpu", how: "time-slicing, 4 replicas per GPU", gpus: 1, free: 4}, pods: 2, forced: true}
	three := shareTarget{shareOffer: shareOffer{node: node, res: "nvidia.com/gpu", how: "time-slicing, 4 replicas per GPU", gpus: 2, free: 8}, pods: 3, forced: true}
	spread := shareTarget{shareOffer: shareOffer{node: node, res: "nvidia.com/gpu", how: "time-slicing, 2 replicas per GPU", gpus: 8, free: 4}, pods: 2}
	mig := shareTarget{shareOffer: shareOffer{node: node, res: "nvidia.com/mig-1g.5gb", how: "MIG partitions as resources", free: 7}, pods: 2}
	for _, tc := range []struct {
		name   string
		target shareTarget
		files  []string
		status checks.Status
		reason string
	}{
		{name: "two replicas of one GPU", target: slicing, files: []string{"slice-a0", "slice-a1"}, status: checks.Pass,
			reason: "pods aiconform-share-a and aiconform-share-b, on node gpu-node-1, each holding one nvidia.com/gpu (time-slicing, 4 replicas per GPU), are bound to the same GPU " + gpuA + " (aiconform-share-a: NVIDIA H100 80GB HBM3, " + gpuA + "::0; aiconform-share-b: NVIDIA H100 80GB HBM3, " + gpuA + "::1), as `nvidia-smi -L` shows"},
		{name: "two of three pods on one GPU of two", target: three, files: []string{"slice-a0", "slice-b0", "slice-a1"}, status: checks.Pass,
			reason: "pods aiconform-share-a and aiconform-share-c, on node gpu-node-1, each holding one nvidia.com/gpu (time-slicing, 4 replicas per GPU), are bound to the same GPU " + gpuA},
		{name: "forced, all different", target: three, files: []string{"slice-a0", "slice-b0", "mig-n0-legacy"}, status: checks.Fail,
			reason: "the 3 pods on node gpu-node-1, each holding one nvidia.com/gpu (time-slicing, 4 replicas per GPU) see 3 different GPUs, on a node that publishes 2 GPUs: the shares are not shares of its GPUs (aiconform-share-a: " + gpuA + " by `nvidia-smi -L`; aiconform-share-b: " + gpuB + " by `nvidia-smi -L`; aiconform-share-c: " + gpuN + " by `nvidia-smi -L`)"},
		{name: "one GPU, two devices", target: slicing, files: []string{"slice-a0", "slice-b0"}, status: checks.Fail,
			reason: "see 2 different GPUs, on a node that publishes 1 GPU: the shares are not shares of its GPUs"},
		{name: "spread over two of eight", target: spread, files: []string{"slice-a0", "slice-b0"}, status: checks.Warn,
			reason: "were given shares of different GPUs (aiconform-share-a: " + gpuA + " by `nvidia-smi -L`; aiconform-share-b: " + gpuB + " by `nvidia-smi -L`) of a node of 8 GPUs (4 shares free, too few to run 9 pods and force two onto one GPU): the device plugin chose where each went, which neither shows nor disproves that a GPU is shared"},
		{name: "MIG devices of one GPU", target: mig, files: []string{"mig-m0", "mig-m1"}, status: checks.Pass,
			reason: "are bound to the same GPU " + gpuM + " (aiconform-share-a: NVIDIA A100-SXM4-40GB, MIG MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f; aiconform-share-b: NVIDIA A100-SXM4-40GB, MIG MIG-cba663e8-9bed-5b25-b243-5985ef7c9beb), as `nvidia-smi -L` shows"},
		{name: "MIG devices of two GPUs", target: mig, files: []string{"mig-m0", "mig-n0-legacy"}, status: checks.Warn,
			reason: "of a node that does not publish how many GPUs its shares are cut from"},
		{name: "by the plugin's IDs, nvidia-smi missing", target: slicing, files: []string{"no-smi-a1", "slice-a0"}, status: checks.Pass,
			reason: "are bound to the same GPU " + gpuA + " (aiconform-share-a: " + gpuA + "::1; aiconform-share-b: NVIDIA H100 80GB HBM3, " + gpuA + "::0), as NVIDIA_VISIBLE_DEVICES shows"},
		{name: "indexes and UUIDs", target: slicing, files: []string{"no-smi-index0", "slice-a0"}, status: checks.Error,
			reason: "name their GPUs in ways that cannot be compared (aiconform-share-a: GPU index 0 by NVIDIA_VISIBLE_DEVICES; aiconform-share-b: " + gpuA + " by `nvidia-smi -L`)"},
		{name: "the driver unreachable", target: slicing, files: []string{"slice-a0", "smi-failed"}, status: checks.Fail,
			reason: "pod aiconform-share-b, holding one nvidia.com/gpu on node gpu-node-1, sees no GPU: `nvidia-smi -L` printed \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\"; NVIDIA_VISIBLE_DEVICES is nothing"},
		{name: "no devices", target: slicing, files: []string{"no-devices", "slice-a0"}, status: checks.Fail,
			reason: "pod aiconform-share-a, holding one nvidia.com/gpu on node gpu-node-1, sees no GPU: `nvidia-smi -L` printed \"No devices were found\"; NVIDIA_VISIBLE_DEVICES is \"void\""},
		{name: "every GPU", target: slicing, files: []string{"slice-a0", "every-gpu"}, status: checks.Fail,
			reason: "pod aiconform-share-b, holding one nvidia.com/gpu on node gpu-node-1, sees 2 GPUs (" + gpuA + ", " + gpuB + ", by `nvidia-smi -L`): a share is not bound to one device"},
		{name: "no shell", target: slicing, files: []string{"slice-a0", "no-shell"}, status: checks.Error,
			reason: "pod aiconform-share-b printed none of the probe's commands: it did not run the script"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []podSeen
			for i, f := range tc.files {
				seen = append(seen, podSeen{pod: sharePodName(i), out: checks.CommandOutputs(shareOut(t, f))})
			}
			st, why := judgeSharing(seen, tc.target)
			assert.Equal(t, tc.status, st, why)
			assert.Contains(t, why, tc.reason)
		})
	}
}

func TestGPUSharingProbeSkipsWithoutProbes(t *testing.T) {
	r, err := GPUSharingProbe{}.Run(t.Context(), &checks.Env{Now: checkstest.FixedNow})
	require.NoError(t, err)
	assert.Equal(t, checks.Skip, r.Status)
	assert.Contains(t, r.Reason, "probes are off: --probe runs pods that each hold one share of a GPU")
}

// The probe asks where the outcome is forced when it can, else where the
// most shares are free, and says why there is nothing to ask.
func TestPlanSharing(t *testing.T) {
	plan := func(t *testing.T, edit func(w *checkstest.World)) (checks.Result, shareTarget, string, error) {
		w := checkstest.NewWorld(t)
		if edit != nil {
			edit(w)
		}
		var r checks.Result
		env := &checks.Env{Cluster: w.Serve().Cache(), Now: checkstest.FixedNow}
		target, skip, err := planSharing(t.Context(), env, &r)
		return r, target, skip, err
	}
	one := func(n string) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
	}
	for _, tc := range []struct {
		name   string
		edit   func(w *checkstest.World)
		node   string
		res    corev1.ResourceName
		gpus   int
		pods   int
		forced bool
		skip   string
		err    string
	}{
		// The world's node: 8 GPUs time-sliced two ways, 4 of its 8
		// allocatable in use (its labels and allocatable disagree, as
		// they may): two pods, not forced.
		{name: "the world's node", node: "gpu-node-1", res: "nvidia.com/gpu", gpus: 8, pods: 2},
		{name: "a node of one GPU is forced with two pods", edit: func(w *checkstest.World) {
			w.Nodes = append(w.Nodes, shareNode("gpu-node-2", timeSliced(1, 4), one("4")))
		}, node: "gpu-node-2", res: "nvidia.com/gpu", gpus: 1, pods: 2, forced: true},
		{name: "a node of two GPUs with three shares free is forced with three pods", edit: func(w *checkstest.World) {
			w.Nodes = append(w.Nodes, shareNode("gpu-node-2", timeSliced(2, 4), one("8")))
		}, node: "gpu-node-2", res: "nvidia.com/gpu", gpus: 2, pods: 3, forced: true},
		{name: "the fewest GPUs first", edit: func(w *checkstest.World) {
			w.Nodes = append(w.Nodes, shareNode("gpu-node-2", timeSliced(2, 4), one("8")), shareNode("gpu-node-3", timeSliced(1, 2), one("2")))
		}, node: "gpu-node-3", res: "nvidia.com/gpu", gpus: 1, pods: 2, forced: true},
		{name: "a renamed resource", edit: func(w *checkstest.World) {
			n := shareNode("gpu-node-2", timeSliced(1, 4), one("1"))
			n.Status.Allocatable["nvidia.com/gpu.shared"] = resource.MustParse("4")
			w.Nodes = append(w.Nodes, n)
		}, node: "gpu-node-2", res: "nvidia.com/gpu.shared", gpus: 1, pods: 2, forced: true},
		{name: "oversubscribed without a strategy label", edit: func(w *checkstest.World) {
			w.Nodes[1] = shareNode("gpu-node-1", map[string]string{"nvidia.com/gpu.count": "1"}, one("6"))
		}, node: "gpu-node-1", res: "nvidia.com/gpu", gpus: 1, pods: 2, forced: true},
		{name: "MIG partitions: GPUs unknown", edit: func(w *checkstest.World) {
			w.Nodes[1] = shareNode("gpu-node-1", map[string]string{"nvidia.com/gpu.count": "1", "nvidia.com/mig.strategy": "mixed"},
				corev1.ResourceList{"nvidia.com/mig-1g.5gb": resource.MustParse("7"), "nvidia.com/mig-3g.20gb": resource.MustParse("1")})
		}, node: "gpu-node-1", res: "nvidia.com/mig-1g.5gb", pods: 2},
		{name: "MIG single strategy", edit: func(w *checkstest.World) {
			w.Nodes[1] = shareNode("gpu-node-1", map[string]string{"nvidia.com/gpu.count": "7", "nvidia.com/mig.strategy": "single", "nvidia.com/gpu.product": "A100-SXM4-40GB-MIG-1g.5gb"}, one("7"))
		}, node: "gpu-node-1", res: "nvidia.com/gpu", pods: 2},
		{name: "one share free of a node of one GPU: another node", edit: func(w *checkstest.World) {
			w.Nodes = append(w.Nodes, shareNode("gpu-node-2", timeSliced(1, 4), one("4")))
			busy := checkstest.ReadyPod("ml", "busy-0", nil, "gpu-node-2")
			busy.Spec.Containers = []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Limits: one("3")}}}
			w.Pods = append(w.Pods, busy)
		}, node: "gpu-node-1", res: "nvidia.com/gpu", gpus: 8, pods: 2},
		{name: "no sharing", edit: func(w *checkstest.World) {
			w.Nodes[1] = shareNode("gpu-node-1", map[string]string{"nvidia.com/gpu.count": "8"}, one("8"))
		}, skip: "no Ready accelerator node exposes NVIDIA GPU shares a pod can ask for through a resource"},
		{name: "the shared node not Ready", edit: func(w *checkstest.World) {
			w.Nodes[1].Status.Conditions[0].Status = corev1.ConditionFalse
		}, skip: "no Ready accelerator node exposes NVIDIA GPU shares"},
		{name: "DRA partitions only", edit: func(w *checkstest.World) {
			w.Nodes[1] = checkstest.Node("gpu-node-1", corev1.ConditionTrue, nil)
			w.ResourceSlices[0].Spec.SharedCounters = []resourcev1.CounterSet{{Name: "gpu-0-counters"}}
		}, skip: "gpu-node-1 shares GPUs through DRA only, which a pod asks for by a ResourceClaim, not a resource"},
		{name: "every share in use", edit: func(w *checkstest.World) {
			w.Nodes[1].Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("5")
		}, err: "no Ready, schedulable node has two GPU shares free for the probe's pods (free: gpu-node-1 1 of nvidia.com/gpu)"},
		{name: "tainted for others", edit: func(w *checkstest.World) {
			w.Nodes[1].Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "team-a", Effect: corev1.TaintEffectNoSchedule}}
		}, err: "free: gpu-node-1 0 of nvidia.com/gpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, target, skip, err := plan(t, tc.edit)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			if tc.skip != "" {
				assert.Contains(t, skip, tc.skip)
				return
			}
			require.Empty(t, skip)
			assert.Equal(t, tc.node, target.node.Name)
			assert.Equal(t, tc.res, target.res)
			assert.Equal(t, tc.gpus, target.gpus)
			assert.Equal(t, tc.pods, target.pods)
			assert.Equal(t, tc.forced, target.forced)
			require.NotEmpty(t, r.Evidence)
			assert.Contains(t, r.Evidence[0].Command, "kubectl get nodes "+tc.node+" -L nvidia.com/gpu.count")
		})
	}

	// No accelerator node at all: skipped as gpu-sharing is.
	r, _, skip, err := plan(t, func(w *checkstest.World) { w.Nodes, w.ResourceSlices = w.Nodes[:1], nil })
	require.NoError(t, err)
	assert.Empty(t, skip)
	assert.Equal(t, checks.Skip, r.Status)
}

// Each pod holds one share, on the node, tolerating the resource's taint,
// as a user that is not root, within limits and a deadline.
func TestSharePods(t *testing.T) {
	node := shareNode("gpu-node-1", nil, nil)
	pods := sharePods("busybox:1.37", shareTarget{shareOffer: shareOffer{node: node, res: "nvidia.com/mig-1g.5gb"}, pods: 3}, time.Minute)
	require.Len(t, pods, 3)
	for i, pod := range pods {
		assert.Equal(t, []string{"aiconform-share-a", "aiconform-share-b", "aiconform-share-c"}[i], pod.Name)
		assert.Equal(t, "probe", pod.Labels[SharingLabel])
		require.Len(t, pod.Spec.Containers, 1)
		c := pod.Spec.Containers[0]
		assert.Equal(t, shareHolder, c.Name)
		assert.Equal(t, "busybox:1.37", c.Image)
		assert.Equal(t, []string{"sh", "-c", "echo '$ nvidia-smi -L'; nvidia-smi -L 2>&1; echo '$ echo $NVIDIA_VISIBLE_DEVICES'; echo $NVIDIA_VISIBLE_DEVICES 2>&1; exit 0"}, c.Command)
		assert.Equal(t, "1", ptrQuantity(c.Resources.Requests, "nvidia.com/mig-1g.5gb"))
		assert.Equal(t, "1", ptrQuantity(c.Resources.Limits, "nvidia.com/mig-1g.5gb"))
		assert.NotEmpty(t, ptrQuantity(c.Resources.Limits, corev1.ResourceCPU))
		assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
		assert.True(t, *pod.Spec.SecurityContext.RunAsNonRoot)
		assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy)
		assert.Equal(t, int64(180), *pod.Spec.ActiveDeadlineSeconds)
		assert.Equal(t, map[string]string{corev1.LabelHostname: "gpu-node-1"}, pod.Spec.NodeSelector)
		assert.Equal(t, []corev1.Toleration{{Key: "nvidia.com/mig-1g.5gb", Operator: corev1.TolerationOpExists}}, pod.Spec.Tolerations)
	}
	// The pod names stay apart up to the largest run.
	assert.Equal(t, "aiconform-share-i", sharePodName(maxSharePods-1))
}

const shareRun = "20270102-030405-beef"

// runShareProbe runs the probe on the world as edited, against fakes of
// the API server: each pod it creates is bound to the node it is pinned
// to and succeeds, and its log is the testdata output named for it in
// logs (or an error).
func runShareProbe(t *testing.T, edit func(w *checkstest.World), logs map[string]string) (checks.Result, error) {
	t.Helper()
	return runShareProbeEnding(t, edit, logs, nil)
}

// runShareProbeEnding is runShareProbe where end, when set, says how each
// pod ends instead.
func runShareProbeEnding(t *testing.T, edit func(w *checkstest.World), logs map[string]string, end func(p *corev1.Pod)) (checks.Result, error) {
	t.Helper()
	w := checkstest.NewWorld(t)
	if edit != nil {
		edit(w)
	}
	f := w.Serve()
	ns := probe.NamespacePrefix + shareRun
	// The kubelet runs each pod to its end on the node it was pinned to.
	f.Kubelet(t, ns, func(p *corev1.Pod) *corev1.Pod {
		p.Spec.NodeName = p.Spec.NodeSelector[corev1.LabelHostname]
		p.Status.Phase = corev1.PodSucceeded
		if end != nil {
			end(p)
		}
		return p
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	s := probe.NewSession(f.Dyn, mapper, shareRun, time.Minute)
	s.Raw = &restfake.RESTClient{NegotiatedSerializer: scheme.Codecs.WithoutConversion(), Client: restfake.CreateHTTPClient(func(r *http.Request) (*http.Response, error) {
		// /api/v1/namespaces/NS/pods/NAME/log?container=holder
		parts := strings.Split(r.URL.Path, "/")
		pod := parts[len(parts)-2]
		file, ok := logs[pod]
		if !ok {
			status := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, pod).ErrStatus
			status.Kind, status.APIVersion = "Status", "v1"
			body, err := runtime.Encode(scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion), &status)
			require.NoError(t, err)
			return &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(string(body)))}, nil
		}
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/plain"}}, Body: io.NopCloser(strings.NewReader(shareOut(t, file)))}, nil
	})}
	env := &checks.Env{Cluster: f.Cache(), Now: checkstest.FixedNow, Probe: s}
	return GPUSharingProbe{}.Run(context.Background(), env)
}

// The whole probe on a fake cluster: a node of two GPUs time-sliced four
// ways takes three pods, two of which see one GPU. What it shows is kept
// as a golden file: the pods sent, their listing, their logs.
func TestGPUSharingProbeRun(t *testing.T) {
	twoGPUs := func(w *checkstest.World) {
		w.Nodes[1] = shareNode("gpu-node-1", timeSliced(2, 4), corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("12")})
	}
	r, err := runShareProbe(t, twoGPUs, map[string]string{"aiconform-share-a": "slice-a0", "aiconform-share-b": "slice-b0", "aiconform-share-c": "slice-a1"})
	require.NoError(t, err)
	assert.Equal(t, checks.Pass, r.Status, r.Reason)
	assert.Equal(t, "pods aiconform-share-a and aiconform-share-c, on node gpu-node-1, each holding one nvidia.com/gpu (time-slicing, 4 replicas per GPU), are bound to the same GPU "+gpuA+
		" (aiconform-share-a: NVIDIA H100 80GB HBM3, "+gpuA+"::0; aiconform-share-c: NVIDIA H100 80GB HBM3, "+gpuA+"::1), as `nvidia-smi -L` shows (3 pods on a node of 2 GPUs: two had to share one)", r.Reason)
	require.NotNil(t, r.Table)
	assert.Contains(t, r.Table.Rows, []string{"pod aiconform-share-c bound to gpu-node-1", "03:04:05.000", "+0.0 s"})

	var b strings.Builder
	for _, step := range r.Evidence {
		fmt.Fprintf(&b, "# %s (%s)\n%s\n%s\n\n", step.Note, step.CapturedAt.Format(time.RFC3339), step.Command, step.Output)
	}
	golden := filepath.Join("testdata", "sharing-run.golden")
	if *updateSharing {
		require.NoError(t, os.WriteFile(golden, []byte(b.String()), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), b.String())

	// Every pod spread over the node's two GPUs and a third: the shares
	// are not shares of its GPUs.
	r, err = runShareProbe(t, twoGPUs, map[string]string{"aiconform-share-a": "slice-a0", "aiconform-share-b": "slice-b0", "aiconform-share-c": "mig-n0-legacy"})
	require.NoError(t, err)
	assert.Equal(t, checks.Fail, r.Status, r.Reason)

	// A log that cannot be read is an error, never a verdict.
	_, err = runShareProbe(t, twoGPUs, map[string]string{"aiconform-share-a": "slice-a0"})
	assert.ErrorContains(t, err, "cannot read what container holder of pod aiconform-share-b printed")

	// A pod that did not run the script.
	_, err = runShareProbe(t, twoGPUs, map[string]string{"aiconform-share-a": "slice-a0", "aiconform-share-b": "no-shell", "aiconform-share-c": "slice-a1"})
	assert.ErrorContains(t, err, "pod aiconform-share-b printed none of the probe's commands")

	// A pod stopped before its script ended printed only the start of
	// it, even when that start would pass: an error that says what
	// stopped it, with what it printed in the evidence.
	shared := map[string]string{"aiconform-share-a": "slice-a0", "aiconform-share-b": "slice-b0", "aiconform-share-c": "slice-a1"}
	r, err = runShareProbeEnding(t, twoGPUs, shared, func(p *corev1.Pod) {
		if p.Name == "aiconform-share-c" {
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "holder", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}}
		}
	})
	assert.EqualError(t, err, "pod aiconform-share-c ended before its script did (container holder OOMKilled, exit code 137): what it printed is incomplete")
	assert.Contains(t, r.Table.Rows, []string{"pod aiconform-share-c Failed (container holder OOMKilled, exit code 137)", "03:04:05.000", "+0.0 s"})
	assert.Equal(t, "kubectl logs -n "+probe.NamespacePrefix+shareRun+" aiconform-share-c -c holder", r.Evidence[len(r.Evidence)-1].Command)
	_, err = runShareProbeEnding(t, twoGPUs, shared, func(p *corev1.Pod) {
		if p.Name == "aiconform-share-a" {
			p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
		}
	})
	assert.EqualError(t, err, "pod aiconform-share-a ended before its script did (DeadlineExceeded Pod was active on the node longer than the specified deadline): what it printed is incomplete")
	// A script that failed on its own is judged on what it printed.
	r, err = runShareProbeEnding(t, twoGPUs, shared, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "holder", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}}
	})
	require.NoError(t, err)
	assert.Equal(t, checks.Pass, r.Status, r.Reason)
}
