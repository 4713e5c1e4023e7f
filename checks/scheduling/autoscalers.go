package scheduling

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

//go:embed autoscalers.yaml
var autoscalersYAML []byte

var _ = checks.RegisterData[autoscalerData]("autoscalers.yaml", autoscalersYAML)

// autoscalerData is autoscalers.yaml: what identifies each autoscaler and
// what marks a node, or a node pool, as one with accelerators.
type autoscalerData struct {
	Karpenter struct {
		NodePools  string `yaml:"nodePools"`
		NodeClaims string `yaml:"nodeClaims"`
		// Providers name whose Karpenter it is, by the group of the
		// NodeClass a NodePool refers to.
		Providers map[string]string `yaml:"providers"`
		// Outside are the NodeClass groups of platforms that run
		// Karpenter's controller outside the cluster.
		Outside []string `yaml:"outside"`
	} `yaml:"karpenter"`
	ClusterAutoscaler struct {
		// Namespace is where most installs run it, a hint: it writes its
		// status in its own --namespace, which is looked for in every one.
		Namespace       string `yaml:"namespace"`
		StatusConfigMap string `yaml:"statusConfigMap"`
		Deployment      struct {
			LabelKeys  []string `yaml:"labelKeys"`
			NameSuffix string   `yaml:"nameSuffix"`
		} `yaml:"deployment"`
		GroupNodeNames []struct {
			Match      string `yaml:"match"`
			NodePrefix string `yaml:"nodePrefix"`
		} `yaml:"groupNodeNames"`
	} `yaml:"clusterAutoscaler"`
	NodeGroupKinds  []nodeGroupKind `yaml:"nodeGroupKinds"`
	NodeGroupLabels []string        `yaml:"nodeGroupLabels"`
	AcceleratorKeys []string        `yaml:"acceleratorKeys"`
}

// nodeGroupKind is a kind of object that is a node group an autoscaler
// grows: how its bounds, its size, its accelerators and its nodes are
// read. Field paths are dotted, a segment ending in [] for each item of a
// list.
type nodeGroupKind struct {
	// Name is the solution's, for the evidence ("Cluster API").
	Name string `yaml:"name"`
	CRD  string `yaml:"crd"`
	// Min and Max bound a group: an annotation of it, else a field.
	Min bound `yaml:"min"`
	Max bound `yaml:"max"`
	// SizedBy are objects that bound the group they target, in their
	// namespace, where the group carries no bounds of its own.
	SizedBy *struct {
		CRD    string `yaml:"crd"`
		Min    string `yaml:"min"`
		Max    string `yaml:"max"`
		Target string `yaml:"target"`
	} `yaml:"sizedBy"`
	// Replicas is the field of the group's size now.
	Replicas string `yaml:"replicas"`
	// AutoCreate is a boolean field: true, the group's nodes are created on
	// demand up to limits the cluster does not show (Outside says whose).
	AutoCreate string `yaml:"autoCreate"`
	Outside    string `yaml:"outside"`
	// Runner is the autoscaler that acts on the bounds, and must run:
	// "cluster-autoscaler" or none.
	Runner string `yaml:"runner"`
	// Needs are CRDs of which an object must exist for the platform to
	// run the autoscaler (OpenShift's ClusterAutoscaler).
	Needs []string `yaml:"needs"`
	// CANamed: cluster-autoscaler names the group Kind/namespace/name in
	// its status and events (its clusterapi provider).
	CANamed     bool `yaml:"caNamed"`
	Accelerator struct {
		// CountAnnotations hold how many accelerators a new node has,
		// of the resource TypeAnnotation names.
		CountAnnotations []string `yaml:"countAnnotations"`
		TypeAnnotation   string   `yaml:"typeAnnotation"`
		// LabelsAnnotation ("k=v,k=v") and LabelFields (maps) are the
		// labels a new node gets, tested against acceleratorKeys.
		LabelsAnnotation string   `yaml:"labelsAnnotation"`
		LabelFields      []string `yaml:"labelFields"`
		// Fields name an accelerator when set.
		Fields []string `yaml:"fields"`
	} `yaml:"accelerator"`
	// Nodes says which nodes are the group's: those labelled Label with
	// its name, those its members (objects labelled GroupLabel with its
	// name) name, or those its NodeNames field lists.
	Nodes struct {
		Label   string `yaml:"label"`
		Members *struct {
			CRD        string `yaml:"crd"`
			GroupLabel string `yaml:"groupLabel"`
			NodeName   string `yaml:"nodeName"`
		} `yaml:"members"`
		NodeNames string `yaml:"nodeNames"`
	} `yaml:"nodes"`
}

