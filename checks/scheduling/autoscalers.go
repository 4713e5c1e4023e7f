package scheduling

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

//go:embed autoscalers.yaml
var autoscalersYAML []byte

// autoscalerData is autoscalers.yaml: what identifies each autoscaler and
// what marks a node, or a node pool, as one with accelerators.
type autoscalerData struct {
	Karpenter struct {
		NodePools  string `yaml:"nodePools"`
		NodeClaims string `yaml:"nodeClaims"`
	} `yaml:"karpenter"`
	ClusterAutoscaler struct {
		// Namespace is where most installs run it, a hint: it writes its
		// status in its own --namespace, which is looked for in every one.
		Namespace       string `yaml:"namespace"`
		StatusConfigMap string `yaml:"statusConfigMap"`
	} `yaml:"clusterAutoscaler"`
	NodeGroupLabels []string `yaml:"nodeGroupLabels"`
	AcceleratorKeys []string `yaml:"acceleratorKeys"`
}

func loadAutoscalerData() (*autoscalerData, error) {
	d, err := checks.Data[autoscalerData]("autoscalers.yaml", autoscalersYAML)
	return &d, err
}

// caStaleAfter is how old cluster-autoscaler's status may be: it rewrites
// it on every loop (every 10 seconds by default), so a status minutes old
// is that of an autoscaler that stopped.
const caStaleAfter = 5 * time.Minute

// caUpdatedAnnotation is where cluster-autoscaler records when it last
// wrote its status ConfigMap.
const caUpdatedAnnotation = "cluster-autoscaler.kubernetes.io/last-updated"

// caStatus is the YAML status cluster-autoscaler writes (1.30 and later),
// the fields read here.
type caStatus struct {
	AutoscalerStatus string `json:"autoscalerStatus"`
	ClusterWide      struct {
		Health  caCondition `json:"health"`
		ScaleUp caCondition `json:"scaleUp"`
	} `json:"clusterWide"`
	NodeGroups []caNodeGroup `json:"nodeGroups"`
}

type caCondition struct {
	Status string `json:"status"`
}

type caNodeGroup struct {
	Name   string `json:"name"`
	Health struct {
		Status              string `json:"status"`
		CloudProviderTarget int    `json:"cloudProviderTarget"`
		MinSize             int    `json:"minSize"`
		MaxSize             int    `json:"maxSize"`
		NodeCounts          struct {
			Registered struct {
				Total int `json:"total"`
				Ready int `json:"ready"`
			} `json:"registered"`
		} `json:"nodeCounts"`
	} `json:"health"`
	ScaleUp struct {
		Status      string `json:"status"`
		BackoffInfo struct {
			ErrorCode    string `json:"errorCode"`
			ErrorMessage string `json:"errorMessage"`
		} `json:"backoffInfo"`
	} `json:"scaleUp"`
}

// caTextHealth reads the cluster-wide health of the text status older
// releases write ("Cluster-wide:\n  Health: Healthy (ready=...)").
var caTextHealth = regexp.MustCompile(`(?m)^Cluster-wide:\s*\n\s*Health:\s*(\w+)`)

// autoscalers is what the cluster runs to add nodes, as found by detect.
type autoscalers struct {
	data *autoscalerData
	// karpenter is set when Karpenter's CRDs are served.
	karpenter *karpenterState
	// ca is set when cluster-autoscaler's status ConfigMap exists.
	ca    *caState
	nodes []*corev1.Node
}

type karpenterState struct {
	pools, claims []*unstructured.Unstructured
}

type caState struct {
	cm *corev1.ConfigMap
	// status is nil for a status in the older text format.
	status *caStatus
}

// lookedFor says what detect searched, for a verdict that found nothing.
func (a *autoscalers) lookedFor() string {
	d := a.data
	return fmt.Sprintf("Karpenter (CRD %s) and cluster-autoscaler (its status ConfigMap %s, in any namespace)", d.Karpenter.NodePools, d.ClusterAutoscaler.StatusConfigMap)
}

