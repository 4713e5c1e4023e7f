package security

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
)

// maxNodeEvidence bounds how many accelerator nodes the evidence lists the
// pods of: those with findings first.
const maxNodeEvidence = 5

// DeviceAccessMediated looks, on every accelerator node, for pods that
// reach its devices other than by asking for them.
type DeviceAccessMediated struct{}

// Meta implements checks.Check.
func (DeviceAccessMediated) Meta() checks.Meta {
	return checks.Meta{
		ID: "device-access-mediated", Title: "Accelerators reach pods only through a resource request",
		Requirement: "secure_accelerator_access", ReadsNodePods: true,
		Description: "Accelerator nodes are those advertising an accelerator resource and those an accelerator DRA " +
			"driver publishes devices for. Their pods are read per node (a spec.nodeName field selector, as " +
			"`kubectl describe node` does), and each container is looked at for a way to a device around the " +
			"device plugin or DRA: running privileged (every device of the node), a hostPath volume of /dev " +
			"or of a vendor's device nodes (" + hardware.DescribeAccelerators((*hardware.Accelerators).HostPaths) + "), a " +
			"vendor's device variable (" + hardware.DescribeAccelerators(visibleNames) + ") in a container " +
			"that requests no accelerator, or a CDI annotation (cdi.k8s.io/*); vendors, device nodes and " +
			"variables are those of checks/hardware/accelerators.yaml. Pods of the accelerator stack are exempt: " +
			"the namespaces whose pods mount the kubelet's device-plugin or plugin-registration folder " +
			"(device plugins, DRA drivers, and what their operator runs beside them). A workload (a pod not " +
			"of a DaemonSet or a node's static pods) that is privileged or mounts device nodes fails; one " +
			"that names devices by variable or annotation (honoured or not, depending on the runtime's " +
			"settings) warns, as does a DaemonSet outside the stack that mounts device nodes or names them. " +
			"Privileged DaemonSets outside the stack (kube-proxy, a CNI agent) are node agents: named, not " +
			"counted against the requirement. No accelerator node makes it not applicable.",
		Remediation: "Give a workload its accelerators by requesting them (resources.limits of the accelerator, or a " +
			"ResourceClaim), never by privilege, a hostPath of /dev or a *_VISIBLE_DEVICES variable. With " +
			"the NVIDIA Container Toolkit, set accept-nvidia-visible-devices-envvar-when-unprivileged = " +
			"false and run the device plugin with DEVICE_LIST_STRATEGY=volume-mounts or cdi-cri, so that a " +
			"variable alone gives no device. Admission policy (Pod Security Standards baseline, or a " +
			"ValidatingAdmissionPolicy) keeps privileged and hostPath pods off accelerator nodes.",
	}
}

// pluginHostPaths are the kubelet folders a device plugin or a DRA driver
// mounts to register with it: their pods are the accelerator stack.
var pluginHostPaths = []string{"/var/lib/kubelet/device-plugins", "/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/plugins"}

// visibleNames names the vendors' device variables, as the description
// says them.
func visibleNames(a *hardware.Accelerators) string { return strings.Join(a.VisibleDevices(), ", ") }

// finding is one container's way to a device around a request.
type finding struct {
	pod       *cluster.NodePod
	container string
	how       string
	// strong ways (privilege, device nodes mounted) work whatever the
	// runtime's settings; a variable or an annotation depends on them.
	strong bool
}

// containerWays are the ways of one container, in the order found.
type containerWays struct {
	pod       *cluster.NodePod
	container string
	ways      []string
	strong    bool
}

func (c containerWays) String() string {
	return fmt.Sprintf("pod %s/%s container %s: %s", c.pod.Namespace, c.pod.Name, c.container, strings.Join(c.ways, ", and "))
}

