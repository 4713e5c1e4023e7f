package accelerators

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
	"github.com/aiconform/aiconform/checks/kube"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// SharingLabel marks the GPU sharing probe's pods.
const SharingLabel = "aiconform.io/sharing"

// The probe's pods are aiconform-share-a, -b, ...; each has one
// container, which holds one share.
const (
	sharePodPrefix = "aiconform-share-"
	shareHolder    = "holder"
)

// maxSharePods bounds the pods of one run: enough to force two shares
// onto one GPU on a node of up to 8 GPUs (the largest usual), few enough
// to take a node's shares for seconds only.
const maxSharePods = 9

// The commands that say which physical device a container was given:
// nvidia-smi, where NVIDIA's container toolkit puts it, asks the driver
// (a GPU line with its UUID, and under it the MIG devices of it the
// container holds); the device plugin's environment variable names the
// devices it allocated, as the runtime reads them.
const (
	smiListCommand = "nvidia-smi -L"
	visibleCommand = "echo $NVIDIA_VISIBLE_DEVICES"
)

// shareScript is what each probe pod runs (checks.CommandsScript).
var shareScript = checks.CommandsScript(smiListCommand, visibleCommand)

// GPUSharingProbe runs pods that each hold one share of a GPU on one node,
// and looks at which physical GPU each was given.
type GPUSharingProbe struct{}

// Meta implements checks.Check.
func (GPUSharingProbe) Meta() checks.Meta {
	return checks.Meta{
		ID: "gpu-sharing-probe", Title: "Pods that each hold a share of a GPU are bound to one physical GPU",
		Requirement: "gpu_sharing", Probe: true,
		Description: "Under --probe only. Finds the Ready accelerator nodes whose NVIDIA GPUs are shared through a " +
			"resource a pod can ask for, as gpu-sharing reads them: time-slicing or MPS replicas " +
			"(nvidia.com/gpu, or nvidia.com/gpu.shared, with nvidia.com/gpu.replicas above 1), an " +
			"allocatable above the physical nvidia.com/gpu.count, MIG partitions (nvidia.com/mig-*, or " +
			"nvidia.com/gpu under the single strategy). Two shares of one resource may come from two " +
			"different GPUs of a node that has several: NVIDIA's device plugin spreads time-sliced replicas " +
			"over the GPUs. So the probe asks only where the outcome is forced when it can: on a node " +
			"publishing N physical GPUs (nvidia.com/gpu.count, for time-slicing, MPS and oversubscription) " +
			"with N+1 shares free it runs N+1 pods (at most 9), and two of them must land on one GPU; the " +
			"node with the fewest GPUs is preferred, so a node of one GPU takes two pods. Otherwise it runs " +
			"two pods on the node with the most shares free. Each pod (aiconform-share-a, -b, ...; " +
			"--probe-shell-image, non-root, no privilege, all capabilities dropped, CPU and memory limits, a " +
			"deadline) is pinned to the node, tolerates the resource's taint, holds one share, and prints " +
			"`nvidia-smi -L` (the GPU it sees and its UUID; for MIG, the parent GPU and the MIG device) and " +
			"`echo $NVIDIA_VISIBLE_DEVICES` (the device IDs the device plugin gave it, used when nvidia-smi " +
			"is not in the container); the outputs are read back through the API server as `kubectl logs` " +
			"does. Passes when two pods see the same physical GPU (the same parent GPU for MIG devices), " +
			"naming it. Fails when a pod sees no GPU or more than one, or when the outcome was forced and " +
			"every pod saw a different GPU. Warns when two pods on a node of several GPUs (or an unpublished " +
			"count) were given shares of two different GPUs: the device plugin chose, which neither shows " +
			"nor disproves sharing. Skips without a shared NVIDIA resource on a Ready node (DRA partitions " +
			"are asked for by claims, not probed here); an error when fewer than two shares are free, the " +
			"pods do not end, or their output says nothing either way.",
		Remediation: "A pod that sees no GPU: the container runtime does not give containers what the device plugin " +
			"allocated (NVIDIA's container toolkit as the runtime, or its CDI specs). Shares of different " +
			"GPUs where the node has fewer: the node's labels are stale (restart GPU Feature Discovery on " +
			"it) or the device plugin's sharing configuration is not the one applied (check its config map " +
			"and the node's nvidia.com/device-plugin.config label). A pod that sees every GPU: the runtime " +
			"hands all devices to every container (NVIDIA_VISIBLE_DEVICES=all in the image or the runtime's " +
			"defaults); see device-isolation-probe.",
	}
}

