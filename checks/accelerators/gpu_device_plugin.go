package accelerators

import (
	"context"
	_ "embed"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The node labels NVIDIA's GPU Feature Discovery writes (the GPU Operator
// runs it), which must agree with what the device plugin advertises.
const (
	labelGPUPresent  = "nvidia.com/gpu.present"
	labelGPUProduct  = "nvidia.com/gpu.product"
	labelGPUCount    = "nvidia.com/gpu.count"
	labelMIGStrategy = "nvidia.com/mig.strategy"
)

// nvidiaGPU is the resource NVIDIA's device plugin advertises, and the one
// a node labelled nvidia.com/gpu.present=true should have.
const nvidiaGPU corev1.ResourceName = "nvidia.com/gpu"

// clusterPolicyCRD is the NVIDIA GPU Operator's CRD; its ClusterPolicy
// reports in status.state whether the GPU stack it manages is ready.
const clusterPolicyCRD = "clusterpolicies.nvidia.com"

// gfdColumns show a node's NVIDIA GPUs as advertised and as labelled.
var gfdColumns = strings.Join([]string{
	"NAME:.metadata.name",
	`GPU_CAPACITY:.status.capacity.nvidia\.com/gpu`,
	`GPU_PRESENT:.metadata.labels.nvidia\.com/gpu\.present`,
	`GPU_PRODUCT:.metadata.labels.nvidia\.com/gpu\.product`,
	`GPU_COUNT:.metadata.labels.nvidia\.com/gpu\.count`,
}, ",")

//go:embed device_plugins.yaml
var devicePluginsYAML []byte

var _ = checks.RegisterData[[]devicePlugin]("device_plugins.yaml", devicePluginsYAML)

// devicePlugin is a kind of device-plugin DaemonSet, known by the labels
// of its pods and the accelerator resources it advertises; or a plugin a
// managed platform runs in the image of nodes carrying NodeLabels, where
// the cluster shows no pod of it (EKS Auto Mode).
type devicePlugin struct {
	Name       string            `yaml:"name"`
	Resources  []string          `yaml:"resources"`
	PodLabels  map[string]string `yaml:"podLabels"`
	NodeLabels map[string]string `yaml:"nodeLabels"`
}

// inImageOf is true for a plugin of the node image of a node labelled
// nodeLabels.
func (d devicePlugin) inImageOf(nodeLabels map[string]string) bool {
	if len(d.NodeLabels) == 0 {
		return false
	}
	for k, v := range d.NodeLabels {
		if nodeLabels[k] != v {
			return false
		}
	}
	return true
}

// serves is true when the plugin advertises the resource: a name in
// Resources, or a prefix ending in "*".
func (d devicePlugin) serves(res corev1.ResourceName) bool {
	for _, r := range d.Resources {
		if prefix, ok := strings.CutSuffix(r, "*"); (ok && strings.HasPrefix(string(res), prefix)) || r == string(res) {
			return true
		}
	}
	return false
}

// runs is true when a pod template carries every one of the plugin's
// labels.
func (d devicePlugin) runs(podLabels map[string]string) bool {
	if len(d.PodLabels) == 0 {
		return false // a node image's plugin has no pod
	}
	for k, v := range d.PodLabels {
		if podLabels[k] != v {
			return false
		}
	}
	return true
}

// devicePlugins reads the embedded device_plugins.yaml.
func devicePlugins() ([]devicePlugin, error) {
	ds, err := checks.Data[[]devicePlugin]("device_plugins.yaml", devicePluginsYAML)
	if err != nil {
		return nil, err
	}
	for i, d := range ds {
		if d.Name == "" || len(d.Resources) == 0 || (len(d.PodLabels) == 0) == (len(d.NodeLabels) == 0) {
			return nil, fmt.Errorf("device_plugins.yaml: entry %d needs a name, resources, and podLabels or nodeLabels (one of them)", i+1)
		}
	}
	return ds, nil
}

// pluginTable names the plugins of device_plugins.yaml, for the
// description; were the file bad, the check's Run returns its error.
func pluginTable() string {
	ds, err := devicePlugins()
	if err != nil {
		return "unreadable: " + err.Error()
	}
	names := make([]string, len(ds))
	for i, d := range ds {
		names[i] = d.Name
	}
	return strings.Join(names, "; ")
}

// GPUDevicePlugin checks that a device plugin serves every GPU node.
type GPUDevicePlugin struct{}

// Meta implements checks.Check.
func (GPUDevicePlugin) Meta() checks.Meta {
	return checks.Meta{
		ID:          "gpu-device-plugin",
		Title:       "A Ready device plugin on every GPU node",
		Requirement: "gpu_nodes_allocatable",
		Description: "GPU nodes are those advertising an accelerator resource (as for gpu-allocatable) or labelled " +
			"nvidia.com/gpu.present=true. Device-plugin DaemonSets are recognised, in every namespace, by " +
			"the pod labels of the device plugins of a table kept as data, " +
			"checks/accelerators/device_plugins.yaml (" + pluginTable() + "); their pods are read per " +
			"DaemonSet by its selector and " +
			"counted when the DaemonSet owns them. Each GPU node must run a Running and Ready pod of a " +
			"DaemonSet serving its accelerator resources: none, or none Ready, fails. A plugin that is gone " +
			"can leave a node advertising GPUs for a while, which is why gpu-allocatable alone is not " +
			"enough. Warnings: where the NVIDIA GPU Operator's ClusterPolicy CRD is installed, a " +
			"ClusterPolicy whose status.state is not ready (it covers the driver, toolkit and monitoring " +
			"too, and the device plugin pods are judged directly), or that cannot be read; GPU Feature " +
			"Discovery labels that disagree with the node (nvidia.com/gpu.present=true without " +
			"nvidia.com/gpu, nvidia.com/gpu.count other than its capacity without MIG, no " +
			"nvidia.com/gpu.product); resources for which no device plugin is known are not judged. No GPU " +
			"node makes it not applicable.",
		Remediation: "Install or repair the device plugin DaemonSet (the GPU Operator, or NVIDIA's " +
			"k8s-device-plugin; the accelerator vendor's plugin for others), check its nodeSelector and " +
			"tolerations reach every GPU node, and read the " +
			"pod's logs on the node where it fails (driver not loaded, wrong container runtime). For a " +
			"ClusterPolicy not ready, `kubectl describe clusterpolicy` and the gpu-operator namespace's pods " +
			"name the failing component.",
	}
}

// pluginSet is a device-plugin DaemonSet found on the cluster, with the
// pods it owns.
type pluginSet struct {
	ds     *appsv1.DaemonSet
	plugin devicePlugin
	pods   []*corev1.Pod
	// byNode are the pods by spec.nodeName: a DaemonSet of 500 GPU nodes
	// has 500 pods to look up one node at a time.
	byNode map[string][]*corev1.Pod
}

func (p *pluginSet) String() string { return "DaemonSet " + p.ds.Namespace + "/" + p.ds.Name }

// acceleratorNode is a GPU node and the accelerator resources it
// advertises (or, labelled only, should).
type acceleratorNode struct {
	node      *corev1.Node
	resources []corev1.ResourceName
	// labelledOnly nodes advertise no accelerator but are labelled
	// nvidia.com/gpu.present=true.
	labelledOnly bool
}

// Run implements checks.Check.
func (GPUDevicePlugin) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	plugins, err := devicePlugins()
	if err != nil {
		return r, err
	}
	if _, err := hardware.AcceleratorTable(); err != nil {
		return r, err
	}
	nodes, err := checks.List[*corev1.Node](ctx, env, cluster.Query{Resource: cluster.Nodes})
	if err != nil {
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Nodes}}, "")
		return r, err
	}
	gpuNodes := acceleratorNodes(nodes)
	if len(gpuNodes) == 0 {
		r.Finish(checks.Skip, "none of %d nodes advertises an accelerator resource or is labelled %s=true", len(nodes), labelGPUPresent)
		return r, nil
	}

	dsGet := cluster.Get{Resources: []cluster.Resource{cluster.DaemonSets}, Wide: true}
	all, err := checks.List[*appsv1.DaemonSet](ctx, env, dsGet.Queries()[0])
	if err != nil {
		r.AddEvidence(ctx, env, dsGet, "")
		return r, err
	}
	var sets []*pluginSet
	for _, ds := range all {
		for _, pl := range plugins {
			if pl.runs(ds.Spec.Template.Labels) {
				sets = append(sets, &pluginSet{ds: ds, plugin: pl})
				break
			}
		}
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i].String() < sets[j].String() })
	if len(sets) == 0 {
		r.AddEvidence(ctx, env, dsGet, "no DaemonSet carries the pod labels of a known device plugin")
	} else {
		byNS := map[string][]string{}
		for _, s := range sets {
			byNS[s.ds.Namespace] = append(byNS[s.ds.Namespace], s.ds.Name)
		}
		for _, ns := range checks.SortedKeys(byNS) {
			r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.DaemonSets}, Namespace: ns, Names: byNS[ns], Wide: true}, "")
		}
	}
	for _, s := range sets {
		sel, err := metav1.LabelSelectorAsSelector(s.ds.Spec.Selector)
		if err != nil {
			return r, fmt.Errorf("%s: selector: %w", s, err)
		}
		get := cluster.Get{Resources: []cluster.Resource{cluster.Pods}, Namespace: s.ds.Namespace, LabelSelector: sel.String(), Wide: true}
		r.AddEvidence(ctx, env, get, "the pods of "+s.String()+", one per node it runs on")
		pods, err := checks.List[*corev1.Pod](ctx, env, get.Queries()[0])
		if err != nil {
			return r, err
		}
		s.byNode = map[string][]*corev1.Pod{}
		for _, p := range pods {
			if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == s.ds.UID {
				s.pods = append(s.pods, p)
				s.byNode[p.Spec.NodeName] = append(s.byNode[p.Spec.NodeName], p)
			}
		}
	}

	now := env.Now()
	var fails, warns, unknowns, unseen, bad, good []string
	imageNodes := map[string]bool{} // nodes a plugin of their image serves
	judged := 0
	table := &checks.Table{Header: []string{"NODE", "RESOURCES", "DEVICE PLUGIN POD", "READY"}}
	for _, g := range gpuNodes {
		n := g.node
		nodeFails := 0
		// Resources served by the same plugins are judged together: one
		// NVIDIA plugin pod serves nvidia.com/gpu and its MIG slices.
		groups := map[string][]corev1.ResourceName{}
		var unknown []string
		for _, res := range g.resources {
			var by []string
			for _, pl := range plugins {
				if pl.serves(res) {
					by = append(by, pl.Name)
				}
			}
			if len(by) == 0 {
				unknown = append(unknown, string(res))
				continue
			}
			key := strings.Join(by, "\x00")
			groups[key] = append(groups[key], res)
		}
		for _, key := range checks.SortedKeys(groups) {
			judged++
			served := groups[key]
			resNames := resourceList(served)
			subject := fmt.Sprintf("node %s advertises %s", n.Name, resNames)
			if g.labelledOnly {
				subject = fmt.Sprintf("node %s is labelled %s=true", n.Name, labelGPUPresent)
			}
			var candidates []*pluginSet
			for _, s := range sets {
				if checks.Contains(strings.Split(key, "\x00"), s.plugin.Name) {
					candidates = append(candidates, s)
				}
			}
			var ready, notReady []*corev1.Pod
			for _, s := range candidates {
				for _, p := range s.byNode[n.Name] {
					if p.Status.Phase == corev1.PodRunning && kube.PodReady(p) {
						ready = append(ready, p)
					} else {
						notReady = append(notReady, p)
					}
				}
			}
			inImage := ""
			if len(candidates) == 0 && !g.labelledOnly {
				inImage = imagePlugin(plugins, key, n.Labels)
			}
			switch {
			case len(ready) > 0:
				table.Rows = append(table.Rows, []string{n.Name, resNames, ready[0].Namespace + "/" + ready[0].Name, "True"})
			case len(notReady) > 0:
				p := notReady[0]
				why, _ := kube.PodHealth(p, now)
				fails = append(fails, fmt.Sprintf("node %s: device plugin pod %s/%s for %s is not Running and Ready (%s)", n.Name, p.Namespace, p.Name, resNames, strings.Join(why, "; ")))
				table.Rows = append(table.Rows, []string{n.Name, resNames, p.Namespace + "/" + p.Name, "False"})
				nodeFails++
			case inImage != "":
				// Allocatable shows a plugin registered with the kubelet;
				// its health is the platform's, which the cluster does not
				// show.
				table.Rows = append(table.Rows, []string{n.Name, resNames, "<in the node image: " + inImage + ">", "unseen"})
				unseen = append(unseen, fmt.Sprintf("node %s: %s served by %s, in the node image, not a pod the cluster shows", n.Name, resNames, inImage))
				imageNodes[n.Name] = true
			case len(candidates) == 0:
				fails = append(fails, subject+", but no device plugin DaemonSet for "+resNames+" exists")
				table.Rows = append(table.Rows, []string{n.Name, resNames, "<none>", "False"})
				nodeFails++
			default:
				var names []string
				for _, s := range candidates {
					names = append(names, s.ds.Namespace+"/"+s.ds.Name)
				}
				fails = append(fails, fmt.Sprintf("%s, but no pod of device plugin DaemonSet %s runs on it", subject, strings.Join(names, ", ")))
				table.Rows = append(table.Rows, []string{n.Name, resNames, "<none>", "False"})
				nodeFails++
			}
		}
		if len(unknown) > 0 {
			table.Rows = append(table.Rows, []string{n.Name, strings.Join(unknown, ", "), "not judged", ""})
			unknowns = append(unknowns, fmt.Sprintf("node %s advertises %s, for which aiconform knows no device plugin: not judged", n.Name, strings.Join(unknown, ", ")))
		}
		labelWarns := gfdLabels(g)
		warns = append(warns, labelWarns...)
		if nodeFails > 0 || len(labelWarns) > 0 {
			bad = append(bad, n.Name)
		} else {
			good = append(good, n.Name)
		}
	}

	shown := append([]string(nil), bad...)
	for _, name := range good {
		shown = append(shown, name)
	}
	note := ""
	if len(shown) > maxNodeEvidence {
		shown = shown[:maxNodeEvidence]
		note = fmt.Sprintf("%d of %d GPU nodes shown, those with findings first; the summary table covers all", len(shown), len(gpuNodes))
	}
	if nvidiaNodes(gpuNodes) {
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Nodes}, Names: shown, Columns: gfdColumns},
			joinNotes(note, "GPU_PRESENT, GPU_PRODUCT and GPU_COUNT are GPU Feature Discovery's labels"))
	} else {
		// No NVIDIA GPU, no GPU Feature Discovery: the nodes' own
		// resources, as gpu-allocatable shows them.
		resSet := map[string]bool{}
		for _, g := range gpuNodes {
			for _, res := range g.resources {
				resSet[string(res)] = true
			}
		}
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Nodes}, Names: shown, Columns: gpuColumns(checks.SortedKeys(resSet))}, note)
	}

	policy, policyWarns := clusterPolicies(ctx, env, &r)
	warns = append(warns, policyWarns...)

	r.Table = table
	if judged == 0 && len(warns) == 0 {
		// No node has an accelerator a known plugin serves: nothing was
		// judged, and saying so is all there is.
		r.Finish(checks.Skip, "aiconform knows no device plugin for the accelerators of %s: %s", checks.Plural(len(gpuNodes), "GPU node"), checks.CapLines(unknowns, maxNodeEvidence, "; "))
		return r, nil
	}
	warns = append(unknowns, warns...)
	r.Details = append(append(append([]string(nil), fails...), warns...), unseen...)
	inImage := ""
	if len(unseen) > 0 {
		inImage = fmt.Sprintf("; the device plugin of %s runs in the node image of a managed platform: "+
			"registered with the kubelet (its accelerators are allocatable), its health "+
			"not shown by the cluster",
			checks.Plural(len(imageNodes), "GPU node"))
	}
	switch {
	case len(fails) > 0:
		r.Finish(checks.Fail, "%s", checks.CapLines(fails, maxNodeEvidence, "; "))
	case len(warns) > 0:
		r.Finish(checks.Warn, "a Ready device plugin pod on each judged GPU node (%s), but %s%s", pluginNames(sets), checks.CapLines(warns, maxNodeEvidence, "; "), inImage)
	case len(sets) == 0:
		r.Finish(checks.Pass, "every GPU node's device plugin runs in its node image%s", inImage)
	default:
		r.Finish(checks.Pass, "a Ready device plugin pod on each of %s (%s)%s%s", checks.Plural(len(gpuNodes)-len(imageNodes), "GPU node"), pluginNames(sets), inImage, policy)
	}
	return r, nil
}

