// Package kube holds what aiconform reads of Kubernetes objects the same
// way wherever it reads them: whether a pod or node is Ready (Unknown is
// not), a pod's health and restart history, an object's conditions, the
// resource a CRD serves, and how messages name an object.
package kube

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// PodReady is true only for a Ready condition that is True: Unknown is not
// Ready.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Condition is one entry of an object's status.conditions.
type Condition struct {
	Type, Status, Reason, Message string
}

// Conditions reads status.conditions of a custom resource.
func Conditions(u *unstructured.Unstructured) []Condition {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var cs []Condition
	for _, x := range raw {
		m, ok := x.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		cs = append(cs, Condition{Type: str("type"), Status: str("status"), Reason: str("reason"), Message: str("message")})
	}
	return cs
}

// FindCondition is the first of cs of type t.
func FindCondition(cs []Condition, t string) (Condition, bool) {
	for _, c := range cs {
		if c.Type == t {
			return c, true
		}
	}
	return Condition{}, false
}

// Age is a short duration like kubectl's AGE column, for messages.
func Age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return d.Round(time.Minute).String()
	default:
		return d.Round(time.Hour).String()
	}
}

// recentRestart is how recent a container's last termination must be for its
// restarts to count as ongoing rather than history.
const recentRestart = time.Hour

// PodHealth lists what makes a pod unhealthy (fails) or suspicious (warns):
// a container that restarted within the last hour warns.
func PodHealth(p *corev1.Pod, now time.Time) (fails, warns []string) {
	if p.Status.Phase != corev1.PodRunning {
		fails = append(fails, fmt.Sprintf("pod %s is %s", p.Name, p.Status.Phase))
	} else if !PodReady(p) {
		fails = append(fails, fmt.Sprintf("pod %s is not Ready", p.Name))
	}
	for _, cs := range containerStatuses(p) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			fails = append(fails, fmt.Sprintf("pod %s container %s is waiting: %s %s", p.Name, cs.Name, w.Reason, w.Message))
		}
		if t := cs.State.Terminated; t != nil && p.Status.Phase == corev1.PodRunning && !isInitStatus(p, cs.Name) {
			fails = append(fails, fmt.Sprintf("pod %s container %s has terminated (%s, exit code %d)", p.Name, cs.Name, t.Reason, t.ExitCode))
		}
		if t := cs.LastTerminationState.Terminated; cs.RestartCount > 0 && t != nil && now.Sub(t.FinishedAt.Time) < recentRestart {
			warns = append(warns, fmt.Sprintf("pod %s container %s restarted %d times, last %s ago (%s, exit code %d)",
				p.Name, cs.Name, cs.RestartCount, Age(now.Sub(t.FinishedAt.Time)), t.Reason, t.ExitCode))
		}
	}
	return fails, warns
}

// RestartHistory reports restarts that are not recent, one line per
// container, so that a report still shows a controller that was OOMKilled
// yesterday; they do not change the verdict.
func RestartHistory(p *corev1.Pod, now time.Time) []string {
	var out []string
	for _, cs := range containerStatuses(p) {
		if cs.RestartCount == 0 {
			continue
		}
		t := cs.LastTerminationState.Terminated
		switch {
		case t == nil:
			out = append(out, fmt.Sprintf("pod %s container %s restarted %d times (its last termination is not recorded)", p.Name, cs.Name, cs.RestartCount))
		case now.Sub(t.FinishedAt.Time) >= recentRestart:
			out = append(out, fmt.Sprintf("pod %s container %s restarted %d times, last %s ago (%s, exit code %d): not recent, not counted",
				p.Name, cs.Name, cs.RestartCount, Age(now.Sub(t.FinishedAt.Time)), t.Reason, t.ExitCode))
		}
	}
	return out
}

// containerStatuses are a pod's init containers' statuses, sidecars among
// them, then its containers'.
func containerStatuses(p *corev1.Pod) []corev1.ContainerStatus {
	return append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
}

// isInitStatus is true when name is one of the pod's init containers that
// runs to completion: its terminated state is success, not a crash. Sidecars
// (restartPolicy Always) keep running like containers.
func isInitStatus(p *corev1.Pod, name string) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == name {
			return c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// FindCRD is the CRD called name (plural.group) among crds, or nil.
func FindCRD(crds []*apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinition {
	for _, c := range crds {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// CRDResource is the resource kubectl would use for the CRD: its preferred
// version is the served one of highest priority, as discovery orders them.
func CRDResource(crd *apiextensionsv1.CustomResourceDefinition) cluster.Resource {
	var served []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served = append(served, v.Name)
		}
	}
	sort.Slice(served, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(served[i], served[j]) > 0 })
	v := ""
	if len(served) > 0 {
		v = served[0]
	}
	return cluster.Resource{
		GVR:        schema.GroupVersionResource{Group: crd.Spec.Group, Version: v, Resource: crd.Spec.Names.Plural},
		Kind:       crd.Spec.Names.Kind,
		Arg:        crd.Spec.Names.Plural + "." + crd.Spec.Group,
		Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
	}
}

// ObjectName is namespace/name, or the name of a cluster-scoped object, as
// messages name an object.
func ObjectName(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

// NodeReady is a node's Ready condition and why: Unknown when it reports
// none, which is not Ready either.
func NodeReady(n *corev1.Node) (corev1.ConditionStatus, string) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status, strings.TrimSpace(c.Reason + " " + c.Message)
		}
	}
	return corev1.ConditionUnknown, "no Ready condition"
}