// shareOffer is a resource of a node whose units are shares of GPUs.
type shareOffer struct {
	node *corev1.Node
	res  corev1.ResourceName
	// how says what makes res a share, in gpu-sharing's words.
	how string
	// gpus is how many physical GPUs the node's shares of res come from,
	// as its labels publish them; 0 when they do not say.
	gpus int
	// free is how many shares of res the node has free.
	free int64
}

// shareTarget is the probe's plan: the offer it asks of, and how many
// pods; forced is true when that many pods must put two on one GPU.
type shareTarget struct {
	shareOffer
	pods   int
	forced bool
}

// Run implements checks.Check.
func (GPUSharingProbe) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	s := env.Probe
	if s == nil {
		r.Finish(checks.Skip, "probes are off: --probe runs pods that each hold one share of a GPU on one "+
			"node, and shows whether two are bound to the same physical GPU")
		return r, nil
	}
	t, skip, err := planSharing(ctx, env, &r)
	if err != nil || skip != "" || r.Status != "" {
		if skip != "" {
			r.Finish(checks.Skip, "%s", skip)
		}
		return r, err
	}
	var pods []*unstructured.Unstructured
	for _, p := range sharePods(s.ShellImage, t, s.Timeout) {
		u, err := checks.Unstructured(p, corev1.SchemeGroupVersion.WithKind("Pod"))
		if err != nil {
			return r, err
		}
		pods = append(pods, u)
	}
	outputs, err := checks.PrintingPods(ctx, env, &r, SharingLabel, pods, func(_, container string) string {
		if container != "" {
			return fmt.Sprintf("the GPU a container holding one %s sees", t.res)
		}
		return fmt.Sprintf("on node %s: a pod holding one %s (%s)", t.node.Name, t.res, t.how)
	})
	if err != nil {
		return checks.Refused(r, err)
	}
	var seen []podSeen
	for i := range t.pods {
		name := sharePodName(i)
		seen = append(seen, podSeen{pod: name, out: checks.CommandOutputs(outputs[name+"/"+shareHolder])})
	}
	st, why := judgeSharing(seen, t)
	if st == checks.Error {
		return r, errors.New(why)
	}
	r.Finish(st, "%s", why)
	return r, nil
}