// imagePlugin names a plugin of those key joins that a managed platform
// runs in the image of a node labelled nodeLabels; "" when none does.
func imagePlugin(plugins []devicePlugin, key string, nodeLabels map[string]string) string {
	names := strings.Split(key, "\x00")
	for _, pl := range plugins {
		if checks.Contains(names, pl.Name) && pl.inImageOf(nodeLabels) {
			return pl.Name
		}
	}
	return ""
}

// acceleratorNodes are the nodes with accelerator resources, in capacity
// or allocatable, and those labelled as having NVIDIA GPUs, by name.
func acceleratorNodes(nodes []*corev1.Node) []acceleratorNode {
	var out []acceleratorNode
	for _, n := range nodes {
		set := hardware.AcceleratorResources(n)
		labelledOnly := false
		if n.Labels[labelGPUPresent] == "true" && !hasNVIDIA(set) {
			// GPU Feature Discovery saw GPUs the node does not advertise:
			// the device plugin is exactly what is missing.
			set[nvidiaGPU] = true
			labelledOnly = len(set) == 1
		}
		if len(set) == 0 {
			continue
		}
		g := acceleratorNode{node: n, labelledOnly: labelledOnly}
		for name := range set {
			g.resources = append(g.resources, name)
		}
		sort.Slice(g.resources, func(i, j int) bool { return g.resources[i] < g.resources[j] })
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].node.Name < out[j].node.Name })
	return out
}

