package accelerators

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// draGroup is the Dynamic Resource Allocation API group; draVersion the
// version the checks read, GA since Kubernetes 1.34.
const (
	draGroup   = hardware.DRAGroup
	draVersion = hardware.DRAVersion
)

// draServed reads the aggregator's registrations of the DRA group: whether
// resource.k8s.io/v1 is served and Available, and what else is. why says
// what is wrong when it is not.
func draServed(ctx context.Context, env *checks.Env, r *checks.Result) (ok bool, why string, err error) {
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.APIServices}, Grep: cluster.GrepAny("NAME", draGroup)}, "")
	services, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: cluster.APIServices})
	if err != nil {
		return false, "", err
	}
	var others []string
	for _, s := range services {
		group, _, _ := unstructured.NestedString(s.Object, "spec", "group")
		version, _, _ := unstructured.NestedString(s.Object, "spec", "version")
		if group != draGroup {
			continue
		}
		if version != draVersion {
			others = append(others, version)
			continue
		}
		if c, found := kube.FindCondition(kube.Conditions(s), "Available"); !found || c.Status != "True" {
			return false, fmt.Sprintf("%s/%s is registered but not Available (%s %s)", draGroup, draVersion, c.Reason, c.Message), nil
		}
		return true, "", nil
	}
	slices.Sort(others)
	if len(others) > 0 {
		return false, fmt.Sprintf("%s/%s is not served, only %s: DRA is GA, and on by default, from Kubernetes 1.34", draGroup, draVersion, strings.Join(others, ", ")), nil
	}
	return false, fmt.Sprintf("the API server serves no version of %s: DRA is off (GA, and on by default, from Kubernetes 1.34)", draGroup), nil
}

// draSkipUnlessServed is draServed for the checks that have nothing to read
// without the API: r skips, pointing at dra-apis, when it is not served.
func draSkipUnlessServed(ctx context.Context, env *checks.Env, r *checks.Result) (bool, error) {
	ok, _, err := draServed(ctx, env, r)
	if err == nil && !ok {
		r.Finish(checks.Skip, "%s/%s is not served (see dra-apis)", draGroup, draVersion)
	}
	return ok, err
}

// DRAAPIs judges the DRA API itself: served, Available, with the four
// kinds a workload and a driver use.
type DRAAPIs struct{}

// Meta implements checks.Check.
func (DRAAPIs) Meta() checks.Meta {
	return checks.Meta{
		ID: "dra-apis", Title: "The DRA API is served (resource.k8s.io/v1)",
		Requirement: "dra_support",
		Description: "Lists the APIServices (the one LIST metrics-apis shares) and finds the API server's own " +
			"registration of resource.k8s.io/v1, which must be Available; then lists DeviceClasses, " +
			"ResourceSlices, ResourceClaims and ResourceClaimTemplates, which must each answer (one LIST " +
			"each, shared with the other DRA checks). Fails when v1 is not served (saying which versions " +
			"are), not Available, or one of the four kinds is missing.",
		Remediation: "DRA is on by default from Kubernetes 1.34; on 1.32–1.33 it needs the DynamicResourceAllocation " +
			"feature gate and the resource.k8s.io beta API enabled (--runtime-config). A managed cluster may " +
			"need a newer version or a setting of the provider.",
	}
}

// Run implements checks.Check.
func (DRAAPIs) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	ok, why, err := draServed(ctx, env, &r)
	if err != nil {
		return r, err
	}
	if !ok {
		r.Finish(checks.Fail, "%s", why)
		return r, nil
	}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.DeviceClasses}}, "")
	var missing []string
	for _, res := range []cluster.Resource{cluster.DeviceClasses, cluster.ResourceSlices, cluster.ResourceClaims, cluster.ResourceClaimTemplates} {
		if _, err := checks.List[any](ctx, env, cluster.Query{Resource: res}); apierrors.IsNotFound(err) {
			missing = append(missing, res.Kind)
		} else if err != nil {
			return r, err
		}
	}
	if len(missing) > 0 {
		r.Finish(checks.Fail, "%s/%s is served without %s", draGroup, draVersion, strings.Join(missing, ", "))
		return r, nil
	}
	r.Finish(checks.Pass, "%s/%s is served and Available, with DeviceClass, ResourceClaim, ResourceClaimTemplate and ResourceSlice", draGroup, draVersion)
	return r, nil
}

