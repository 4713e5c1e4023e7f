package bench

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/simulate"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Source is a cluster.Source answering from objects in memory the way an
// API server does: lists filtered by namespace, label selector and field
// selector (pods by spec.nodeName through an index, as the API server's
// watch cache keeps one), and Tables with the server's columns for each
// kind. It counts every call, so that a benchmark can say how many LISTs a
// run makes and a test can say which.
//
// Objects are handed out shared, not decoded afresh as a live client's are:
// the benchmark measures aiconform's own work, not JSON or protobuf
// decoding (BenchmarkReplayRecording and bench/live include that).
type Source struct {
	// Now is the time answers are captured at, and Tables' AGE is judged
	// at.
	Now func() time.Time

	info       cluster.Info
	served     map[schema.GroupVersionResource]bool
	objects    map[schema.GroupVersionResource][]runtime.Object
	byNS       map[schema.GroupVersionResource]map[string][]runtime.Object
	podsByNode map[string][]runtime.Object
	raw        map[string][]byte
	targets    []simulate.PrometheusTarget

	mu    sync.Mutex
	calls Calls
}

// Calls counts a source's answers.
type Calls struct {
	// Lists and Tables count calls by query key (cluster.Query.Key), Raws
	// by path.
	Lists, Tables, Raws map[string]int
	// Queries are the distinct queries asked, by key.
	Queries map[string]cluster.Query
}