// nvidiaNodes is true when a GPU node has NVIDIA's GPUs, advertised or
// labelled: GPU Feature Discovery's labels are then worth showing.
func nvidiaNodes(gs []acceleratorNode) bool {
	for _, g := range gs {
		set := map[corev1.ResourceName]bool{}
		for _, res := range g.resources {
			set[res] = true
		}
		if hasNVIDIA(set) {
			return true
		}
	}
	return false
}

func hasNVIDIA(set map[corev1.ResourceName]bool) bool {
	for name := range set {
		if strings.HasPrefix(string(name), "nvidia.com/") {
			return true
		}
	}
	return false
}

// gfdLabels says where GPU Feature Discovery's labels disagree with what
// the node advertises. A node without any of them says nothing: GFD is
// optional.
func gfdLabels(g acceleratorNode) []string {
	n := g.node
	present, hasPresent := n.Labels[labelGPUPresent]
	count, hasCount := n.Labels[labelGPUCount]
	_, hasProduct := n.Labels[labelGPUProduct]
	capacity := n.Status.Capacity[nvidiaGPU]
	mig := false
	for _, res := range g.resources {
		mig = mig || strings.HasPrefix(string(res), "nvidia.com/mig-")
	}
	if s := n.Labels[labelMIGStrategy]; s != "" && s != "none" {
		mig = true
	}
	advertised := capacity.Value() > 0 || mig
	if !hasPresent && !hasCount && !hasProduct {
		return nil
	}
	var warns []string
	switch {
	case present == "true" && !advertised:
		warns = append(warns, fmt.Sprintf("node %s is labelled %s=true but advertises no %s", n.Name, labelGPUPresent, nvidiaGPU))
	case present != "true" && advertised:
		warns = append(warns, fmt.Sprintf("node %s advertises %s %s but is labelled %s=%q", n.Name, capacity.String(), nvidiaGPU, labelGPUPresent, present))
	}
	if hasCount && !mig && advertised {
		if c, err := strconv.ParseInt(count, 10, 64); err != nil || c != capacity.Value() {
			warns = append(warns, fmt.Sprintf("node %s is labelled %s=%s but its %s capacity is %s", n.Name, labelGPUCount, count, nvidiaGPU, capacity.String()))
		}
	}
	if present == "true" && !hasProduct {
		warns = append(warns, fmt.Sprintf("node %s is labelled %s=true without %s", n.Name, labelGPUPresent, labelGPUProduct))
	}
	return warns
}

