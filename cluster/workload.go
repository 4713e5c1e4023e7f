package cluster

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// Workload is what a run keeps of a Deployment or StatefulSet of the whole
// cluster for the checks that look for a workload wherever it runs (an
// operator's controller, metrics collectors, cluster-autoscaler, the
// phases of disaggregated serving): its names, labels and owners, its
// selector, its pod template's labels and its replica counts. A field not
// here is one no such check reads; a check that needs another adds it here
// (and keeps it in deploymentMask or statefulSetMask).
//
// The workloads are made once per run from the list, which stays packed:
// on bench/live's cluster a run read its 4,200 Deployments six times
// (locating the operators, then five checks), each time decoding the
// whole list, 17 MB of garbage that the collector, held near the run's
// memory limit, paid for.
type Workload struct {
	// Resource is Deployments or StatefulSets.
	Resource        Resource
	Namespace, Name string
	Labels          map[string]string
	Owners          []metav1.OwnerReference
	// Selector is spec.selector; nil only in a recording that lacks it.
	Selector       *metav1.LabelSelector
	TemplateLabels map[string]string
	// Replicas is spec.replicas, 1 when unset, as the API server
	// defaults it.
	Replicas         int32
	Ready, Available int32
}

// Workloads returns the workloads of r (Deployments or StatefulSets) in
// every namespace, made once per run from the list of them, which stays in
// the cache. Callers must not modify them: they are shared.
func (c *Cache) Workloads(ctx context.Context, r Resource) ([]*Workload, time.Time, error) {
	return once(ctx, &c.mu, c.workloads, r.GVR.String(), r, c.fetchWorkloads)
}

func (c *Cache) fetchWorkloads(ctx context.Context, r Resource) ([]*Workload, time.Time, error) {
	if r.GVR != Deployments.GVR && r.GVR != StatefulSets.GVR {
		return nil, time.Time{}, fmt.Errorf("%s are not workloads: Deployments or StatefulSets are", r)
	}
	objs, at, err := c.List(ctx, Query{Resource: r})
	if err != nil {
		return nil, at, err
	}
	out := make([]*Workload, len(objs))
	for i, o := range objs {
		if out[i], err = workloadOf(o); err != nil {
			return nil, at, fmt.Errorf("list %s: %w", r, err)
		}
	}
	return out, at, nil
}

// workloadOf keeps of a Deployment or StatefulSet what a Workload holds.
func workloadOf(o runtime.Object) (*Workload, error) {
	switch o := o.(type) {
	case *appsv1.Deployment:
		return &Workload{Resource: Deployments, Namespace: o.Namespace, Name: o.Name, Labels: o.Labels,
			Owners: o.OwnerReferences, Selector: o.Spec.Selector, TemplateLabels: o.Spec.Template.Labels,
			Replicas: ptr.Deref(o.Spec.Replicas, 1), Ready: o.Status.ReadyReplicas, Available: o.Status.AvailableReplicas}, nil
	case *appsv1.StatefulSet:
		return &Workload{Resource: StatefulSets, Namespace: o.Namespace, Name: o.Name, Labels: o.Labels,
			Owners: o.OwnerReferences, Selector: o.Spec.Selector, TemplateLabels: o.Spec.Template.Labels,
			Replicas: ptr.Deref(o.Spec.Replicas, 1), Ready: o.Status.ReadyReplicas, Available: o.Status.AvailableReplicas}, nil
	}
	return nil, fmt.Errorf("got %T, want a Deployment or a StatefulSet", o)
}
