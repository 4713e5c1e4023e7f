package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	resourcev1 "k8s.io/api/resource/v1"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// The type of a recording file.
const (
	RecordingAPIVersion = "aiconform.io/v1alpha1"
	RecordingKind       = "ClusterRecording"
)

// Recording is a recorded cluster: every query a run made, with the objects
// and the server's Tables it got back (or the error), and when. Replayed as
// a Source, it answers exactly those queries and no others.
type Recording struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Cluster    Info            `json:"cluster"`
	Lists      []RecordedList  `json:"lists,omitempty"`
	Tables     []RecordedTable `json:"tables,omitempty"`
	Raws       []RecordedRaw   `json:"raws,omitempty"`

	lists  map[string]*RecordedList
	tables map[string]*RecordedTable
	raws   map[string]*RecordedRaw
}

// RecordedRaw is the answer to a GET of an API server path: the body as
// the server sent it, or the error.
type RecordedRaw struct {
	Path       string         `json:"path"`
	CapturedAt time.Time      `json:"capturedAt"`
	Body       string         `json:"body,omitempty"`
	Error      *metav1.Status `json:"error,omitempty"`
}

func recordRaw(path string, body []byte, at time.Time, err error) RecordedRaw {
	return RecordedRaw{Path: path, CapturedAt: at.UTC(), Body: string(body), Error: recordQuery(Query{}, at, err).Error}
}

// RecordedQuery is a Query as stored, with the answer's time and error.
type RecordedQuery struct {
	Resource      string         `json:"resource"`
	Kind          string         `json:"kind"`
	Arg           string         `json:"arg"`
	Namespaced    bool           `json:"namespaced,omitempty"`
	Namespace     string         `json:"namespace,omitempty"`
	LabelSelector string         `json:"labelSelector,omitempty"`
	FieldSelector string         `json:"fieldSelector,omitempty"`
	Whole         bool           `json:"whole,omitempty"`
	CapturedAt    time.Time      `json:"capturedAt"`
	Error         *metav1.Status `json:"error,omitempty"`
}

// RecordedList is the answer to a LIST.
type RecordedList struct {
	RecordedQuery `json:",inline"`
	Items         []runtime.RawExtension `json:"items"`

	objects []runtime.Object
}

// RecordedTable is the server's Table for a LIST.
type RecordedTable struct {
	RecordedQuery `json:",inline"`
	Table         *metav1.Table `json:"table,omitempty"`
}

func recordQuery(q Query, at time.Time, err error) RecordedQuery {
	rq := RecordedQuery{
		Resource:      q.Resource.String(),
		Kind:          q.Resource.Kind,
		Arg:           q.Resource.Arg,
		Namespaced:    q.Resource.Namespaced,
		Namespace:     q.Namespace,
		LabelSelector: q.LabelSelector,
		FieldSelector: q.FieldSelector,
		Whole:         q.Whole,
		CapturedAt:    at.UTC(),
	}
	if err != nil {
		var st apierrors.APIStatus
		if errors.As(err, &st) {
			s := st.Status()
			rq.Error = &s
		} else {
			rq.Error = &metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
		}
	}
	return rq
}

func (rq RecordedQuery) query() (Query, error) {
	gvr, err := ParseResource(rq.Resource)
	if err != nil {
		return Query{}, err
	}
	return Query{
		Resource:      Resource{GVR: gvr, Kind: rq.Kind, Arg: rq.Arg, Namespaced: rq.Namespaced},
		Namespace:     rq.Namespace,
		LabelSelector: rq.LabelSelector,
		FieldSelector: rq.FieldSelector,
		Whole:         rq.Whole,
	}, nil
}

func (rq RecordedQuery) err() error {
	if rq.Error == nil {
		return nil
	}
	return &apierrors.StatusError{ErrStatus: *rq.Error}
}

func recordList(q Query, objs []runtime.Object, at time.Time, err error) (RecordedList, error) {
	l := RecordedList{RecordedQuery: recordQuery(q, at, err), Items: []runtime.RawExtension{}}
	gvk := q.Resource.GVR.GroupVersion().WithKind(q.Resource.Kind)
	for _, o := range objs {
		o = o.DeepCopyObject()
		// Typed list items come without apiVersion and kind; a recording
		// needs them to decode each item back into its type.
		o.GetObjectKind().SetGroupVersionKind(gvk)
		trimFor(q, o)
		raw, err := json.Marshal(o)
		if err != nil {
			return l, fmt.Errorf("record %s: %w", q, err)
		}
		l.Items = append(l.Items, runtime.RawExtension{Raw: raw})
	}
	return l, nil
}