// byContainer groups a pod's findings by container.
func byContainer(fs []finding) []*containerWays {
	var out []*containerWays
	for _, f := range fs {
		i := slices.IndexFunc(out, func(c *containerWays) bool { return c.container == f.container })
		if i < 0 {
			out = append(out, &containerWays{pod: f.pod, container: f.container})
			i = len(out) - 1
		}
		out[i].ways = append(out[i].ways, f.how)
		out[i].strong = out[i].strong || f.strong
	}
	return out
}

// containers counts containers with the verb that agrees: "1 container
// reaches", "2 containers reach".
func containers(n int, noun, one, many string) string {
	if n == 1 {
		return checks.Plural(n, noun) + " " + one
	}
	return checks.Plural(n, noun) + " " + many
}

// accelNode is an accelerator node and what its pods do, taken as its pods
// are read: the pods themselves are not kept, since a run reads those of
// every accelerator node.
type accelNode struct {
	name string
	// stack are the namespaces of its pods that register with the kubelet
	// (isStackPod).
	stack []string
	// pods are its pods not ended that request an accelerator or have a
	// way to a device around a request.
	pods []podWays
	err  error
}

// podWays is what the check judges of one pod.
type podWays struct {
	namespace, name string
	requests        bool
	// agent is a node agent's pod (nodeAgent).
	agent bool
	ways  []*containerWays
}

// Run implements checks.Check.
func (DeviceAccessMediated) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	nodes, dra, err := hardware.AcceleratorNodes(ctx, env, &r)
	if nodes == nil {
		return r, err
	}
	table, err := hardware.AcceleratorTable()
	if err != nil {
		return r, err
	}
	var accel []*accelNode
	resSet := map[corev1.ResourceName]bool{}
	var drivers []string
	for _, n := range nodes {
		for x := range hardware.AcceleratorResources(n) {
			resSet[x] = true
		}
		drivers = append(drivers, dra[n.Name]...)
		accel = append(accel, &accelNode{name: n.Name})
	}
	shownVars := deviceVariables(table, checks.SortedKeys(resSet), drivers)
	readPods(ctx, env, table, accel)

	stack := stackNamespaces(accel)
	var fails, warns, agents, byRequest []string
	flagged := map[string]bool{}
	for _, n := range accel {
		for _, p := range n.pods {
			if p.requests {
				byRequest = append(byRequest, p.namespace+"/"+p.name)
			}
			if stack[p.namespace] {
				continue
			}
			agent := p.agent
			for _, c := range p.ways {
				if agent && slices.Contains(c.ways, privileged) {
					// A node agent's privilege is how it does its job.
					agents = append(agents, p.namespace+"/"+p.name)
					c.ways = slices.DeleteFunc(c.ways, func(w string) bool { return w == privileged })
					if len(c.ways) == 0 {
						continue
					}
				}
				flagged[n.name] = true
				if agent || !c.strong {
					warns = append(warns, c.String())
				} else {
					fails = append(fails, c.String())
				}
			}
		}
	}
	agents = slices.Compact(agents)

	var shown []string
	for _, n := range accel {
		if flagged[n.name] && len(shown) < maxNodeEvidence {
			shown = append(shown, n.name)
		}
	}
	for _, n := range accel {
		if !flagged[n.name] && len(shown) < maxNodeEvidence {
			shown = append(shown, n.name)
		}
	}
	for i, name := range shown {
		note := ""
		if i == 0 {
			note = "each pod's owner, privilege, hostPath volumes, device variables and accelerator requests"
			if len(shown) < len(accel) {
				note += fmt.Sprintf("; %d of %d accelerator nodes shown, those with findings first", len(shown), len(accel))
			}
		}
		r.AddEvidence(ctx, env, podColumns(name, shownVars, checks.SortedKeys(resSet)), note)
	}
	for _, n := range accel {
		if n.err != nil {
			return r, fmt.Errorf("pods on node %s: %w", n.name, n.err)
		}
	}
	if len(stack) > 0 {
		r.Details = append(r.Details, "accelerator stack (pods that register with the kubelet as device plugins or "+
			"DRA drivers, and their namespaces' other pods, exempt): namespaces "+strings.Join(checks.SortedKeys(stack), ", "))
	}
	if len(agents) > 0 {
		r.Details = append(r.Details, fmt.Sprintf("privileged node agents (DaemonSet or static pods) outside the accelerator "+
			"stack, with every device of their node: %s", checks.CapLines(agents, 5, ", ")))
	}
	r.Details = append(r.Details, fails...)
	r.Details = append(r.Details, warns...)
	where := checks.Plural(len(accel), "accelerator node")
	switch {
	case len(fails) > 0:
		r.Finish(checks.Fail, "on %s, %s devices around a request: %s", where, containers(len(fails), "workload container", "reaches", "reach"), checks.CapLines(fails, 3, "; "))
	case len(warns) > 0:
		r.Finish(checks.Warn, "on %s, %s devices outside a request: %s", where, containers(len(warns), "container", "names or mounts", "name or mount"), checks.CapLines(warns, 3, "; "))
	default:
		r.Finish(checks.Pass, "on %s, no pod outside the accelerator stack reaches a device around a "+
			"request; %s with accelerators by request", where, checks.Plural(len(byRequest), "pod"))
	}
	return r, nil
}