// planSharing finds the shared resources of the Ready accelerator nodes
// and picks one (pickShare), showing the node's sharing labels. With no
// accelerator node, r skips; skip says why there is nothing to probe.
func planSharing(ctx context.Context, env *checks.Env, r *checks.Result) (shareTarget, string, error) {
	ns, err := labelledNodes(ctx, env, r)
	if ns == nil {
		return shareTarget{}, "", err
	}
	var offers []shareOffer
	var draOnly []string
	for _, ln := range ns {
		if ready, _ := kube.NodeReady(ln.node); ready != corev1.ConditionTrue {
			continue
		}
		o := shareOffers(ln)
		if len(o) == 0 && len(sharingOf(ln)) > 0 {
			draOnly = append(draOnly, ln.node.Name)
		}
		offers = append(offers, o...)
	}
	if len(offers) == 0 {
		skip := "no Ready accelerator node exposes NVIDIA GPU shares a pod can ask for " +
			"through a resource (time-slicing or MPS replicas, oversubscription, MIG " +
			"partitions); gpu-sharing says what the nodes expose"
		if len(draOnly) > 0 {
			skip = fmt.Sprintf("%s shares GPUs through DRA only, which a pod asks for by a ResourceClaim, "+
				"not a resource: gpu-sharing reads those partitions, dra-probe allocates a device", checks.CapLines(draOnly, 3, ", "))
		}
		return shareTarget{}, skip, nil
	}
	for i := range offers {
		free, err := hardware.FreeAccelerators(ctx, env, []*corev1.Node{offers[i].node}, offers[i].res)
		if err != nil {
			return shareTarget{}, "", err
		}
		if len(free) == 1 {
			offers[i].free = free[0].Free
		}
	}
	t, ok := pickShare(offers)
	if !ok {
		var have []string
		for _, o := range offers {
			have = append(have, fmt.Sprintf("%s %d of %s", o.node.Name, o.free, o.res))
		}
		return shareTarget{}, "", fmt.Errorf("no Ready, schedulable node has two GPU shares free for the probe's pods "+
			"(free: %s): it cannot be judged while they are in use", checks.CapLines(have, 5, ", "))
	}
	i := slices.IndexFunc(ns, func(ln *labelledNode) bool { return ln.node.Name == t.node.Name })
	labelEvidence(ctx, env, r, ns[i:i+1], func(v vendorLabels) []string {
		return v.labelKeys(v.Count, v.Product, v.SharingStrategy, v.Replicas, v.MIGStrategy)
	}, "how the probed node's GPUs are shared, as its vendor's labeller publishes it")
	addAllocatable(ctx, env, r, ns[i:i+1])
	return t, "", nil
}

// shareOffers are the resources of a node whose units are shares of GPUs,
// by the rules gpu-sharing reads sharing by (sharingOf), kept to those a
// pod asks for by name and whose device nvidia-smi shows.
func shareOffers(ln *labelledNode) []shareOffer {
	n := ln.node
	var out []shareOffer
	add := func(res corev1.ResourceName, how string, gpus int) {
		alloc := n.Status.Allocatable[res]
		if alloc.Value() > 0 && !slices.ContainsFunc(out, func(o shareOffer) bool { return o.res == res }) {
			out = append(out, shareOffer{node: n, res: res, how: how, gpus: gpus})
		}
	}
	for _, v := range ln.vendors {
		if v.Replicas == "" && v.MIGStrategy == "" {
			continue // a vendor whose sharing the labels do not say
		}
		physical, _ := strconv.Atoi(n.Labels[v.Count])
		replicas, _ := strconv.Atoi(n.Labels[v.Replicas])
		strategy := n.Labels[v.SharingStrategy]
		switch {
		case n.Labels[v.MIGStrategy] == "single" && strings.Contains(n.Labels[v.Product], "MIG"):
			// Each nvidia.com/gpu is a MIG device; the count is of those,
			// so how many GPUs they are cut from is not published.
			add("nvidia.com/gpu", "MIG partitions as whole GPUs (strategy single)", 0)
		case strategy != "" && strategy != "none" && replicas > 1:
			how := fmt.Sprintf("%s, %d replicas per GPU", strategy, replicas)
			// The device plugin renames the resource when asked to
			// (renameByDefault).
			add("nvidia.com/gpu", how, physical)
			add("nvidia.com/gpu.shared", how, physical)
		case physical > 0:
			alloc := n.Status.Allocatable["nvidia.com/gpu"]
			if alloc.Value() > int64(physical) {
				add("nvidia.com/gpu", fmt.Sprintf("oversubscribed (nvidia.com/gpu allocatable %d of %d physical)", alloc.Value(), physical), physical)
			}
		}
	}
	// MIG devices of the mixed strategy: GPU Feature Discovery's count is
	// of full GPUs there, not of those the partitions are cut from.
	var migs []corev1.ResourceName
	for res := range n.Status.Allocatable {
		if strings.HasPrefix(string(res), "nvidia.com/mig-") {
			migs = append(migs, res)
		}
	}
	slices.Sort(migs)
	for _, res := range migs {
		add(res, "MIG partitions as resources", 0)
	}
	return out
}