// Total is the number of calls in counts.
func Total(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// builtins are the built-in resources a Source serves.
var builtins = []cluster.Resource{
	cluster.Nodes, cluster.Namespaces, cluster.Pods, cluster.Services, cluster.Deployments, cluster.ReplicaSets, cluster.Jobs,
	cluster.EndpointSlices, cluster.CRDs, cluster.ValidatingWebhookConfigurations, cluster.MutatingWebhookConfigurations,
	cluster.DaemonSets, cluster.Leases, cluster.Events, cluster.HorizontalPodAutoscalers, cluster.StatefulSets, cluster.APIServices,
	cluster.ConfigMaps, cluster.DeviceClasses, cluster.ResourceSlices, cluster.ResourceClaims, cluster.ResourceClaimTemplates,
	cluster.RuntimeClasses,
}

// NewSource serves objs.
func NewSource(objs *Objects) *Source {
	s := &Source{
		Now:        time.Now,
		served:     map[schema.GroupVersionResource]bool{},
		objects:    map[schema.GroupVersionResource][]runtime.Object{},
		byNS:       map[schema.GroupVersionResource]map[string][]runtime.Object{},
		podsByNode: map[string][]runtime.Object{},
		raw:        map[string][]byte{},
	}
	for _, m := range objs.Metrics {
		s.raw[m.Path] = m.Body
	}
	s.targets = objs.Targets
	for _, r := range builtins {
		s.served[r.GVR] = true
	}
	add := func(gvr schema.GroupVersionResource, o runtime.Object) { s.objects[gvr] = append(s.objects[gvr], o) }
	for _, o := range objs.Namespaces {
		add(cluster.Namespaces.GVR, o)
		if o.Name == "kube-system" {
			s.info.ClusterID = string(o.UID)
		}
	}
	for _, o := range objs.Nodes {
		add(cluster.Nodes.GVR, o)
	}
	for _, o := range objs.Deployments {
		add(cluster.Deployments.GVR, o)
	}
	for _, o := range objs.ReplicaSets {
		add(cluster.ReplicaSets.GVR, o)
	}
	for _, o := range objs.Pods {
		add(cluster.Pods.GVR, o)
	}
	for _, o := range objs.Services {
		add(cluster.Services.GVR, o)
	}
	for _, o := range objs.EndpointSlices {
		add(cluster.EndpointSlices.GVR, o)
	}
	for _, o := range objs.CRDs {
		add(cluster.CRDs.GVR, o)
		for _, v := range o.Spec.Versions {
			if v.Served {
				s.served[schema.GroupVersionResource{Group: o.Spec.Group, Version: v.Name, Resource: o.Spec.Names.Plural}] = true
			}
		}
	}
	for _, o := range objs.Validating {
		add(cluster.ValidatingWebhookConfigurations.GVR, o)
	}
	for _, o := range objs.Mutating {
		add(cluster.MutatingWebhookConfigurations.GVR, o)
	}
	for _, o := range objs.DaemonSets {
		add(cluster.DaemonSets.GVR, o)
	}
	for _, o := range objs.Leases {
		add(cluster.Leases.GVR, o)
	}
	for _, o := range objs.ConfigMaps {
		add(cluster.ConfigMaps.GVR, o)
	}
	for _, o := range objs.Events {
		add(cluster.Events.GVR, o)
	}
	for _, o := range objs.HPAs {
		add(cluster.HorizontalPodAutoscalers.GVR, o)
	}
	for _, o := range objs.APIServices {
		add(cluster.APIServices.GVR, o)
	}
	for _, o := range objs.DeviceClasses {
		add(cluster.DeviceClasses.GVR, o)
	}
	for _, o := range objs.ResourceSlices {
		add(cluster.ResourceSlices.GVR, o)
	}
	for _, o := range objs.ResourceClaims {
		add(cluster.ResourceClaims.GVR, o)
	}
	for _, o := range objs.RuntimeClasses {
		add(cluster.RuntimeClasses.GVR, o)
	}
	for _, cr := range objs.CustomResources {
		// A custom resource is served at every served version of its CRD.
		for gvr := range s.served {
			if gvr.Group == cr.GVR.Group && gvr.Resource == cr.GVR.Resource {
				add(gvr, cr.Object)
			}
		}
	}
	// The API server lists in key order: namespace, then name.
	for _, list := range s.objects {
		sort.SliceStable(list, func(i, j int) bool {
			a, b := list[i].(metav1.Object), list[j].(metav1.Object)
			if a.GetNamespace() != b.GetNamespace() {
				return a.GetNamespace() < b.GetNamespace()
			}
			return a.GetName() < b.GetName()
		})
	}
	for gvr, list := range s.objects {
		s.byNS[gvr] = map[string][]runtime.Object{}
		for _, o := range list {
			ns := o.(metav1.Object).GetNamespace()
			s.byNS[gvr][ns] = append(s.byNS[gvr][ns], o)
		}
	}
	for _, o := range s.objects[cluster.Pods.GVR] {
		p := o.(*corev1.Pod)
		s.podsByNode[p.Spec.NodeName] = append(s.podsByNode[p.Spec.NodeName], p)
	}
	s.Reset()
	return s
}

// Reset forgets the calls counted so far.
func (s *Source) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = Calls{Lists: map[string]int{}, Tables: map[string]int{}, Raws: map[string]int{}, Queries: map[string]cluster.Query{}}
}

// Calls returns a copy of the calls counted since the last Reset.
func (s *Source) Calls() Calls {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Calls{Lists: maps.Clone(s.calls.Lists), Tables: maps.Clone(s.calls.Tables), Raws: maps.Clone(s.calls.Raws), Queries: maps.Clone(s.calls.Queries)}
}

func (s *Source) count(table bool, q cluster.Query) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := q.Key()
	if table {
		s.calls.Tables[key]++
	} else {
		s.calls.Lists[key]++
	}
	s.calls.Queries[key] = q
}

// Info implements cluster.Source.
func (s *Source) Info(context.Context) (cluster.Info, error) {
	info := s.info
	info.Source, info.Context, info.Server, info.ServerVersion = "synthetic", "synthetic", "memory://synthetic", "v1.37.2"
	return info, nil
}

// Raw implements cluster.Source: what the exporter pods serve, through
// the pod proxy, and the Prometheus server's targets, through the
// service proxy.
func (s *Source) Raw(_ context.Context, path string) ([]byte, time.Time, error) {
	s.mu.Lock()
	s.calls.Raws[path]++
	s.mu.Unlock()
	if base, query, _ := strings.Cut(path, "?"); base == PrometheusTargetsPath {
		q, err := url.ParseQuery(query)
		if err != nil {
			return nil, s.Now(), apierrors.NewBadRequest(err.Error())
		}
		return simulate.PrometheusTargets(s.targets, q), s.Now(), nil
	}
	body, ok := s.raw[path]
	if !ok {
		return nil, s.Now(), apierrors.NewNotFound(schema.GroupResource{Resource: "pods/proxy"}, path)
	}
	return body, s.Now(), nil
}