func (a *autoscalers) none() bool { return a.karpenter == nil && a.ca == nil }

// detect finds the cluster's autoscalers, adding the reads that show them
// (or their absence) to r's evidence.
func detect(ctx context.Context, env *checks.Env, r *checks.Result) (*autoscalers, error) {
	d, err := loadAutoscalerData()
	if err != nil {
		return nil, err
	}
	a := &autoscalers{data: d}
	crds, err := checks.List[*apiextensionsv1.CustomResourceDefinition](ctx, env, cluster.Query{Resource: cluster.CRDs})
	if err != nil {
		return nil, fmt.Errorf("cannot tell whether Karpenter is installed: %w", err)
	}
	pools, claims := checks.FindCRD(crds, d.Karpenter.NodePools), checks.FindCRD(crds, d.Karpenter.NodeClaims)
	if pools == nil || claims == nil {
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.CRDs}, Names: []string{d.Karpenter.NodePools, d.Karpenter.NodeClaims}}, "Karpenter's API")
	} else {
		k := &karpenterState{}
		for _, c := range []struct {
			res  cluster.Resource
			into *[]*unstructured.Unstructured
		}{{checks.CRDResource(pools), &k.pools}, {checks.CRDResource(claims), &k.claims}} {
			r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{c.res}, AllNamespaces: c.res.Namespaced}, "")
			objs, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: c.res})
			if err != nil {
				return nil, err
			}
			for _, o := range objs {
				if _, ok := checks.ProbeRun(o.GetLabels(), o.GetNamespace()); !ok {
					*c.into = append(*c.into, o)
				}
			}
		}
		a.karpenter = k
	}
	// cluster-autoscaler writes its status in its own namespace, which its
	// installer chooses: the ConfigMap of that name in any namespace.
	q := cluster.Query{Resource: cluster.ConfigMaps}.Named(d.ClusterAutoscaler.StatusConfigMap)
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.ConfigMaps}, AllNamespaces: true, FieldSelector: q.FieldSelector}, "cluster-autoscaler's status, in whichever namespace it runs")
	cms, err := checks.List[*corev1.ConfigMap](ctx, env, q)
	if err != nil {
		return nil, err
	}
	if cm := statusConfigMap(cms, d.ClusterAutoscaler.Namespace); cm != nil {
		a.ca = &caState{cm: cm}
		var st caStatus
		if sigsyaml.Unmarshal([]byte(cm.Data["status"]), &st) == nil && (st.AutoscalerStatus != "" || len(st.NodeGroups) > 0) {
			a.ca.status = &st
		}
	}
	return a, nil
}

// statusConfigMap picks cluster-autoscaler's status among the ConfigMaps of
// its name: the one in the usual namespace, else the first by namespace,
// so that the same cluster gives the same pick.
func statusConfigMap(cms []*corev1.ConfigMap, usual string) *corev1.ConfigMap {
	var pick *corev1.ConfigMap
	for _, cm := range cms {
		switch {
		case cm.Namespace == usual:
			return cm
		case pick == nil || cm.Namespace < pick.Namespace:
			pick = cm
		}
	}
	return pick
}

// detectSome is detect for a check that has nothing to judge without an
// autoscaler: it returns nil, with r skipped and saying what was looked
// for, when there is none.
func detectSome(ctx context.Context, env *checks.Env, r *checks.Result) (*autoscalers, error) {
	a, err := detect(ctx, env, r)
	if err != nil {
		return nil, err
	}
	if a.none() {
		r.Finish(checks.Skip, "no cluster autoscaler found (looked for %s)", a.lookedFor())
		return nil, nil
	}
	return a, nil
}

