package rig

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The Karpenter release the rig's autoscaler is built from (its kwok cloud
// provider); tools/karpenter/go.mod pins the same (a test keeps them
// equal). v1.15 needs a newer Go than the machine's.
const (
	KarpenterModule  = "sigs.k8s.io/karpenter"
	KarpenterVersion = "v1.14.1"
)

// The objects the rig gives Karpenter: one NodePool of GPU nodes, on a
// KWOKNodeClass, and the instance type its nodes are made of.
const (
	KarpenterNodePool     = "gpu"
	KarpenterNodeClass    = "default"
	KarpenterInstanceType = "rig-gpu-8x"
	// KarpenterGPULimit is the NodePool's limit of nvidia.com/gpu: room
	// for KarpenterGPULimit/GPUCount nodes.
	KarpenterGPULimit = 2 * GPUCount
)

// The CRD files of the module: Karpenter's own API (NodePool, NodeClaim,
// and the rest of its chart) and the kwok provider's NodeClass.
var karpenterCRDDirs = []string{"kwok/charts/crds", "kwok/apis/crds"}

var (
	nodePoolResource  = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	nodeClaimResource = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
)

// Karpenter is Karpenter's kwok provider running as a local process, the
// way a cloud's Karpenter runs in its cluster: it watches pending pods,
// makes NodeClaims for them and creates their nodes, which the rig's kwok
// then runs (they carry its node annotation), and removes the nodes once
// they are empty. Stopped, its NodePool, NodeClaims and nodes stay.
type Karpenter struct {
	component
	// health and metrics are its ports, both needed: it has no flag to
	// turn either off.
	health, metrics int
}

// InstallKarpenter installs Karpenter's CRDs from its module, starts its
// kwok provider with one instance type of GPUCount GPUs, and creates a
// NodePool of them with a limit of KarpenterGPULimit GPUs that consolidates
// empty nodes after a few seconds. It needs a full rig: its nodes are
// kwok's and its pods the scheduler's.
func (c *Cluster) InstallKarpenter(ctx context.Context, opts OperatorOptions) (_ *Karpenter, err error) {
	if c.state.ControlPlaneOnly {
		return nil, fmt.Errorf("karpenter needs a full rig (kcm, scheduler, kwok), not a ControlPlaneOnly one")
	}
	if opts.Timeout == 0 {
		opts.Timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	base, err := c.newComponent(ctx, opts, "karpenter", "karpenter-kwok", KarpenterModule, KarpenterVersion)
	if err != nil {
		return nil, err
	}
	k := &Karpenter{component: base}
	in, err := c.newInstaller()
	if err != nil {
		return nil, err
	}
	var crds []string
	for _, d := range karpenterCRDDirs {
		names, err := in.applyDir(ctx, filepath.Join(k.moduleDir, d), nil)
		if err != nil {
			return nil, err
		}
		crds = append(crds, names...)
	}
	if err := in.waitCRDsEstablished(ctx, crds); err != nil {
		return nil, err
	}
	if err := k.prepare(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = k.Stop()
		}
	}()
	if err := k.Start(ctx); err != nil {
		return nil, err
	}
	for _, obj := range []map[string]any{nodeClass(), nodePool()} {
		if err := in.apply(ctx, &unstructured.Unstructured{Object: obj}); err != nil {
			return nil, err
		}
	}
	if err := k.waitPoolReady(ctx); err != nil {
		return nil, err
	}
	return k, nil
}

func nodeClass() map[string]any {
	return map[string]any{
		"apiVersion": "karpenter.kwok.sh/v1alpha1", "kind": "KWOKNodeClass",
		"metadata": map[string]any{"name": KarpenterNodeClass},
	}
}

// nodePool makes GPU nodes labelled as GPU Feature Discovery labels the
// rig's own GPU node, so that they look alike to the checks.
func nodePool() map[string]any {
	labels := map[string]any{}
	for k, v := range GPUNode().Labels {
		if k != corev1.LabelHostname {
			labels[k] = v
		}
	}
	return map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
		"metadata": map[string]any{"name": KarpenterNodePool},
		"spec": map[string]any{
			"limits": map[string]any{string(GPUResource): strconv.Itoa(KarpenterGPULimit)},
			// Empty nodes go soon: the probe waits for it.
			"disruption": map[string]any{"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "5s"},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{
					"nodeClassRef": map[string]any{"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": KarpenterNodeClass},
					"requirements": []any{
						map[string]any{"key": corev1.LabelInstanceTypeStable, "operator": "In", "values": []any{KarpenterInstanceType}},
					},
				},
			},
		},
	}
}