// List implements cluster.Source.
func (s *Source) List(_ context.Context, q cluster.Query) ([]runtime.Object, time.Time, error) {
	s.count(false, q)
	objs, err := s.match(q)
	now := s.Now()
	switch q.Resource {
	case cluster.Leases:
		objs = renewed(objs, now)
	case cluster.ConfigMaps:
		objs = rewritten(objs, now)
	}
	return objs, now, err
}

// renewed answers Leases as running leaders keep them: renewed two seconds
// before now. The cluster is generated once and read for as long as a test
// or a benchmark runs; a Lease written once would go stale under a slow
// run, and controller-lease would rightly fail.
func renewed(objs []runtime.Object, now time.Time) []runtime.Object {
	out := make([]runtime.Object, len(objs))
	for i, o := range objs {
		l, ok := o.(*coordinationv1.Lease)
		if !ok || l.Spec.RenewTime == nil {
			out[i] = o
			continue
		}
		l = l.DeepCopy()
		l.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(-2 * time.Second)}
		out[i] = l
	}
	return out
}

// rewritten answers cluster-autoscaler's status as a running autoscaler
// keeps it: written five seconds before now, for the same reason as
// renewed.
func rewritten(objs []runtime.Object, now time.Time) []runtime.Object {
	out := make([]runtime.Object, len(objs))
	for i, o := range objs {
		cm, ok := o.(*corev1.ConfigMap)
		if !ok || cm.Annotations[CAUpdatedAnnotation] == "" {
			out[i] = o
			continue
		}
		cm = cm.DeepCopy()
		cm.Annotations[CAUpdatedAnnotation] = now.Add(-5 * time.Second).UTC().Format(caTimeLayout)
		out[i] = cm
	}
	return out
}

// Table implements cluster.Source.
func (s *Source) Table(_ context.Context, q cluster.Query) (*metav1.Table, time.Time, error) {
	s.count(true, q)
	now := s.Now()
	objs, err := s.match(q)
	if err != nil {
		return nil, now, err
	}
	t := &metav1.Table{
		TypeMeta:          metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"},
		ListMeta:          metav1.ListMeta{ResourceVersion: "1"},
		ColumnDefinitions: columns(q.Resource.GVR.Resource),
		Rows:              make([]metav1.TableRow, 0, len(objs)),
	}
	for _, o := range objs {
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells(o, now), Object: runtime.RawExtension{Object: partial(o)}})
	}
	return t, now, nil
}

// match is the server's filtering of a LIST.
func (s *Source) match(q cluster.Query) ([]runtime.Object, error) {
	gvr := q.Resource.GVR
	if !s.served[gvr] {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), "")
	}
	ls, err := labels.Parse(q.LabelSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
	}
	fs, err := fields.ParseSelector(q.FieldSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	for _, r := range fs.Requirements() {
		if !supportedField(gvr, r.Field) {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", r.Field))
		}
	}
	// Like the watch cache: a namespace narrows by key prefix, and pods have
	// an index on spec.nodeName; whatever is left is filtered one by one.
	candidates := s.objects[gvr]
	if q.Resource.Namespaced && q.Namespace != "" {
		candidates = s.byNS[gvr][q.Namespace]
	}
	matchFields := !fs.Empty()
	if gvr == cluster.Pods.GVR {
		if node, ok := fs.RequiresExactMatch("spec.nodeName"); ok {
			candidates = s.podsByNode[node]
			matchFields = len(fs.Requirements()) > 1 || q.Namespace != ""
		}
	}
	out := []runtime.Object{}
	for _, o := range candidates {
		m := o.(metav1.Object)
		if q.Resource.Namespaced && q.Namespace != "" && m.GetNamespace() != q.Namespace {
			continue
		}
		if !ls.Empty() && !ls.Matches(labels.Set(m.GetLabels())) {
			continue
		}
		if matchFields && !fs.Matches(fieldSet(o)) {
			continue
		}
		out = append(out, o)
	}
	return out, nil
}