// bound is where a node group's minimum or maximum is written.
type bound struct {
	Annotation string `yaml:"annotation"`
	Field      string `yaml:"field"`
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
	ca *caState
	// caDeployments are cluster-autoscaler's Deployments, in any
	// namespace.
	caDeployments []*cluster.Workload
	// kinds are the node-group kinds whose CRD the cluster serves.
	kinds []*kindState
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

// kindState is what the cluster holds of one node-group kind.
type kindState struct {
	kind *nodeGroupKind
	res  cluster.Resource
	// objs are the kind's objects; members, sizers and needs those of
	// the kinds it names, by CRD for needs.
	objs, members, sizers []*unstructured.Unstructured
	needs                 map[string]int
}

// lookedFor says what detect searched, for a verdict that found nothing.
func (a *autoscalers) lookedFor() string {
	d := a.data
	var kinds []string
	for _, k := range d.NodeGroupKinds {
		kinds = append(kinds, k.CRD)
	}
	return fmt.Sprintf("Karpenter (CRD %s), cluster-autoscaler (its status ConfigMap %s, in any "+
		"namespace, and its Deployment, by its pod labels) and node groups of %s",
		d.Karpenter.NodePools, d.ClusterAutoscaler.StatusConfigMap, strings.Join(kinds, ", "))
}

func (a *autoscalers) none() bool {
	if a.karpenter != nil || a.ca != nil || len(a.caDeployments) > 0 {
		return false
	}
	for _, k := range a.kinds {
		for _, n := range k.needs {
			if n > 0 {
				return false
			}
		}
		for _, o := range k.objs {
			if k.sized(o).grows() {
				return false
			}
		}
	}
	return true
}

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
	// objects lists a kind's objects, leaving out a probe's.
	objects := func(crd *apiextensionsv1.CustomResourceDefinition, note string) ([]*unstructured.Unstructured, error) {
		res := kube.CRDResource(crd)
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{res}, AllNamespaces: res.Namespaced}, note)
		objs, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: res})
		if err != nil {
			return nil, err
		}
		var out []*unstructured.Unstructured
		for _, o := range objs {
			if _, ok := checks.ProbeRun(o.GetLabels(), o.GetNamespace()); !ok {
				out = append(out, o)
			}
		}
		return out, nil
	}
	pools, claims := kube.FindCRD(crds, d.Karpenter.NodePools), kube.FindCRD(crds, d.Karpenter.NodeClaims)
	if pools == nil || claims == nil {
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.CRDs}, Names: []string{d.Karpenter.NodePools, d.Karpenter.NodeClaims}}, "Karpenter's API")
	} else {
		k := &karpenterState{}
		if k.pools, err = objects(pools, ""); err != nil {
			return nil, err
		}
		if k.claims, err = objects(claims, ""); err != nil {
			return nil, err
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
	// Without its status (--write-status-configmap=false, or a status
	// elsewhere), its Deployment, wherever it was installed, known by its
	// pods' labels. Where the status is here, it says more, and whether it
	// runs.
	if a.ca == nil {
		deps, _, err := env.Cluster.Workloads(ctx, cluster.Deployments)
		if err != nil {
			return nil, err
		}
		for _, dep := range deps {
			if d.isClusterAutoscaler(dep) {
				a.caDeployments = append(a.caDeployments, dep)
				r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Deployments}, Namespace: dep.Namespace, Names: []string{dep.Name}, Wide: true},
					"cluster-autoscaler's Deployment, found by its pods' labels")
			}
		}
	}
	// Node groups held as objects: Cluster API's, OpenShift's, GKE's.
	var absent []string
	for i := range d.NodeGroupKinds {
		kind := &d.NodeGroupKinds[i]
		crd := kube.FindCRD(crds, kind.CRD)
		if crd == nil {
			absent = append(absent, kind.CRD)
			continue
		}
		k := &kindState{kind: kind, res: kube.CRDResource(crd), needs: map[string]int{}}
		if k.objs, err = objects(crd, kind.Name+"'s node groups"); err != nil {
			return nil, err
		}
		for _, need := range kind.Needs {
			if c := kube.FindCRD(crds, need); c != nil {
				objs, err := objects(c, "")
				if err != nil {
					return nil, err
				}
				k.needs[need] = len(objs)
			}
		}
		if s := kind.SizedBy; s != nil {
			if c := kube.FindCRD(crds, s.CRD); c != nil {
				if k.sizers, err = objects(c, "what bounds them"); err != nil {
					return nil, err
				}
			}
		}
		if m := kind.Nodes.Members; m != nil && len(k.objs) > 0 {
			if c := kube.FindCRD(crds, m.CRD); c != nil {
				if k.members, err = objects(c, "their machines and the nodes they made"); err != nil {
					return nil, err
				}
			}
		}
		a.kinds = append(a.kinds, k)
	}
	if len(absent) > 0 {
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.CRDs}, Names: absent}, "node groups held as objects (Cluster API, OpenShift, GKE)")
	}
	return a, nil
}