// privileged is how a privileged container is described.
const privileged = "privileged, with every device of the node"

// deviceWays are a pod's ways to a device other than the accelerators its
// containers request, by the device nodes and variables a knows.
func deviceWays(a *hardware.Accelerators, p *cluster.NodePod) []finding {
	var devicePaths map[string]string // volume -> host path; made for the few pods that have one
	for _, v := range p.HostPaths {
		if a.IsDevicePath(v.Path) {
			if devicePaths == nil {
				devicePaths = map[string]string{}
			}
			devicePaths[v.Name] = v.Path
		}
	}
	var out []finding
	visible := a.VisibleDevices()
	for _, c := range slices.Concat(p.InitContainers, p.Containers) {
		if c.Privileged {
			out = append(out, finding{pod: p, container: c.Name, how: privileged, strong: true})
		}
		for _, m := range c.Mounts {
			if path, ok := devicePaths[m]; ok {
				out = append(out, finding{pod: p, container: c.Name, how: "mounts the host's " + path + " (hostPath volume " + m + ")", strong: true})
			}
		}
		if containerRequests(c) {
			continue
		}
		for _, e := range c.Devices {
			if slices.Contains(visible, e.Name) && !noDevices(e.Value) {
				out = append(out, finding{pod: p, container: c.Name, how: fmt.Sprintf("requests no accelerator but sets %s=%s", e.Name, e.Value)})
			}
		}
	}
	for _, an := range p.CDI {
		out = append(out, finding{pod: p, container: "*", how: fmt.Sprintf("names CDI devices by annotation %s: %s", an.Key, an.Value)})
	}
	return out
}

// noDevices is true for the values of a *_VISIBLE_DEVICES variable that
// ask for no device.
func noDevices(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "void", "none":
		return true
	}
	return false
}

// containerRequests is true when a container asks for an accelerator: an
// accelerator resource, or a DRA claim.
func containerRequests(c cluster.NodeContainer) bool {
	isAccelerator := func(a cluster.Amount) bool { return hardware.IsAccelerator(a.Name) }
	return c.Claims > 0 || slices.ContainsFunc(c.Limits, isAccelerator) || slices.ContainsFunc(c.Requests, isAccelerator)
}

func requestsAccelerator(p *cluster.NodePod) bool {
	return slices.ContainsFunc(p.Containers, containerRequests) || slices.ContainsFunc(p.InitContainers, containerRequests)
}

// nodeAgent is true for the pods a node runs as a node: a DaemonSet's, and
// the node's static pods (whose mirror pods the Node owns).
func nodeAgent(p *cluster.NodePod) bool {
	return slices.ContainsFunc(p.Owners, func(o cluster.PodOwner) bool { return o.Kind == "DaemonSet" || o.Kind == "Node" })
}