func supportedField(gvr schema.GroupVersionResource, f string) bool {
	switch f {
	case "metadata.name", "metadata.namespace":
		return true
	}
	switch gvr {
	case cluster.Pods.GVR:
		switch f {
		case "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
			"spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName":
			return true
		}
	case cluster.Nodes.GVR:
		return f == "spec.unschedulable"
	case cluster.Events.GVR:
		switch f {
		case "type", "reason", "involvedObject.kind", "involvedObject.name", "involvedObject.namespace", "involvedObject.apiVersion":
			return true
		}
	}
	return false
}

// fieldSet is what field selectors match an object by.
func fieldSet(o runtime.Object) fields.Set {
	m := o.(metav1.Object)
	set := fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
	switch t := o.(type) {
	case *corev1.Pod:
		set["spec.nodeName"] = t.Spec.NodeName
		set["spec.restartPolicy"] = string(t.Spec.RestartPolicy)
		set["spec.schedulerName"] = t.Spec.SchedulerName
		set["spec.serviceAccountName"] = t.Spec.ServiceAccountName
		set["spec.hostNetwork"] = fmt.Sprint(t.Spec.HostNetwork)
		set["status.phase"] = string(t.Status.Phase)
		set["status.podIP"] = t.Status.PodIP
		set["status.nominatedNodeName"] = t.Status.NominatedNodeName
	case *corev1.Node:
		set["spec.unschedulable"] = fmt.Sprint(t.Spec.Unschedulable)
	case *corev1.Event:
		set["type"], set["reason"] = t.Type, t.Reason
		set["involvedObject.kind"], set["involvedObject.name"] = t.InvolvedObject.Kind, t.InvolvedObject.Name
		set["involvedObject.namespace"], set["involvedObject.apiVersion"] = t.InvolvedObject.Namespace, t.InvolvedObject.APIVersion
	}
	return set
}

// partial is a row's object as the server sends it by default: metadata
// only.
func partial(o runtime.Object) *unstructured.Unstructured {
	m := o.(metav1.Object)
	md := map[string]any{"name": m.GetName(), "uid": string(m.GetUID()),
		"creationTimestamp": m.GetCreationTimestamp().UTC().Format(time.RFC3339)}
	if ns := m.GetNamespace(); ns != "" {
		md["namespace"] = ns
	}
	if l := m.GetLabels(); len(l) > 0 {
		lm := make(map[string]any, len(l))
		for k, v := range l {
			lm[k] = v
		}
		md["labels"] = lm
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": md}}
}

func col(name, typ, format string, priority int32) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Format: format, Priority: priority}
}

var (
	nameCol = col("Name", "string", "name", 0)
	ageCol  = col("Age", "string", "", 0)
)