// isClusterAutoscaler tells cluster-autoscaler's Deployment by its pod
// template's labels, never by its namespace or name. (Its image is not
// read: the shared cache keeps of a Deployment listed across the cluster
// its template's labels alone.)
func (d *autoscalerData) isClusterAutoscaler(dep *cluster.Workload) bool {
	suffix := d.ClusterAutoscaler.Deployment.NameSuffix
	for _, k := range d.ClusterAutoscaler.Deployment.LabelKeys {
		if v := dep.TemplateLabels[k]; v != "" && strings.HasSuffix(v, suffix) {
			return true
		}
	}
	return false
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
		return fmt.Sprintf("its status was last written %s ago (%s): cluster-autoscaler is not running", kube.Age(now.Sub(at)), at.UTC().Format(time.RFC3339))
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
		Description: fmt.Sprintf("Looks, as checks/scheduling/autoscalers.yaml names them, for Karpenter (its NodePool and "+
			"NodeClaim CRDs, then their objects, one LIST each; whose Karpenter it is, EKS Auto Mode's or AKS node "+
			"auto-provisioning's, by the group of the NodeClass its NodePools name); for cluster-autoscaler (its "+
			"status ConfigMap cluster-autoscaler-status, read by name in every namespace, since it writes it in "+
			"its own --namespace; managed autoscalers of the clouds write it too; and its Deployment, in any "+
			"namespace, by its pod-template labels); and for node groups held as objects: Cluster API's "+
			"MachineDeployments and MachinePools with cluster-autoscaler's min/max size annotations, OpenShift's "+
			"MachineSets bounded by those annotations or by a MachineAutoscaler, GKE's ComputeClasses with node "+
			"pool auto-creation. None found skips, saying what was looked for: the requirement is then not "+
			"applicable. Karpenter passes with every NodePool Ready (Unknown is not Ready) and warns with none; "+
			"cluster-autoscaler passes when its status says Running and cluster-wide Healthy, and fails when it "+
			"does not, when it was last written more than %s ago (the autoscaler rewrites it every loop), or "+
			"when its Deployment has no available replica. Cluster API node groups with nothing in the cluster "+
			"running cluster-autoscaler warn (it may run in a management cluster); OpenShift's with no "+
			"ClusterAutoscaler fail (the operator then runs none). What a managed platform keeps outside the "+
			"cluster (GKE's limits, EKS Auto Mode's and AKS's Karpenter controller) is named as not seen.", caStaleAfter),
		Remediation: "For a NodePool not Ready, read its conditions (`kubectl describe nodepool`): its NodeClass is " +
			"missing or not Ready. For cluster-autoscaler, read its logs and its status ConfigMap (`kubectl " +
			"-n kube-system get configmap cluster-autoscaler-status -o yaml`); on OpenShift, create the " +
			"ClusterAutoscaler `default`; with Cluster API, run cluster-autoscaler with --cloud-provider=clusterapi " +
			"where it can read the MachineDeployments.",
	}
}