// caHealth is cluster-autoscaler's own word on itself: "" when it reports
// itself running and healthy, else what is wrong.
func (c *caState) caHealth(now time.Time) string {
	if at, err := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", c.cm.Annotations[caUpdatedAnnotation]); err == nil && now.Sub(at) > caStaleAfter {
		return fmt.Sprintf("its status was last written %s ago (%s): cluster-autoscaler is not running", checks.Age(now.Sub(at)), at.UTC().Format(time.RFC3339))
	}
	if c.status == nil {
		m := caTextHealth.FindStringSubmatch(c.cm.Data["status"])
		switch {
		case m == nil:
			return "its status says no cluster-wide health"
		case m[1] != "Healthy":
			return "cluster-wide health " + m[1]
		}
		return ""
	}
	var out []string
	if s := c.status.AutoscalerStatus; s != "" && s != "Running" {
		out = append(out, "autoscalerStatus "+s)
	}
	if h := c.status.ClusterWide.Health.Status; h != "Healthy" {
		out = append(out, fmt.Sprintf("cluster-wide health %q", h))
	}
	return strings.Join(out, ", ")
}

// AutoscalerFound detects the cluster's node autoscaler and judges its
// health: the requirement applies only where there is one.
type AutoscalerFound struct{}

// Meta implements checks.Check.
func (AutoscalerFound) Meta() checks.Meta {
	return checks.Meta{
		ID: "autoscaler-found", Title: "A cluster autoscaler is found and healthy",
		Requirement: "cluster_autoscaling",
		Description: fmt.Sprintf("Looks for Karpenter (its NodePool and NodeClaim CRDs, then their objects, one LIST each) and "+
			"for cluster-autoscaler (its status ConfigMap cluster-autoscaler-status, read by name in every "+
			"namespace, since it writes it in its own --namespace; managed autoscalers of the clouds write "+
			"it too), as checks/scheduling/autoscalers.yaml names them. Neither found skips, saying what was "+
			"looked for: the requirement is then not applicable. Karpenter passes with every NodePool Ready "+
			"(Unknown is not Ready) and warns with none; cluster-autoscaler passes when its status says "+
			"Running and cluster-wide Healthy, and fails when it does not, or when it was last written more "+
			"than %s ago (the autoscaler rewrites it every loop).", caStaleAfter),
		Remediation: "For a NodePool not Ready, read its conditions (`kubectl describe nodepool`): its NodeClass is " +
			"missing or not Ready. For cluster-autoscaler, read its logs and its status ConfigMap (`kubectl " +
			"-n kube-system get configmap cluster-autoscaler-status -o yaml`).",
	}
}

// Run implements checks.Check.
func (AutoscalerFound) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	a, err := detectSome(ctx, env, &r)
	if a == nil {
		return r, err
	}
	var found, fails, warns []string
	if k := a.karpenter; k != nil {
		ready := 0
		for _, p := range k.pools {
			if missing := notTrue(p, []string{"Ready"}); len(missing) > 0 {
				fails = append(fails, "NodePool "+p.GetName()+": "+strings.Join(missing, "; "))
				continue
			}
			ready++
		}
		found = append(found, fmt.Sprintf("Karpenter, %s Ready of %d", checks.Plural(ready, "NodePool"), len(k.pools)))
		if len(k.pools) == 0 {
			warns = append(warns, "Karpenter has no NodePool: it adds no node")
		}
	}
	if c := a.ca; c != nil {
		if why := c.caHealth(env.Now()); why != "" {
			fails = append(fails, "cluster-autoscaler: "+why)
		}
		groups := "its status in the text format of releases before 1.30"
		if c.status != nil {
			groups = checks.Plural(len(c.status.NodeGroups), "node group")
		}
		found = append(found, "cluster-autoscaler, "+groups)
	}
	r.Details = append(fails, warns...)
	switch {
	case len(fails) > 0:
		r.Finish(checks.Fail, "%s: %s", strings.Join(found, "; "), fails[0])
	case len(warns) > 0:
		r.Finish(checks.Warn, "%s: %s", strings.Join(found, "; "), warns[0])
	default:
		r.Finish(checks.Pass, "%s", strings.Join(found, "; "))
	}
	return r, nil
}