// stackNamespaces are the namespaces of the pods that register with a
// kubelet as device plugins or DRA drivers: the accelerator stack, which
// reaches devices directly by design (drivers, runtime hooks, exporters
// beside the plugin).
func stackNamespaces(accel []*accelNode) map[string]bool {
	out := map[string]bool{}
	for _, n := range accel {
		for _, ns := range n.stack {
			out[ns] = true
		}
	}
	return out
}

// isStackPod is true for a pod that mounts a kubelet folder of device
// plugins or DRA drivers.
func isStackPod(p *cluster.NodePod) bool {
	return slices.ContainsFunc(p.HostPaths, func(v cluster.HostPathVolume) bool {
		return slices.ContainsFunc(pluginHostPaths, func(prefix string) bool { return strings.HasPrefix(v.Path, prefix) })
	})
}

// deviceVariables are the device variables the evidence shows: those of
// the vendors of the nodes' resources and DRA drivers, every vendor's when
// none is known.
func deviceVariables(table *hardware.Accelerators, resources []corev1.ResourceName, drivers []string) []string {
	var vars []string
	known := false
	for _, res := range resources {
		if v := table.Vendor(res); v != nil {
			vars, known = append(vars, v.VisibleDevices...), true
		}
	}
	for _, d := range drivers {
		if v := table.DriverVendor(d); v != nil {
			vars, known = append(vars, v.VisibleDevices...), true
		}
	}
	if !known {
		vars = table.VisibleDevices()
	}
	slices.Sort(vars)
	return slices.Compact(vars)
}

// podColumns lists the pods of a node with what the check reads of them.
func podColumns(node string, vars []string, resources []corev1.ResourceName) cluster.Get {
	cols := []string{
		"NAMESPACE:.metadata.namespace", "NAME:.metadata.name", "OWNER:.metadata.ownerReferences[*].kind",
		"PRIVILEGED:.spec.containers[*].securityContext.privileged", "HOSTPATH:.spec.volumes[*].hostPath.path",
	}
	for _, v := range vars {
		cols = append(cols, fmt.Sprintf(`%s:.spec.containers[*].env[?(@.name==%q)].value`, v, v))
	}
	for _, res := range resources {
		short := strings.ToUpper(string(res[strings.LastIndex(string(res), "/")+1:]))
		cols = append(cols, short+":.spec.containers[*].resources.limits."+strings.ReplaceAll(string(res), ".", `\.`))
	}
	cols = append(cols, "CLAIMS:.spec.resourceClaims[*].name")
	g := hardware.PodsOnNode(node)
	g.Columns = strings.Join(cols, ",")
	return g
}

// readPods reads the pods of each node.
func readPods(ctx context.Context, env *checks.Env, table *hardware.Accelerators, accel []*accelNode) {
	names := make([]string, len(accel))
	for i, n := range accel {
		names[i] = n.name
	}
	hardware.EachNodePods(ctx, env, names, func(i int, pods []*cluster.NodePod, err error) {
		n := accel[i]
		n.err = err
		for _, p := range pods {
			// An ended pod of the stack still says its namespace is the
			// stack's; an ended pod reaches no device.
			if isStackPod(p) && !slices.Contains(n.stack, p.Namespace) {
				n.stack = append(n.stack, p.Namespace)
			}
			if p.Phase == corev1.PodSucceeded || p.Phase == corev1.PodFailed {
				continue
			}
			pw := podWays{namespace: p.Namespace, name: p.Name, requests: requestsAccelerator(p), ways: byContainer(deviceWays(table, p))}
			if pw.requests || len(pw.ways) > 0 {
				pw.agent = nodeAgent(p)
				n.pods = append(n.pods, pw)
			}
		}
	})
}