// instanceTypes is the provider's instance types file: one GPU type in one
// zone, on demand.
func instanceTypes() ([]byte, error) {
	type requirement struct {
		Key      string   `json:"key"`
		Operator string   `json:"operator"`
		Values   []string `json:"values"`
	}
	return json.MarshalIndent([]map[string]any{{
		"name":             KarpenterInstanceType,
		"architecture":     "amd64",
		"operatingSystems": []string{"linux"},
		"resources": map[string]string{
			"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "100Gi",
			string(GPUResource): strconv.Itoa(GPUCount),
		},
		"offerings": []map[string]any{{
			"Price": 10.0, "Available": true,
			"Requirements": []requirement{
				{Key: "karpenter.sh/capacity-type", Operator: "In", Values: []string{"on-demand"}},
				{Key: corev1.LabelTopologyZone, Operator: "In", Values: []string{"rig-a"}},
			},
		}},
	}}, "", "  ")
}

// prepare writes the process's kubeconfig and instance types.
func (k *Karpenter) prepare() error {
	if _, err := k.writeKubeconfig(); err != nil {
		return err
	}
	types, err := instanceTypes()
	if err != nil {
		return err
	}
	return os.WriteFile(k.instanceTypesFile(), types, 0o644)
}

func (k *Karpenter) instanceTypesFile() string { return filepath.Join(k.dir, "instance-types.json") }

// Start runs Karpenter (again) and waits until its health probe answers.
// It has no leader election: one process, as the rig runs everything.
func (k *Karpenter) Start(ctx context.Context) error {
	if err := k.notRunning(); err != nil {
		return err
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	k.health, k.metrics = ports[0], ports[1]
	args := []string{
		"--disable-leader-election",
		// Karpenter binds both on every address; nothing but the rig's
		// readiness poll, on loopback, ever dials them.
		"--health-probe-port", strconv.Itoa(k.health),
		"--metrics-port", strconv.Itoa(k.metrics),
		"--instance-types-file-path", k.instanceTypesFile(),
		"--log-level", "info",
	}
	env := append(childEnv(), "KUBECONFIG="+k.kubeconfig())
	if err := k.launch(args, env); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	return waitAnswers(ctx, hc, fmt.Sprintf("http://127.0.0.1:%d/readyz", k.health), k.proc, "karpenter")
}

// SetGPULimit changes the NodePool's limit of GPUs: at or below what its
// nodes hold, Karpenter adds none.
func (k *Karpenter) SetGPULimit(ctx context.Context, gpus int) error {
	in, err := k.c.newInstaller()
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"limits": map[string]any{string(GPUResource): strconv.Itoa(gpus)}}})
	if err != nil {
		return err
	}
	_, err = in.dyn.Resource(nodePoolResource).Patch(ctx, KarpenterNodePool, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	return err
}

// WaitNoNodeClaims waits until Karpenter has removed every node it added.
func (k *Karpenter) WaitNoNodeClaims(ctx context.Context) error {
	in, err := k.c.newInstaller()
	if err != nil {
		return err
	}
	var left int
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		l, err := in.dyn.Resource(nodeClaimResource).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		left = len(l.Items)
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("karpenter's NodeClaims gone: %w (%d left)", err, left)
	}
	return nil
}

// waitPoolReady waits for the NodePool's Ready=True, which Karpenter sets
// once it has validated it and found its NodeClass.
func (k *Karpenter) waitPoolReady(ctx context.Context) error {
	in, err := k.c.newInstaller()
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		u, err := in.dyn.Resource(nodePoolResource).Get(ctx, KarpenterNodePool, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Ready" {
				last = fmt.Sprintf("Ready=%v %v", m["status"], m["message"])
				return m["status"] == "True", nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("NodePool %s Ready: %w (last: %s)", KarpenterNodePool, err, last)
	}
	return nil
}