// publisher is what one driver publishes.
type publisher struct {
	driver  string
	nodes   []string // nodes of per-node pools
	shared  int      // pools for several nodes (node selector, all nodes)
	devices int
}

// DRADevices judges whether there is anything to allocate: a driver
// publishing devices, and a class a claim can name for them.
type DRADevices struct{}

// Meta implements checks.Check.
func (DRADevices) Meta() checks.Meta {
	return checks.Meta{
		ID: "dra-devices", Title: "A DRA driver publishes devices, and a DeviceClass selects them",
		Requirement: "dra_support",
		Description: "Lists the ResourceSlices and DeviceClasses and groups the devices by driver (named from " +
			"checks/hardware/dra_drivers.yaml: NVIDIA, AMD, Intel, Google...): on which nodes, how many. A " +
			"DeviceClass selects a driver when one of its CEL selectors compares device.driver with its " +
			"name; one with no such selector may select any. Passes when a driver publishes devices and a " +
			"DeviceClass selects them; warns when no class selects a driver that publishes; fails with no " +
			"ResourceSlice (no driver publishes: no claim can be allocated) or no DeviceClass. Accelerator " +
			"nodes (an accelerator resource in allocatable) that no accelerator driver publishes for are " +
			"named: their accelerators are requested by count, through the device plugin. Skips when " +
			"resource.k8s.io/v1 is not served (dra-apis says why).",
		Remediation: "Install the accelerator vendor's DRA driver (NVIDIA's k8s-dra-driver-gpu, AMD's or Intel's), " +
			"which publishes a ResourceSlice per node and installs DeviceClasses; `kubectl get " +
			"resourceslices -o yaml` shows what it publishes.",
	}
}