// nodeGroup is one group of nodes an autoscaler can grow.
type nodeGroup struct {
	by, name string
	// accelerator names what makes it one of accelerator nodes; "" for
	// none, "?" when nothing tells (no node now, nothing in its spec).
	accelerator      string
	current, max     string
	atMax, unhealthy bool
	health           string
	// key is the group's own name (a NodePool's, a node group's), as its
	// nodes' labels carry it.
	key string
	// resource is the accelerator its nodes have and perNode how many of
	// it one node has, where a NodeClaim or a node of the group tells.
	resource corev1.ResourceName
	perNode  int64
}

// readNodes reads the nodes groups() tells accelerator groups by.
func (a *autoscalers) readNodes(ctx context.Context, env *checks.Env) error {
	var err error
	a.nodes, err = checks.List[*corev1.Node](ctx, env, cluster.Query{Resource: cluster.Nodes})
	return err
}

// groups lists the node groups of every autoscaler found; readNodes first.
func (a *autoscalers) groups() []nodeGroup {
	var out []nodeGroup
	if k := a.karpenter; k != nil {
		for _, p := range k.pools {
			g := nodeGroup{by: "Karpenter", name: "NodePool " + p.GetName(), key: p.GetName(), accelerator: a.poolAccelerator(p)}
			used, _, _ := unstructured.NestedStringMap(p.Object, "status", "resources")
			g.current = cmp.Or(used["nodes"], "0")
			g.max = "no limit"
			if limits, ok, _ := unstructured.NestedStringMap(p.Object, "spec", "limits"); ok {
				var ls []string
				for _, name := range checks.SortedKeys(limits) {
					ls = append(ls, name+"="+limits[name])
					if !g.atMax && limitReached(used[name], limits[name]) {
						// Any node it could add holds some of every
						// resource it limits, and would cross the limit.
						g.atMax = true
						g.health = fmt.Sprintf("at its limit of %s=%s (its nodes hold %s)", name, limits[name], cmp.Or(used[name], "0"))
					}
				}
				g.max = strings.Join(ls, ",")
			}
			g.resource, g.perNode = a.groupSize(g.key)
			if g.resource == "" {
				g.resource = limitedAccelerator(p)
			}
			out = append(out, g)
		}
	}
	if c := a.ca; c != nil && c.status != nil {
		for _, ng := range c.status.NodeGroups {
			h := ng.Health
			g := nodeGroup{by: "cluster-autoscaler", name: ng.Name, key: ng.Name, accelerator: a.groupAccelerator(ng.Name),
				current: fmt.Sprintf("%d (target %d)", h.NodeCounts.Registered.Total, h.CloudProviderTarget),
				max:     fmt.Sprintf("%d", h.MaxSize), atMax: h.CloudProviderTarget >= h.MaxSize, health: h.Status}
			if ng.ScaleUp.Status == "Backoff" {
				g.unhealthy = true
				g.health = strings.TrimSpace(fmt.Sprintf("scale-up in backoff: %s %s", ng.ScaleUp.BackoffInfo.ErrorCode, ng.ScaleUp.BackoffInfo.ErrorMessage))
			}
			g.resource, g.perNode = a.groupSize(g.key)
			out = append(out, g)
		}
	}
	return out
}

// limitReached says whether a NodePool's use of a resource has reached its
// limit; a quantity that does not parse reaches nothing.
func limitReached(used, limit string) bool {
	l, err := resource.ParseQuantity(limit)
	if err != nil {
		return false
	}
	u, err := resource.ParseQuantity(cmp.Or(used, "0"))
	return err == nil && u.Cmp(l) >= 0
}

// limitedAccelerator is the accelerator a NodePool limits, "" for none.
func limitedAccelerator(p *unstructured.Unstructured) corev1.ResourceName {
	limits, _, _ := unstructured.NestedStringMap(p.Object, "spec", "limits")
	for _, name := range checks.SortedKeys(limits) {
		if checks.IsAccelerator(corev1.ResourceName(name)) {
			return corev1.ResourceName(name)
		}
	}
	return ""
}