// columns are the server's columns for a resource; custom resources whose
// CRD has no printer columns get Name and Age.
func columns(resource string) []metav1.TableColumnDefinition {
	switch resource {
	case "pods":
		return []metav1.TableColumnDefinition{nameCol, col("Ready", "string", "", 0), col("Status", "string", "", 0),
			col("Restarts", "string", "", 0), ageCol, col("IP", "string", "", 1), col("Node", "string", "", 1),
			col("Nominated Node", "string", "", 1), col("Readiness Gates", "string", "", 1)}
	case "nodes":
		return []metav1.TableColumnDefinition{nameCol, col("Status", "string", "", 0), col("Roles", "string", "", 0), ageCol,
			col("Version", "string", "", 0), col("Internal-IP", "string", "", 1), col("External-IP", "string", "", 1),
			col("OS-Image", "string", "", 1), col("Kernel-Version", "string", "", 1), col("Container-Runtime", "string", "", 1)}
	case "deployments":
		return []metav1.TableColumnDefinition{nameCol, col("Ready", "string", "", 0), col("Up-to-date", "integer", "", 0),
			col("Available", "integer", "", 0), ageCol, col("Containers", "string", "", 1), col("Images", "string", "", 1), col("Selector", "string", "", 1)}
	case "replicasets":
		return []metav1.TableColumnDefinition{nameCol, col("Desired", "integer", "", 0), col("Current", "integer", "", 0),
			col("Ready", "integer", "", 0), ageCol, col("Containers", "string", "", 1), col("Images", "string", "", 1), col("Selector", "string", "", 1)}
	case "services":
		return []metav1.TableColumnDefinition{nameCol, col("Type", "string", "", 0), col("Cluster-IP", "string", "", 0),
			col("External-IP", "string", "", 0), col("Port(s)", "string", "", 0), ageCol, col("Selector", "string", "", 1)}
	case "endpointslices":
		return []metav1.TableColumnDefinition{nameCol, col("AddressType", "string", "", 0), col("Ports", "string", "", 0),
			col("Endpoints", "string", "", 0), ageCol}
	case "customresourcedefinitions":
		return []metav1.TableColumnDefinition{nameCol, col("Created At", "date", "", 0)}
	case "validatingwebhookconfigurations", "mutatingwebhookconfigurations":
		return []metav1.TableColumnDefinition{nameCol, col("Webhooks", "integer", "", 0), ageCol}
	case "namespaces":
		return []metav1.TableColumnDefinition{nameCol, col("Status", "string", "", 0), ageCol}
	case "daemonsets":
		return []metav1.TableColumnDefinition{nameCol, col("Desired", "integer", "", 0), col("Current", "integer", "", 0),
			col("Ready", "integer", "", 0), col("Up-to-date", "integer", "", 0), col("Available", "integer", "", 0),
			col("Node Selector", "string", "", 0), ageCol, col("Containers", "string", "", 1), col("Images", "string", "", 1), col("Selector", "string", "", 1)}
	case "leases":
		return []metav1.TableColumnDefinition{nameCol, col("Holder", "string", "", 0), ageCol}
	case "events":
		return []metav1.TableColumnDefinition{col("Last Seen", "string", "", 0), col("Type", "string", "", 0), col("Reason", "string", "", 0),
			col("Object", "string", "", 0), col("Message", "string", "", 0)}
	}
	return []metav1.TableColumnDefinition{nameCol, ageCol}
}