// pickShare picks where the probe asks: where the outcome is forced with
// the fewest pods (a node publishing N GPUs with N+1 shares free: two of
// N+1 pods must share a GPU), else the offer with the most shares free,
// with two at least. Ties go to the first node by name, then resource.
func pickShare(offers []shareOffer) (shareTarget, bool) {
	offers = slices.Clone(offers)
	slices.SortStableFunc(offers, func(a, b shareOffer) int {
		return cmp.Or(strings.Compare(a.node.Name, b.node.Name), strings.Compare(string(a.res), string(b.res)))
	})
	var forced, spread *shareOffer
	for i := range offers {
		o := &offers[i]
		if o.gpus > 0 && o.gpus+1 <= maxSharePods && o.free > int64(o.gpus) && (forced == nil || o.gpus < forced.gpus) {
			forced = o
		}
		if o.free >= 2 && (spread == nil || o.free > spread.free) {
			spread = o
		}
	}
	switch {
	case forced != nil:
		return shareTarget{shareOffer: *forced, pods: forced.gpus + 1, forced: true}, true
	case spread != nil:
		return shareTarget{shareOffer: *spread, pods: 2}, true
	}
	return shareTarget{}, false
}

// sharePodName is the name of the i-th pod (from 0).
func sharePodName(i int) string { return sharePodPrefix + string(rune('a'+i)) }

// sharePods are the probe's pods: each holds one share and prints what
// identifies its GPU, pinned to the node.
func sharePods(image string, t shareTarget, timeout time.Duration) []*corev1.Pod {
	var pods []*corev1.Pod
	one := *resource.NewQuantity(1, resource.DecimalSI)
	for i := range t.pods {
		spec := checks.PrintingPodSpec(image, shareScript, t.node, timeout, string(t.res))
		c := &spec.Containers[0]
		c.Name = shareHolder
		c.Resources.Requests[t.res] = one
		c.Resources.Limits[t.res] = one
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: sharePodName(i), Labels: map[string]string{SharingLabel: "probe"}}, Spec: spec})
	}
	return pods
}

// podSeen is what one pod printed, by command (checks.CommandOutputs).
type podSeen struct {
	pod string
	out map[string]string
}

// smiGPU is one GPU of `nvidia-smi -L`, with the MIG devices listed under
// it.
type smiGPU struct {
	name, uuid string
	migs       []string
}

// The lines of `nvidia-smi -L`: "GPU 0: NVIDIA A100-SXM4-40GB (UUID:
// GPU-5d5b...)", and under a GPU in MIG mode one line per MIG device the
// process holds, "  MIG 1g.5gb     Device  0: (UUID: MIG-c6d4...)" (older
// drivers: "MIG-GPU-<uuid>/<gi>/<ci>").
var (
	smiGPULine = regexp.MustCompile(`^GPU \d+: (.*?) \(UUID: (GPU-[0-9A-Za-z-]+)\)`)
	smiMIGLine = regexp.MustCompile(`^MIG \S+\s+Device\s+\d+: \(UUID: (MIG-[^)\s]+)\)`)
)

// smiGPUs are the GPUs `nvidia-smi -L` listed; its complaints ("No
// devices were found", "NVIDIA-SMI has failed because ...") list none.
func smiGPUs(out string) []smiGPU {
	var gpus []smiGPU
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if m := smiGPULine.FindStringSubmatch(line); m != nil {
			gpus = append(gpus, smiGPU{name: m[1], uuid: m[2]})
		} else if m := smiMIGLine.FindStringSubmatch(line); m != nil && len(gpus) > 0 {
			g := &gpus[len(gpus)-1]
			g.migs = append(g.migs, m[1])
		}
	}
	return gpus
}