// Run implements checks.Check.
func (DRADevices) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	if ok, err := draSkipUnlessServed(ctx, env, &r); !ok {
		return r, err
	}
	drivers, err := hardware.DRADrivers()
	if err != nil {
		return r, err
	}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.ResourceSlices}}, "the devices each driver publishes, a slice per node and pool")
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.DeviceClasses}, Columns: "NAME:.metadata.name,SELECTORS:.spec.selectors[*].cel.expression"}, "what each class selects")
	rslices, err := checks.List[*resourcev1.ResourceSlice](ctx, env, cluster.Query{Resource: cluster.ResourceSlices})
	if err != nil {
		return r, err
	}
	classes, err := checks.List[*resourcev1.DeviceClass](ctx, env, cluster.Query{Resource: cluster.DeviceClasses})
	if err != nil {
		return r, err
	}
	pubs := publishers(rslices)
	selecting := hardware.ClassesByDriver(classes) // "" for classes of any driver
	var shown, unselected []string
	if len(pubs) > 0 {
		r.Table = &checks.Table{Header: []string{"DRIVER", "NODES", "DEVICES", "DEVICECLASSES"}}
	}
	published := map[string]bool{} // nodes an accelerator driver publishes for
	for _, p := range pubs {
		where := checks.Plural(len(p.nodes), "node")
		if p.shared > 0 {
			where += fmt.Sprintf(" and %s for several nodes", checks.Plural(p.shared, "pool"))
		}
		cls := append(slices.Clone(selecting[p.driver]), selecting[""]...)
		r.Table.Rows = append(r.Table.Rows, []string{hardware.DescribeDriver(drivers, p.driver), where, fmt.Sprint(p.devices), cmp.Or(strings.Join(cls, ", "), "none")})
		if hardware.IsAcceleratorDriver(drivers, p.driver) {
			for _, n := range p.nodes {
				published[n] = true
			}
		}
		if p.devices == 0 {
			continue
		}
		if len(cls) == 0 {
			unselected = append(unselected, hardware.DescribeDriver(drivers, p.driver))
			continue
		}
		shown = append(shown, fmt.Sprintf("%s publishes %s on %s; DeviceClass %s selects them", hardware.DescribeDriver(drivers, p.driver), checks.Plural(p.devices, "device"), where, strings.Join(cls, ", ")))
	}
	// The nodes only add a detail: a verdict on what drivers publish
	// does not wait for them.
	nodes, err := checks.List[*corev1.Node](ctx, env, cluster.Query{Resource: cluster.Nodes})
	if err != nil {
		msg := err.Error()
		var st apierrors.APIStatus
		if errors.As(err, &st) {
			// The server's words, the same live and replayed.
			msg = st.Status().Message
		}
		r.Details = append(r.Details, "cannot tell which accelerator nodes no DRA driver publishes for: "+msg)
	}
	var byCount []string
	for _, n := range nodes {
		if len(hardware.AcceleratorResources(n)) > 0 && !published[n.Name] {
			byCount = append(byCount, n.Name)
		}
	}
	slices.Sort(byCount)
	if len(byCount) > 0 {
		r.Details = append(r.Details, fmt.Sprintf("%s with accelerators that no accelerator DRA driver publishes for "+
			"(requested by count, through the device plugin): %s", checks.Plural(len(byCount), "node"), checks.CapLines(byCount, 5, ", ")))
	}
	switch {
	case len(rslices) == 0:
		r.Finish(checks.Fail, "no DRA driver publishes devices (no ResourceSlice): no ResourceClaim can be allocated")
	case len(classes) == 0:
		var names []string
		for _, p := range pubs {
			names = append(names, hardware.DescribeDriver(drivers, p.driver))
		}
		r.Finish(checks.Fail, "devices are published (%s), but there is no DeviceClass: a claim requests devices of a class", strings.Join(names, ", "))
	case len(shown) == 0 && len(unselected) > 0:
		r.Finish(checks.Warn, "no DeviceClass selects the devices of %s", strings.Join(unselected, ", "))
	case len(shown) == 0:
		r.Finish(checks.Fail, "the ResourceSlices publish no device")
	default:
		r.Finish(checks.Pass, "%s", checks.CapLines(shown, 3, "; "))
	}
	return r, nil
}

// publishers sums the slices by driver, in driver order.
func publishers(rslices []*resourcev1.ResourceSlice) []*publisher {
	by := map[string]*publisher{}
	for _, s := range rslices {
		p := by[s.Spec.Driver]
		if p == nil {
			p = &publisher{driver: s.Spec.Driver}
			by[s.Spec.Driver] = p
		}
		p.devices += len(s.Spec.Devices)
		switch {
		case s.Spec.NodeName != nil && *s.Spec.NodeName != "":
			if !slices.Contains(p.nodes, *s.Spec.NodeName) {
				p.nodes = append(p.nodes, *s.Spec.NodeName)
			}
		default:
			p.shared++
		}
	}
	var out []*publisher
	for _, d := range checks.SortedKeys(by) {
		slices.Sort(by[d].nodes)
		out = append(out, by[d])
	}
	return out
}

// DRAClaimsAllocated looks for the cluster's own claims that a scheduler
// allocated: DRA at work on its workloads.
type DRAClaimsAllocated struct{}

// Meta implements checks.Check.
func (DRAClaimsAllocated) Meta() checks.Meta {
	return checks.Meta{
		ID: "dra-claims-allocated", Title: "ResourceClaims of the cluster's own are allocated",
		Requirement: "dra_support",
		Description: "Lists the ResourceClaims of every namespace but probe namespaces and reads their status: the " +
			"devices allocated (driver, pool, device), the node the allocation binds to, and the pods it is " +
			"reserved for. A claim allocated from a pool that no ResourceSlice publishes now (its driver was " +
			"removed) is named but not counted. Passes with an allocated claim, naming it; skips with none: " +
			"DRA is then not shown at work by the cluster's own workloads. Claims waiting for allocation are " +
			"counted.",
		Remediation: "Nothing allocated is not a fault: a workload asks for a device with a ResourceClaimTemplate (or " +
			"a ResourceClaim) on a DeviceClass, and the scheduler allocates it when the pod is scheduled.",
	}
}