func age(m metav1.Object, now time.Time) string {
	return duration.HumanDuration(now.Sub(m.GetCreationTimestamp().Time))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// cells are a row's cells, in columns' order.
func cells(o runtime.Object, now time.Time) []any {
	switch t := o.(type) {
	case *corev1.Pod:
		return podCells(t, now)
	case *corev1.Node:
		return nodeCells(t, now)
	case *appsv1.Deployment:
		c, i := containersAndImages(t.Spec.Template.Spec.Containers)
		return []any{t.Name, fmt.Sprintf("%d/%d", t.Status.ReadyReplicas, ptrOr(t.Spec.Replicas)), int64(t.Status.UpdatedReplicas),
			int64(t.Status.AvailableReplicas), age(t, now), c, i, metav1.FormatLabelSelector(t.Spec.Selector)}
	case *appsv1.ReplicaSet:
		c, i := containersAndImages(t.Spec.Template.Spec.Containers)
		return []any{t.Name, int64(ptrOr(t.Spec.Replicas)), int64(t.Status.Replicas), int64(t.Status.ReadyReplicas), age(t, now),
			c, i, metav1.FormatLabelSelector(t.Spec.Selector)}
	case *corev1.Service:
		var ports []string
		for _, p := range t.Spec.Ports {
			ports = append(ports, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
		}
		return []any{t.Name, string(t.Spec.Type), orNone(t.Spec.ClusterIP), "<none>", orNone(strings.Join(ports, ",")), age(t, now),
			orNone(labels.FormatLabels(t.Spec.Selector))}
	case *discoveryv1.EndpointSlice:
		var ports, addrs []string
		for _, p := range t.Ports {
			if p.Port != nil {
				ports = append(ports, fmt.Sprint(*p.Port))
			}
		}
		for _, e := range t.Endpoints {
			addrs = append(addrs, e.Addresses...)
		}
		return []any{t.Name, string(t.AddressType), orNone(strings.Join(ports, ",")), orNone(strings.Join(addrs, ",")), age(t, now)}
	case *apiextensionsv1.CustomResourceDefinition:
		return []any{t.Name, t.CreationTimestamp.UTC().Format(time.RFC3339)}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		return []any{t.Name, int64(len(t.Webhooks)), age(t, now)}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		return []any{t.Name, int64(len(t.Webhooks)), age(t, now)}
	case *corev1.Namespace:
		return []any{t.Name, string(t.Status.Phase), age(t, now)}
	case *appsv1.DaemonSet:
		c, i := containersAndImages(t.Spec.Template.Spec.Containers)
		st := t.Status
		return []any{t.Name, int64(st.DesiredNumberScheduled), int64(st.CurrentNumberScheduled), int64(st.NumberReady),
			int64(st.UpdatedNumberScheduled), int64(st.NumberAvailable), orNone(labels.FormatLabels(t.Spec.Template.Spec.NodeSelector)),
			age(t, now), c, i, metav1.FormatLabelSelector(t.Spec.Selector)}
	case *coordinationv1.Lease:
		holder := ""
		if t.Spec.HolderIdentity != nil {
			holder = *t.Spec.HolderIdentity
		}
		return []any{t.Name, holder, age(t, now)}
	case *corev1.Event:
		return []any{duration.HumanDuration(now.Sub(t.LastTimestamp.Time)), t.Type, t.Reason,
			strings.ToLower(t.InvolvedObject.Kind) + "/" + t.InvolvedObject.Name, t.Message}
	}
	m := o.(metav1.Object)
	return []any{m.GetName(), age(m, now)}
}

func ptrOr(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

func containersAndImages(cs []corev1.Container) (string, string) {
	var names, images []string
	for _, c := range cs {
		names = append(names, c.Name)
		images = append(images, c.Image)
	}
	return strings.Join(names, ","), strings.Join(images, ",")
}

func podCells(p *corev1.Pod, now time.Time) []any {
	ready, restarts := 0, 0
	status := string(p.Status.Phase)
	var last time.Time
	for _, cs := range p.Status.ContainerStatuses {
		restarts += int(cs.RestartCount)
		if cs.Ready && cs.State.Running != nil {
			ready++
		}
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			status = w.Reason
		}
		if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(last) {
			last = t.FinishedAt.Time
		}
	}
	if p.DeletionTimestamp != nil {
		status = "Terminating"
	}
	restartCell := fmt.Sprint(restarts)
	if restarts > 0 && !last.IsZero() {
		restartCell = fmt.Sprintf("%d (%s ago)", restarts, duration.HumanDuration(now.Sub(last)))
	}
	return []any{p.Name, fmt.Sprintf("%d/%d", ready, len(p.Spec.Containers)), status, restartCell, age(p, now),
		orNone(p.Status.PodIP), orNone(p.Spec.NodeName), orNone(p.Status.NominatedNodeName), "<none>"}
}

func nodeCells(n *corev1.Node, now time.Time) []any {
	status := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			status = "NotReady"
			if c.Status == corev1.ConditionTrue {
				status = "Ready"
			}
		}
	}
	if n.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	var roles []string
	for k := range n.Labels {
		if r, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok {
			roles = append(roles, r)
		}
	}
	sort.Strings(roles)
	internal, external := "<none>", "<none>"
	for _, a := range n.Status.Addresses {
		switch a.Type {
		case corev1.NodeInternalIP:
			internal = a.Address
		case corev1.NodeExternalIP:
			external = a.Address
		}
	}
	info := n.Status.NodeInfo
	return []any{n.Name, status, orNone(strings.Join(roles, ",")), age(n, now), info.KubeletVersion,
		internal, external, info.OSImage, info.KernelVersion, info.ContainerRuntimeVersion}
}