func recordTable(q Query, t *metav1.Table, at time.Time, err error) RecordedTable {
	rt := RecordedTable{RecordedQuery: recordQuery(q, at, err)}
	if t != nil {
		t = t.DeepCopy()
		for i := range t.Rows {
			row := &t.Rows[i]
			if row.Object.Object != nil {
				trimFor(q, row.Object.Object)
				if raw, err := json.Marshal(row.Object.Object); err == nil {
					row.Object.Raw = raw
				}
				row.Object.Object = nil
			}
		}
		rt.Table = t
	}
	return rt
}

// NodeFieldSelector starts the field selector of a LIST of the pods of
// one node, as `kubectl describe node` reads them.
const NodeFieldSelector = "spec.nodeName="

// slimWorkload keeps of a Deployment or StatefulSet listed across the
// cluster what is read of every workload of the cluster (its metadata, its
// pod template's labels, its replicas and status), and drops the pod
// template's spec: at 4,200 Deployments those specs were a quarter of a
// run's heap. A check that reads a template's containers lists the
// workloads of one namespace, which are kept whole.
func slimWorkload(o runtime.Object) {
	switch w := o.(type) {
	case *appsv1.Deployment:
		w.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: w.Spec.Template.Labels}}
	case *appsv1.StatefulSet:
		w.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: w.Spec.Template.Labels}}
		w.Spec.VolumeClaimTemplates = nil
	}
}

// slimPod keeps of a pod listed per node only what is read of the pods of
// a node (nodePodMask keeps the same on the wire): what they request of it
// (name, namespace, uid, labels and owners, when made and deleted, phase,
// readiness and address, each container's name and extended resources, the
// pod's overhead of them, its resource claims) and how they might reach its
// devices other than by a request (a privileged container, a hostPath
// volume and each container's mounts, an *_VISIBLE_DEVICES variable a
// container runtime hook honours, a CDI annotation). On a cluster of
// thousands of accelerator nodes these lists hold a quarter of its pods,
// and their specs and statuses are most of a run's memory.
func slimPod(o runtime.Object) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	var volumes []corev1.Volume
	for _, v := range p.Spec.Volumes {
		if v.HostPath != nil {
			volumes = append(volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{HostPath: v.HostPath}})
		}
	}
	slim := func(cs []corev1.Container) []corev1.Container {
		var out []corev1.Container
		for _, c := range cs {
			k := corev1.Container{Name: c.Name, Resources: corev1.ResourceRequirements{
				Requests: extended(c.Resources.Requests), Limits: extended(c.Resources.Limits), Claims: c.Resources.Claims}}
			if sc := c.SecurityContext; sc != nil && sc.Privileged != nil {
				k.SecurityContext = &corev1.SecurityContext{Privileged: sc.Privileged}
			}
			for _, e := range c.Env {
				if strings.HasSuffix(e.Name, VisibleDevicesSuffix) && e.ValueFrom == nil {
					k.Env = append(k.Env, corev1.EnvVar{Name: e.Name, Value: e.Value})
				}
			}
			// Every mount, though only those of hostPath volumes are
			// read: which volume a mount names is known on the wire only
			// after the mount, so that nodePodMask keeps them all.
			for _, m := range c.VolumeMounts {
				k.VolumeMounts = append(k.VolumeMounts, corev1.VolumeMount{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly})
			}
			out = append(out, k)
		}
		return out
	}
	var cdi map[string]string
	for k, v := range p.Annotations {
		if strings.HasPrefix(k, CDIAnnotationPrefix) {
			if cdi == nil {
				cdi = map[string]string{}
			}
			cdi[k] = v
		}
	}
	p.ObjectMeta = metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, Labels: p.Labels, Annotations: cdi,
		OwnerReferences: p.OwnerReferences, CreationTimestamp: p.CreationTimestamp, DeletionTimestamp: p.DeletionTimestamp}
	p.Spec = corev1.PodSpec{NodeName: p.Spec.NodeName, Containers: slim(p.Spec.Containers), InitContainers: slim(p.Spec.InitContainers),
		Overhead: extended(p.Spec.Overhead), Volumes: volumes, ResourceClaims: p.Spec.ResourceClaims}
	// Its address ties a monitoring system's series to the pod.
	status := corev1.PodStatus{Phase: p.Status.Phase, PodIP: p.Status.PodIP}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	p.Status = status
}