// Run implements checks.Check.
func (AutoscalerFound) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	a, err := detectSome(ctx, env, &r)
	if a == nil {
		return r, err
	}
	var found, fails, warns, outside []string
	if k := a.karpenter; k != nil {
		ready := 0
		for _, p := range k.pools {
			if missing := notTrue(p, []string{"Ready"}); len(missing) > 0 {
				fails = append(fails, "NodePool "+p.GetName()+": "+strings.Join(missing, "; "))
				continue
			}
			ready++
		}
		found = append(found, fmt.Sprintf("%s, %s Ready of %d", a.karpenterName(), checks.Plural(ready, "NodePool"), len(k.pools)))
		if len(k.pools) == 0 {
			warns = append(warns, "Karpenter has no NodePool: it adds no node")
		}
		if name := a.karpenterOutside(); name != "" {
			outside = append(outside, name+": the platform runs Karpenter's controller outside the cluster, not seen "+
				"here; judged by its NodePools' conditions and NodeClaims")
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
	for _, dep := range a.caDeployments {
		found = append(found, fmt.Sprintf("cluster-autoscaler Deployment %s/%s (%d of %d available)", dep.Namespace, dep.Name, dep.Available, dep.Replicas))
		if dep.Available == 0 && dep.Replicas > 0 {
			fails = append(fails, fmt.Sprintf("cluster-autoscaler Deployment %s/%s has no available replica", dep.Namespace, dep.Name))
		}
	}
	for _, k := range a.kinds {
		n := 0
		for _, o := range k.objs {
			if k.sized(o).grows() {
				n++
			}
		}
		if n == 0 {
			// The platform's autoscaler is set up, and bounds no group.
			for _, need := range k.kind.Needs {
				if k.needs[need] > 0 {
					found = append(found, fmt.Sprintf("%s, %s", k.kind.Name, checks.Plural(k.needs[need], need+" object")))
					warns = append(warns, fmt.Sprintf("%s: no %s is bounded for the autoscaler: it grows none", k.kind.Name, k.res.Kind))
					break
				}
			}
			continue
		}
		found = append(found, fmt.Sprintf("%s, %s an autoscaler grows", k.kind.Name, checks.Plural(n, k.res.Kind)))
		if k.kind.Runner == "cluster-autoscaler" && a.ca == nil && len(a.caDeployments) == 0 {
			warns = append(warns, fmt.Sprintf("nothing in this cluster runs cluster-autoscaler, which grows %s's %ss: it "+
				"may run in another cluster (a management cluster), which this audit does not read", k.kind.Name, k.res.Kind))
		}
		for _, need := range k.kind.Needs {
			if k.needs[need] == 0 {
				fails = append(fails, fmt.Sprintf("%s: no %s object: the platform runs no autoscaler for its %ss' bounds", k.kind.Name, need, k.res.Kind))
			}
		}
		if k.kind.Outside != "" {
			outside = append(outside, k.kind.Name+": "+k.kind.Outside+", not seen here")
		}
	}
	r.Details = append(append(fails, warns...), outside...)
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
	// caName is what cluster-autoscaler calls the group in its status
	// and events, "" when it does not grow it.
	caName string
	// outside says what the cluster does not show of a group whose
	// limits a managed autoscaler keeps.
	outside string
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
			g := nodeGroup{by: a.karpenterBy(p), name: "NodePool " + p.GetName(), key: p.GetName(), accelerator: a.poolAccelerator(p)}
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
	for _, k := range a.kinds {
		out = append(out, a.kindGroups(k)...)
	}
	if c := a.ca; c != nil && c.status != nil {
		for _, ng := range c.status.NodeGroups {
			h := ng.Health
			// A group held as an object is that row, with the health
			// cluster-autoscaler gives it.
			i := slices.IndexFunc(out, func(g nodeGroup) bool { return g.caName != "" && g.caName == ng.Name })
			if i < 0 {
				nodes := a.caGroupNodes(ng.Name)
				g := nodeGroup{by: "cluster-autoscaler", name: ng.Name, key: ng.Name, caName: ng.Name, accelerator: a.nodesAccelerator(nodes),
					current: fmt.Sprintf("%d (target %d)", h.NodeCounts.Registered.Total, h.CloudProviderTarget),
					max:     fmt.Sprintf("%d", h.MaxSize), atMax: h.CloudProviderTarget >= h.MaxSize, health: h.Status}
				g.resource, g.perNode = nodesSize(nodes)
				out = append(out, g)
				i = len(out) - 1
			} else if out[i].health == "" {
				out[i].health = h.Status
			}
			if ng.ScaleUp.Status == "Backoff" {
				out[i].unhealthy = true
				out[i].health = strings.TrimSpace(fmt.Sprintf("scale-up in backoff: %s %s", ng.ScaleUp.BackoffInfo.ErrorCode, ng.ScaleUp.BackoffInfo.ErrorMessage))
			}
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
		if hardware.IsAccelerator(corev1.ResourceName(name)) {
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
				if q, err := resource.ParseQuantity(capacity[name]); err == nil && hardware.IsAccelerator(corev1.ResourceName(name)) && q.Value() > 0 {
					return corev1.ResourceName(name), q.Value()
				}
			}
		}
	}
	return nodesSize(a.labelledNodes(group))
}

// nodesSize is the accelerator the first of nodes that has one has, and
// how many of it.
func nodesSize(nodes []*corev1.Node) (corev1.ResourceName, int64) {
	for _, n := range nodes {
		for _, name := range checks.SortedKeys(hardware.AcceleratorResources(n)) {
			if q := n.Status.Allocatable[name]; q.Value() > 0 {
				return name, q.Value()
			}
		}
	}
	return "", 0
}

// labelledNodes are the nodes of a group, by the group labels of
// autoscalers.yaml.
func (a *autoscalers) labelledNodes(group string) []*corev1.Node {
	var out []*corev1.Node
	for _, n := range a.nodes {
		for _, l := range a.data.NodeGroupLabels {
			if n.Labels[l] == group {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// caGroupNodes are the nodes of a group of cluster-autoscaler's status:
// by the group labels, else by the node names its cloud gives them.
func (a *autoscalers) caGroupNodes(group string) []*corev1.Node {
	if nodes := a.labelledNodes(group); len(nodes) > 0 {
		return nodes
	}
	for _, rule := range a.data.ClusterAutoscaler.GroupNodeNames {
		re, err := regexp.Compile(rule.Match)
		if err != nil {
			continue
		}
		m := re.FindStringSubmatchIndex(group)
		if m == nil {
			continue
		}
		prefix := string(re.ExpandString(nil, rule.NodePrefix, group, m))
		var out []*corev1.Node
		for _, n := range a.nodes {
			if strings.HasPrefix(n.Name, prefix) {
				out = append(out, n)
			}
		}
		return out
	}
	return nil
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
			if hardware.IsAccelerator(corev1.ResourceName(name)) {
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
	return a.nodesAccelerator(a.labelledNodes(group))
}

// nodesAccelerator says whether a group's nodes have accelerators: the
// first that has (resources, or a label only accelerator nodes carry), ""
// when none has, "?" when there is no node.
func (a *autoscalers) nodesAccelerator(nodes []*corev1.Node) string {
	for _, n := range nodes {
		var res []string
		for _, name := range checks.SortedKeys(hardware.AcceleratorResources(n)) {
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
	if len(nodes) == 0 {
		return "?"
	}
	return ""
}

// claimAccelerator names the accelerators a NodeClaim's node has, "" for
// none.
func claimAccelerator(c *unstructured.Unstructured) string {
	capacity, _, _ := unstructured.NestedStringMap(c.Object, "status", "capacity")
	var out []string
	for _, name := range checks.SortedKeys(capacity) {
		if hardware.IsAccelerator(corev1.ResourceName(name)) && capacity[name] != "0" {
			out = append(out, name+": "+capacity[name])
		}
	}
	return strings.Join(out, ", ")
}

// caNamedKinds says whether the cluster holds node groups that
// cluster-autoscaler names Kind/namespace/name.
func (a *autoscalers) caNamedKinds() bool {
	for _, k := range a.kinds {
		if k.kind.CANamed && len(k.objs) > 0 {
			return true
		}
	}
	return false
}

// karpenterBy names whose Karpenter grows a NodePool, by the group of the
// NodeClass it refers to.
func (a *autoscalers) karpenterBy(p *unstructured.Unstructured) string {
	group, _, _ := unstructured.NestedString(p.Object, "spec", "template", "spec", "nodeClassRef", "group")
	if name := a.data.Karpenter.Providers[group]; name != "" {
		return "Karpenter (" + name + ")"
	}
	return "Karpenter"
}

// karpenterOutside names the platforms among the NodePools' that run
// Karpenter outside the cluster, "" for none.
func (a *autoscalers) karpenterOutside() string {
	var out []string
	for _, p := range a.karpenter.pools {
		group, _, _ := unstructured.NestedString(p.Object, "spec", "template", "spec", "nodeClassRef", "group")
		if name := a.data.Karpenter.Providers[group]; slices.Contains(a.data.Karpenter.Outside, group) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// karpenterName names the Karpenter of the cluster's NodePools: whose it
// is, where they tell.
func (a *autoscalers) karpenterName() string {
	var by []string
	for _, p := range a.karpenter.pools {
		if b := a.karpenterBy(p); !slices.Contains(by, b) {
			by = append(by, b)
		}
	}
	slices.Sort(by)
	if len(by) == 0 {
		return "Karpenter"
	}
	return strings.Join(by, ", ")
}

// fieldValues are the values at a dotted path of obj, a segment ending in
// [] stepping into each item of a list.
func fieldValues(obj any, path string) []any {
	if path == "" {
		return nil
	}
	cur := []any{obj}
	for _, seg := range strings.Split(path, ".") {
		name, list := strings.CutSuffix(seg, "[]")
		var next []any
		for _, c := range cur {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			v, ok := m[name]
			if !ok || v == nil {
				continue
			}
			if !list {
				next = append(next, v)
				continue
			}
			items, _ := v.([]any)
			next = append(next, items...)
		}
		cur = next
	}
	return cur
}

// fieldString is the first scalar at path, as text; "" for none.
func fieldString(obj any, path string) string {
	for _, v := range fieldValues(obj, path) {
		switch v.(type) {
		case string, int64, int32, int, float64, bool:
			return fmt.Sprint(v)
		}
	}
	return ""
}

// sizing is what bounds one node group.
type sizing struct {
	min, max         int64
	hasMax, autoMake bool
	// from names where the bounds were read.
	from string
}

// grows is true for a group an autoscaler grows: one with a maximum, or
// made on demand.
func (s sizing) grows() bool { return s.hasMax || s.autoMake }

// sized reads a group's bounds: its own annotations or fields, else those
// of an object of sizedBy that targets it.
func (k *kindState) sized(o *unstructured.Unstructured) sizing {
	var s sizing
	read := func(b bound) (int64, bool) {
		v := o.GetAnnotations()[b.Annotation]
		if b.Annotation == "" || v == "" {
			v = fieldString(o.Object, b.Field)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n, err == nil
	}
	s.min, _ = read(k.kind.Min)
	s.max, s.hasMax = read(k.kind.Max)
	if s.hasMax {
		s.from = "its annotations"
		if k.kind.Max.Annotation == "" || o.GetAnnotations()[k.kind.Max.Annotation] == "" {
			s.from = "its spec"
		}
	}
	if sb := k.kind.SizedBy; !s.hasMax && sb != nil {
		for _, z := range k.sizers {
			if z.GetNamespace() != o.GetNamespace() || fieldString(z.Object, sb.Target+".name") != o.GetName() ||
				(fieldString(z.Object, sb.Target+".kind") != "" && fieldString(z.Object, sb.Target+".kind") != o.GetKind()) {
				continue
			}
			mx, err := strconv.ParseInt(fieldString(z.Object, sb.Max), 10, 64)
			if err != nil {
				continue
			}
			mn, _ := strconv.ParseInt(fieldString(z.Object, sb.Min), 10, 64)
			s.min, s.max, s.hasMax = mn, mx, true
			s.from = z.GetKind() + " " + z.GetName()
			break
		}
	}
	s.autoMake = fieldString(o.Object, k.kind.AutoCreate) == "true"
	return s
}

// kindGroups are the node groups among a kind's objects: those an
// autoscaler grows.
func (a *autoscalers) kindGroups(k *kindState) []nodeGroup {
	var out []nodeGroup
	for _, o := range k.objs {
		s := k.sized(o)
		if !s.grows() {
			continue
		}
		id := o.GetName()
		if o.GetNamespace() != "" {
			id = o.GetNamespace() + "/" + id
		}
		g := nodeGroup{by: k.kind.Name, name: o.GetKind() + " " + id, key: o.GetName()}
		if k.kind.CANamed {
			g.caName = o.GetKind() + "/" + id
		}
		replicas, err := strconv.ParseInt(fieldString(o.Object, k.kind.Replicas), 10, 64)
		nodes := a.kindNodes(k, o)
		switch {
		case err == nil:
			g.current = fmt.Sprint(replicas)
		case k.kind.Replicas == "":
			replicas = int64(len(nodes))
			g.current = fmt.Sprint(replicas)
		default:
			g.current = "?"
		}
		switch {
		case s.hasMax:
			g.max = fmt.Sprintf("%d (min %d, from %s)", s.max, s.min, s.from)
			if err == nil && replicas >= s.max {
				g.atMax = true
				g.health = fmt.Sprintf("at its maximum of %d", s.max)
			}
		default:
			g.max = "not shown in the cluster"
			g.outside = cmp.Or(k.kind.Outside, "its limits are kept outside the cluster")
		}
		var why string
		why, g.resource, g.perNode = a.specAccelerator(k, o)
		if why == "" {
			why = a.nodesAccelerator(nodes)
		}
		g.accelerator = why
		if g.resource == "" {
			g.resource, g.perNode = nodesSize(nodes)
		}
		out = append(out, g)
	}
	return out
}

// kindNodes are the nodes of a group held as an object: labelled with its
// name, named by its members, or listed in its status.
func (a *autoscalers) kindNodes(k *kindState, o *unstructured.Unstructured) []*corev1.Node {
	names := map[string]bool{}
	n := k.kind.Nodes
	if m := n.Members; m != nil {
		for _, mem := range k.members {
			if mem.GetNamespace() == o.GetNamespace() && mem.GetLabels()[m.GroupLabel] == o.GetName() {
				if node := fieldString(mem.Object, m.NodeName); node != "" {
					names[node] = true
				}
			}
		}
	}
	for _, v := range fieldValues(o.Object, n.NodeNames) {
		if s, ok := v.(string); ok {
			names[s] = true
		}
	}
	var out []*corev1.Node
	for _, node := range a.nodes {
		if names[node.Name] || (n.Label != "" && node.Labels[n.Label] == o.GetName()) {
			out = append(out, node)
		}
	}
	return out
}

// specAccelerator says why a group's spec makes accelerator nodes ("" when
// it does not say), and the resource and count a new node has where it
// says.
func (a *autoscalers) specAccelerator(k *kindState, o *unstructured.Unstructured) (string, corev1.ResourceName, int64) {
	acc := k.kind.Accelerator
	ann := o.GetAnnotations()
	for _, key := range acc.CountAnnotations {
		q, err := resource.ParseQuantity(strings.TrimSpace(ann[key]))
		if err != nil || q.Value() <= 0 {
			continue
		}
		res := corev1.ResourceName(ann[acc.TypeAnnotation])
		if res == "" || !hardware.IsAccelerator(res) {
			// cluster-autoscaler's default for a count without a type.
			res = "nvidia.com/gpu"
		}
		return fmt.Sprintf("annotation %s=%s", key, ann[key]), res, q.Value()
	}
	labels := map[string]string{}
	for _, kv := range strings.Split(ann[acc.LabelsAnnotation], ",") {
		if key, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && acc.LabelsAnnotation != "" {
			labels[key] = v
		}
	}
	for _, f := range acc.LabelFields {
		for _, v := range fieldValues(o.Object, f) {
			m, _ := v.(map[string]any)
			for key, val := range m {
				labels[key] = fmt.Sprint(val)
			}
		}
	}
	for _, key := range a.data.AcceleratorKeys {
		if v, ok := labels[key]; ok && v != "false" {
			return "its nodes are labelled " + key, "", 0
		}
	}
	for _, f := range acc.Fields {
		if v := fieldString(o.Object, f); v != "" {
			return fmt.Sprintf("%s %s", f, v), "", 0
		}
	}
	return "", "", 0
}