// visibleIDs are the device IDs of NVIDIA_VISIBLE_DEVICES as the device
// plugin sets it: comma-separated UUIDs or indexes, a time-sliced replica
// with "::<n>" after its device's ID. The runtime's words for all or none
// of the devices, and a path (the volume-mounts strategy), name none.
func visibleIDs(out string) []string {
	v := strings.TrimSpace(out)
	switch v {
	case "", "all", "none", "void":
		return nil
	}
	if strings.HasPrefix(v, "/") {
		return nil
	}
	var ids []string
	for _, id := range strings.Split(v, ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// physicalOf is the physical GPU a device ID of the plugin stands for:
// the GPU of a replica, of a legacy MIG ID ("MIG-GPU-<uuid>/1/0") or of
// a MIG index ("0:1"). A MIG UUID does not say its GPU: it stands for
// itself, which two replicas of one MIG device share.
func physicalOf(id string) string {
	id, _, _ = strings.Cut(id, "::")
	if rest, ok := strings.CutPrefix(id, "MIG-GPU-"); ok {
		gpu, _, _ := strings.Cut(rest, "/")
		return "GPU-" + gpu
	}
	if gpu, _, ok := strings.Cut(id, ":"); ok {
		id = gpu
	}
	if _, err := strconv.Atoi(id); err == nil {
		return "GPU index " + id
	}
	return id
}

// podGPUs is what identifies the physical GPUs one pod was given, and by
// which command: nvidia-smi's UUIDs (the driver's word) when it listed
// any, else the device plugin's IDs.
type podGPUs struct {
	pod  string
	gpus []string
	from string
	// detail names what else was shown of each GPU: its product, the
	// MIG devices, the plugin's replica IDs.
	detail map[string]string
}

// gpusOf reads one pod's output; ok is false when the pod ran none of
// the commands.
func gpusOf(p podSeen) (podGPUs, bool) {
	g := podGPUs{pod: p.pod, detail: map[string]string{}}
	smi, ranSMI := p.out[smiListCommand]
	env, ranEnv := p.out[visibleCommand]
	if !ranSMI && !ranEnv {
		return g, false
	}
	ids := visibleIDs(env)
	for _, gpu := range smiGPUs(smi) {
		g.gpus = append(g.gpus, gpu.uuid)
		d := gpu.name
		if len(gpu.migs) > 0 {
			d += ", MIG " + strings.Join(gpu.migs, ", ")
		}
		g.detail[gpu.uuid] = d
		g.from = "`" + smiListCommand + "`"
	}
	if len(g.gpus) > 0 {
		// The plugin's IDs of each GPU listed: with time-slicing, the
		// replica the pod was given.
		for _, id := range ids {
			if phys := physicalOf(id); id != phys && g.detail[phys] != "" {
				g.detail[phys] += ", " + id
			}
		}
		return g, true
	}
	for _, id := range ids {
		phys := physicalOf(id)
		if !slices.Contains(g.gpus, phys) {
			g.gpus = append(g.gpus, phys)
		}
		if id != phys {
			g.detail[phys] = strings.TrimPrefix(g.detail[phys]+", "+id, ", ")
		}
		g.from = "NVIDIA_VISIBLE_DEVICES"
	}
	return g, true
}

// gpuNaming tells apart the ways a GPU is named, which cannot be compared with
// each other: by UUID, by index.
func gpuNaming(gpu string) string {
	if strings.HasPrefix(gpu, "GPU index ") {
		return "index"
	}
	return "UUID"
}

// judgeSharing says whether two of the pods were given shares of one
// physical GPU. Error stands for output that says nothing either way.
func judgeSharing(seen []podSeen, t shareTarget) (checks.Status, string) {
	where := fmt.Sprintf("on node %s, each holding one %s (%s)", t.node.Name, t.res, t.how)
	var all []podGPUs
	kinds := map[string]bool{}
	for _, p := range seen {
		g, ok := gpusOf(p)
		if !ok {
			return checks.Error, fmt.Sprintf("pod %s printed none of the probe's commands: it did not run the script (is "+
				"--probe-shell-image an image with sh and echo?)", p.pod)
		}
		switch len(g.gpus) {
		case 0:
			return checks.Fail, fmt.Sprintf("pod %s, holding one %s on node %s, sees no GPU: `%s` printed %s; "+
				"NVIDIA_VISIBLE_DEVICES is %s", p.pod, t.res, t.node.Name, smiListCommand, quoteOutput(p.out[smiListCommand]), quoteOutput(p.out[visibleCommand]))
		case 1:
		default:
			return checks.Fail, fmt.Sprintf("pod %s, holding one %s on node %s, sees %d GPUs (%s, by %s): a share is not bound to one device", p.pod, t.res, t.node.Name, len(g.gpus), strings.Join(g.gpus, ", "), g.from)
		}
		kinds[gpuNaming(g.gpus[0])] = true
		all = append(all, g)
	}
	if len(kinds) > 1 {
		return checks.Error, fmt.Sprintf("the pods %s name their GPUs in ways that cannot be compared (%s)", where, describeGPUs(all))
	}
	// The first GPU, in pod order, that two pods were given.
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a.gpus[0] != b.gpus[0] {
				continue
			}
			gpu := a.gpus[0]
			saw := fmt.Sprintf("pods %s and %s, %s, are bound to the same GPU %s", a.pod, b.pod, where, gpu)
			if d := pairDetail(a, b, gpu); d != "" {
				saw += " (" + d + ")"
			}
			saw += ", as " + cmp.Or(a.from, b.from) + " shows"
			if t.forced && t.pods > 2 {
				saw += fmt.Sprintf(" (%d pods on a node of %s: two had to share one)", t.pods, checks.Plural(t.gpus, "GPU"))
			}
			return checks.Pass, saw
		}
	}
	if t.forced {
		return checks.Fail, fmt.Sprintf("the %d pods %s see %d different GPUs, on a node that publishes %s: the "+
			"shares are not shares of its GPUs (%s)", t.pods, where, len(all), checks.Plural(t.gpus, "GPU"), describeGPUs(all))
	}
	of := "a node that does not publish how many GPUs its shares are cut from"
	switch {
	case t.gpus+1 > maxSharePods:
		of = fmt.Sprintf("a node of %s (more than the probe's %d pods can force two onto one of)", checks.Plural(t.gpus, "GPU"), maxSharePods)
	case t.gpus > 0:
		of = fmt.Sprintf("a node of %s (%d shares free, too few to run %d pods and force two onto one GPU)", checks.Plural(t.gpus, "GPU"), t.free, t.gpus+1)
	}
	return checks.Warn, fmt.Sprintf("the pods %s were given shares of different GPUs (%s) of %s: the device "+
		"plugin chose where each went, which neither shows nor disproves that a GPU is shared", where, describeGPUs(all), of)
}

// pairDetail is what two pods were shown of one GPU: once when it is
// the same, else by pod.
func pairDetail(a, b podGPUs, gpu string) string {
	da, db := a.detail[gpu], b.detail[gpu]
	switch {
	case da == db:
		return da
	case da == "" || db == "":
		return da + db
	}
	return fmt.Sprintf("%s: %s; %s: %s", a.pod, da, b.pod, db)
}

// describeGPUs says which GPU each pod saw, and by what.
func describeGPUs(all []podGPUs) string {
	var parts []string
	for _, g := range all {
		parts = append(parts, fmt.Sprintf("%s: %s by %s", g.pod, g.gpus[0], g.from))
	}
	return strings.Join(parts, "; ")
}