// groupSize finds the accelerator a group's nodes have and how many of it
// one node has: from its NodeClaims' capacity first, then from its nodes'
// allocatable.
func (a *autoscalers) groupSize(group string) (corev1.ResourceName, int64) {
	if k := a.karpenter; k != nil {
		for _, c := range k.claims {
			if c.GetLabels()["karpenter.sh/nodepool"] != group {
				continue
			}
			capacity, _, _ := unstructured.NestedStringMap(c.Object, "status", "capacity")
			for _, name := range checks.SortedKeys(capacity) {
				if q, err := resource.ParseQuantity(capacity[name]); err == nil && checks.IsAccelerator(corev1.ResourceName(name)) && q.Value() > 0 {
					return corev1.ResourceName(name), q.Value()
				}
			}
		}
	}
	for _, n := range a.nodes {
		if !a.inGroup(n, group) {
			continue
		}
		for _, name := range checks.SortedKeys(checks.AcceleratorResources(n)) {
			if q := n.Status.Allocatable[name]; q.Value() > 0 {
				return name, q.Value()
			}
		}
	}
	return "", 0
}

// inGroup says whether a node belongs to a group, by the group labels of
// autoscalers.yaml.
func (a *autoscalers) inGroup(n *corev1.Node, group string) bool {
	for _, l := range a.data.NodeGroupLabels {
		if n.Labels[l] == group {
			return true
		}
	}
	return false
}

// poolAccelerator says why a NodePool makes accelerator nodes: a
// requirement on an accelerator key, an accelerator limit, or a node or
// NodeClaim of it with accelerators.
func (a *autoscalers) poolAccelerator(p *unstructured.Unstructured) string {
	reqs, _, _ := unstructured.NestedSlice(p.Object, "spec", "template", "spec", "requirements")
	for _, q := range reqs {
		m, _ := q.(map[string]any)
		key, _ := m["key"].(string)
		if op, _ := m["operator"].(string); slices.Contains(a.data.AcceleratorKeys, key) && op != "DoesNotExist" && op != "NotIn" {
			return "requirement " + key
		}
	}
	if limits, _, _ := unstructured.NestedStringMap(p.Object, "spec", "limits"); limits != nil {
		for _, name := range checks.SortedKeys(limits) {
			if checks.IsAccelerator(corev1.ResourceName(name)) {
				return "limit " + name
			}
		}
	}
	for _, c := range a.karpenter.claims {
		if c.GetLabels()["karpenter.sh/nodepool"] == p.GetName() {
			if res := claimAccelerator(c); res != "" {
				return "NodeClaim " + c.GetName() + " has " + res
			}
		}
	}
	return a.groupAccelerator(p.GetName())
}

// groupAccelerator says whether the nodes of a group, known by the group
// labels of autoscalers.yaml, have accelerators: "?" when none is there.
func (a *autoscalers) groupAccelerator(group string) string {
	seen := false
	for _, n := range a.nodes {
		if !a.inGroup(n, group) {
			continue
		}
		seen = true
		var res []string
		for _, name := range checks.SortedKeys(checks.AcceleratorResources(n)) {
			res = append(res, string(name))
		}
		if len(res) > 0 {
			return "node " + n.Name + " has " + strings.Join(res, ", ")
		}
		for _, k := range a.data.AcceleratorKeys {
			if _, ok := n.Labels[k]; ok {
				return "node " + n.Name + " is labelled " + k
			}
		}
	}
	if seen {
		return ""
	}
	return "?"
}

// claimAccelerator names the accelerators a NodeClaim's node has, "" for
// none.
func claimAccelerator(c *unstructured.Unstructured) string {
	capacity, _, _ := unstructured.NestedStringMap(c.Object, "status", "capacity")
	var out []string
	for _, name := range checks.SortedKeys(capacity) {
		if checks.IsAccelerator(corev1.ResourceName(name)) && capacity[name] != "0" {
			out = append(out, name+": "+capacity[name])
		}
	}
	return strings.Join(out, ", ")
}