// Run implements checks.Check.
func (DRAClaimsAllocated) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	if ok, err := draSkipUnlessServed(ctx, env, &r); !ok {
		return r, err
	}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.ResourceClaims}, AllNamespaces: true}, "")
	claims, err := checks.List[*resourcev1.ResourceClaim](ctx, env, cluster.Query{Resource: cluster.ResourceClaims})
	if err != nil {
		return r, err
	}
	rslices, err := checks.List[*resourcev1.ResourceSlice](ctx, env, cluster.Query{Resource: cluster.ResourceSlices})
	if err != nil {
		return r, err
	}
	pools := map[string]bool{} // driver/pool published now
	for _, sl := range rslices {
		pools[sl.Spec.Driver+"/"+sl.Spec.Pool.Name] = true
	}
	var allocated, stale []string
	pending := 0
	for _, c := range claims {
		if _, ok := checks.ProbeRun(c.Labels, c.Namespace); ok {
			continue
		}
		if c.Status.Allocation == nil {
			pending++
			continue
		}
		if gone := unpublished(c.Status.Allocation, pools); gone != "" {
			// Allocated once, by a driver that publishes no such
			// device now: history, not DRA at work.
			stale = append(stale, fmt.Sprintf("%s/%s was allocated from %s, which no ResourceSlice publishes now", c.Namespace, c.Name, gone))
			continue
		}
		allocated = append(allocated, describeAllocation(c))
	}
	if pending > 0 {
		r.Details = append(r.Details, checks.Plural(pending, "claim")+" not allocated yet")
	}
	r.Details = append(r.Details, stale...)
	if len(allocated) == 0 {
		r.Finish(checks.Skip, "no ResourceClaim of the cluster's own is allocated a published device (%d "+
			"waiting, %d from pools no longer published): nothing of the cluster's own shows DRA at work", pending, len(stale))
		return r, nil
	}
	r.Details = append(allocated, r.Details...)
	r.Finish(checks.Pass, "%s allocated: %s", checks.Plural(len(allocated), "claim"), checks.CapLines(allocated, 2, "; "))
	return r, nil
}

// unpublished names the first pool of an allocation that no slice
// publishes, "" when all are.
func unpublished(a *resourcev1.AllocationResult, pools map[string]bool) string {
	for _, d := range a.Devices.Results {
		if !pools[d.Driver+"/"+d.Pool] {
			return fmt.Sprintf("pool %s of driver %s", d.Pool, d.Driver)
		}
	}
	return ""
}

// describeAllocation says what a claim got, where, for whom.
func describeAllocation(c *resourcev1.ResourceClaim) string {
	a := c.Status.Allocation
	var devs []string
	for _, d := range a.Devices.Results {
		devs = append(devs, fmt.Sprintf("%s %s/%s", d.Driver, d.Pool, d.Device))
	}
	s := fmt.Sprintf("%s/%s: %s", c.Namespace, c.Name, strings.Join(devs, ", "))
	if node := allocatedNode(a); node != "" {
		s += " on node " + node
	}
	var pods []string
	for _, ref := range c.Status.ReservedFor {
		pods = append(pods, strings.ToLower(ref.Resource)+"/"+ref.Name)
	}
	if len(pods) > 0 {
		s += ", reserved for " + strings.Join(pods, ", ")
	}
	return s
}

// allocatedNode is the node an allocation binds to, when its node selector
// names one (as the scheduler writes it for devices of one node).
func allocatedNode(a *resourcev1.AllocationResult) string {
	if a.NodeSelector == nil {
		return ""
	}
	for _, t := range a.NodeSelector.NodeSelectorTerms {
		for _, f := range t.MatchFields {
			if f.Key == "metadata.name" && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}