// clusterPolicies reads the GPU Operator's ClusterPolicies where its CRD
// is installed: a phrase for a passing reason, and warnings. They only
// ever warn: the device plugin pods are judged directly, and a
// ClusterPolicy's state covers monitoring and more besides.
func clusterPolicies(ctx context.Context, env *checks.Env, r *checks.Result) (string, []string) {
	crds, err := checks.List[*apiextensionsv1.CustomResourceDefinition](ctx, env, cluster.Query{Resource: cluster.CRDs})
	if err != nil {
		return "", []string{fmt.Sprintf("cannot tell whether the NVIDIA GPU Operator is installed: %v", err)}
	}
	crd := kube.FindCRD(crds, clusterPolicyCRD)
	if crd == nil {
		return "", nil
	}
	res := kube.CRDResource(crd)
	get := cluster.Get{Resources: []cluster.Resource{res}}
	r.AddEvidence(ctx, env, get, "")
	cps, err := checks.List[*unstructured.Unstructured](ctx, env, get.Queries()[0])
	if err != nil {
		return "", []string{fmt.Sprintf("the NVIDIA GPU Operator's ClusterPolicy cannot be read: %v", err)}
	}
	if len(cps) == 0 {
		return "", []string{"the NVIDIA GPU Operator's CRD is installed but no ClusterPolicy exists: the operator manages nothing"}
	}
	var warns, ready []string
	for _, cp := range cps {
		state, _, _ := unstructured.NestedString(cp.Object, "status", "state")
		switch state {
		case "ready":
			ready = append(ready, cp.GetName())
		case "ignored":
			// Another ClusterPolicy is the one the operator acts on.
		case "":
			warns = append(warns, fmt.Sprintf("ClusterPolicy %s reports no state: the GPU Operator does not report its stack ready", cp.GetName()))
		default:
			warns = append(warns, fmt.Sprintf("ClusterPolicy %s is %s: the GPU Operator does not report its stack ready", cp.GetName(), state))
		}
	}
	if len(warns) > 0 {
		return "", warns
	}
	if len(ready) == 0 {
		return "", []string{"every ClusterPolicy is ignored by the NVIDIA GPU Operator"}
	}
	return "; ClusterPolicy " + strings.Join(ready, ", ") + " ready", nil
}

func resourceList(rs []corev1.ResourceName) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

func pluginNames(sets []*pluginSet) string {
	var s []string
	for _, p := range sets {
		if len(p.pods) > 0 {
			s = append(s, p.String())
		}
	}
	if len(s) == 0 {
		return "no device plugin DaemonSet"
	}
	return strings.Join(s, ", ")
}

func joinNotes(notes ...string) string {
	var kept []string
	for _, n := range notes {
		if n != "" {
			kept = append(kept, n)
		}
	}
	return strings.Join(kept, "; ")
}