// extended keeps of a resource list the extended resources, named in a
// vendor's domain (nvidia.com/gpu, amd.com/gpu, a NIC's rdma/...): what the
// pods of a node are read for. CPU, memory, storage and huge pages, in
// nearly every container, were most of what a slim pod still held.
func extended(l corev1.ResourceList) corev1.ResourceList {
	var out corev1.ResourceList
	for name, q := range l {
		if !isExtended(name) {
			continue
		}
		if out == nil {
			out = corev1.ResourceList{}
		}
		out[name] = q
	}
	return out
}

// CDIAnnotationPrefix starts the pod annotations a container runtime with
// CDI enabled reads as requests for devices, outside any resource request.
const CDIAnnotationPrefix = "cdi.k8s.io/"

// lastApplied is the annotation kubectl apply keeps the object as applied
// in.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// trim drops what no check reads and what would only bloat a run's memory
// or a recording, or copy an operator's manifests into it: managed fields,
// the last-applied annotation, CRD schemas (a CRD's names, versions and
// conditions stay), of a node's status all but its capacity, allocatable,
// phase and Ready condition (its images alone are a few KiB a node, and on
// thousands of nodes more than the rest of them; its other conditions,
// five to a dozen with node-problem-detector, are read by no check), and
// the capacities of a ResourceSlice's devices (a map each, read by no
// check).
func trim(o runtime.Object) {
	trimMeta(o)
	trimKind(o)
}

// trimFor is what a recording keeps of an object q listed: a whole
// query's objects lose their metadata's bulk only.
func trimFor(q Query, o runtime.Object) {
	if q.Whole {
		trimMeta(o)
		return
	}
	trim(o)
}

// trimMeta drops an object's managed fields and kubectl's last-applied
// annotation: no check reads them, and they are much of an object.
func trimMeta(o runtime.Object) {
	if m, err := meta.Accessor(o); err == nil {
		m.SetManagedFields(nil)
		if a := m.GetAnnotations(); a != nil {
			delete(a, lastApplied)
			if len(a) == 0 {
				a = nil
			}
			m.SetAnnotations(a)
		}
	}
}

// trimKind drops what no built-in check reads of a node, a ResourceSlice
// and a CRD.
func trimKind(o runtime.Object) {
	if n, ok := o.(*corev1.Node); ok {
		conds := n.Status.Conditions
		n.Status = corev1.NodeStatus{Capacity: n.Status.Capacity, Allocatable: n.Status.Allocatable, Phase: n.Status.Phase}
		for _, c := range conds {
			// Every Ready one, as nodeMask keeps them.
			if c.Type == corev1.NodeReady {
				n.Status.Conditions = append(n.Status.Conditions, c)
			}
		}
	}
	if s, ok := o.(*resourcev1.ResourceSlice); ok {
		for i := range s.Spec.Devices {
			s.Spec.Devices[i].Capacity = nil
		}
	}
	if crd, ok := o.(*apiextensionsv1.CustomResourceDefinition); ok {
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].Schema = nil
		}
		if crd.Spec.Conversion != nil && crd.Spec.Conversion.Webhook != nil {
			crd.Spec.Conversion.Webhook.ClientConfig = nil
		}
	}
}

// Marshal writes the recording as YAML, which reads and diffs well.
func (r *Recording) Marshal() ([]byte, error) {
	return yaml.Marshal(r)
}

// MarshalCompact writes the recording as JSON: a recording of a cluster of
// thousands of nodes is tens of megabytes, which JSON writes and reads many
// times faster than YAML.
func (r *Recording) MarshalCompact() ([]byte, error) {
	return json.Marshal(r)
}

// LoadRecording parses a recording; name says where it came from in errors
// and in the report header.
func LoadRecording(name string, data []byte) (*Recording, error) {
	r := &Recording{}
	if err := unmarshalRecording(data, r); err != nil {
		return nil, fmt.Errorf("recording %s: %w", name, err)
	}
	if r.APIVersion != RecordingAPIVersion || r.Kind != RecordingKind {
		return nil, fmt.Errorf("recording %s: apiVersion %q kind %q, want %s %s",
			name, r.APIVersion, r.Kind, RecordingAPIVersion, RecordingKind)
	}
	r.Cluster.Live = false
	r.Cluster.Source = name
	r.lists = map[string]*RecordedList{}
	r.tables = map[string]*RecordedTable{}
	for i := range r.Lists {
		l := &r.Lists[i]
		q, err := l.query()
		if err != nil {
			return nil, fmt.Errorf("recording %s: lists[%d]: %w", name, i, err)
		}
		for j, raw := range l.Items {
			o, err := decodeObject(raw.Raw)
			if err != nil {
				return nil, fmt.Errorf("recording %s: lists[%d] (%s) items[%d]: %w", name, i, q, j, err)
			}
			l.objects = append(l.objects, o)
		}
		r.lists[q.Key()] = l
	}
	for i := range r.Tables {
		t := &r.Tables[i]
		q, err := t.query()
		if err != nil {
			return nil, fmt.Errorf("recording %s: tables[%d]: %w", name, i, err)
		}
		if t.Table != nil {
			if err := decodeRows(t.Table); err != nil {
				return nil, fmt.Errorf("recording %s: tables[%d] (%s): %w", name, i, q, err)
			}
		}
		r.tables[q.Key()] = t
	}
	r.raws = map[string]*RecordedRaw{}
	for i := range r.Raws {
		r.raws[r.Raws[i].Path] = &r.Raws[i]
	}
	return r, nil
}

// unmarshalRecording reads JSON directly (YAML's parser would first turn
// it into a YAML tree) and anything else as YAML; both reject unknown fields.
func unmarshalRecording(data []byte, r *Recording) error {
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		return dec.Decode(r)
	}
	return yaml.UnmarshalStrict(data, r)
}

// decodeObject gives built-in kinds their Go type, as a live typed client
// would, and leaves custom resources unstructured.
func decodeObject(raw []byte) (runtime.Object, error) {
	// Read only apiVersion and kind first: parsing the whole object into a
	// map as well would double the cost of loading a large recording.
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, err
	}
	if !scheme.Recognizes(schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, err
		}
		return u, nil
	}
	obj, _, err := codecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return nil, err
	}
	// A live typed list leaves TypeMeta empty on its items; so do we, so
	// that checks never depend on where an object came from.
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return obj, nil
}

// List implements Source.
func (r *Recording) List(_ context.Context, q Query) ([]runtime.Object, time.Time, error) {
	l, ok := r.lists[q.Key()]
	if !ok {
		return nil, time.Time{}, notRecorded(r.Cluster.Source, q)
	}
	return l.objects, l.CapturedAt, l.err()
}

// Table implements Source. A recording made before Print read names one
// by one holds the Table of them all instead: the rows of the name are
// taken from it, as the server's field selector would have.
func (r *Recording) Table(_ context.Context, q Query) (*metav1.Table, time.Time, error) {
	if t, ok := r.tables[q.Key()]; ok {
		return t.Table, t.CapturedAt, t.err()
	}
	name, all, ok := q.named()
	if !ok {
		return nil, time.Time{}, notRecorded(r.Cluster.Source, q)
	}
	t, ok := r.tables[all.Key()]
	if !ok {
		return nil, time.Time{}, notRecorded(r.Cluster.Source, q)
	}
	if err := t.err(); err != nil || t.Table == nil {
		return t.Table, t.CapturedAt, err
	}
	one := &metav1.Table{TypeMeta: t.Table.TypeMeta, ListMeta: t.Table.ListMeta, ColumnDefinitions: t.Table.ColumnDefinitions}
	for _, row := range t.Table.Rows {
		if rowName(row) == name {
			one.Rows = append(one.Rows, row)
		}
	}
	return one, t.CapturedAt, nil
}

// Raw implements Source.
func (r *Recording) Raw(_ context.Context, path string) ([]byte, time.Time, error) {
	g, ok := r.raws[path]
	if !ok {
		return nil, time.Time{}, fmt.Errorf("recording %s holds no answer to: get %s (record it again with `aiconform snapshot`)", r.Cluster.Source, path)
	}
	var err error
	if g.Error != nil {
		err = &apierrors.StatusError{ErrStatus: *g.Error}
	}
	return []byte(g.Body), g.CapturedAt, err
}

// Info implements Source.
func (r *Recording) Info(context.Context) (Info, error) { return r.Cluster, nil }

func notRecorded(name string, q Query) error {
	return fmt.Errorf("recording %s holds no answer to: list %s (record it again with `aiconform snapshot`)", name, q)
}
