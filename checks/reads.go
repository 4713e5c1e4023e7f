package checks

import (
	"context"
	"strings"
	"time"

	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// list reads q through the shared cache as objects of type T.
func list[T any](ctx context.Context, env *Env, q cluster.Query) ([]T, error) {
	objs, _, err := env.Cluster.List(ctx, q)
	if err != nil {
		return nil, err
	}
	return typed[T](objs, q.Resource)
}

// podReady is true only for a Ready condition that is True: Unknown is not
// Ready.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// condition is one entry of an object's status.conditions.
type condition struct {
	Type, Status, Reason, Message string
}

// conditions reads status.conditions of a custom resource.
func conditions(u *unstructured.Unstructured) []condition {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var cs []condition
	for _, x := range raw {
		m, ok := x.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		cs = append(cs, condition{Type: str("type"), Status: str("status"), Reason: str("reason"), Message: str("message")})
	}
	return cs
}

func findCondition(cs []condition, t string) (condition, bool) {
	for _, c := range cs {
		if c.Type == t {
			return c, true
		}
	}
	return condition{}, false
}

// age is a short duration like kubectl's AGE column, for messages.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return d.Round(time.Minute).String()
	default:
		return d.Round(time.Hour).String()
	}
}

// probeRun names the aiconform probe run that made an object: the run label
// on the object, or the probe namespace it lives in. Read-only checks judge
// the cluster's own workloads, never these: a canary of another run still
// in flight, or one a killed run left behind, says nothing of the cluster.
// (This run's own probes write only after every read-only check is done.)
func probeRun(labels map[string]string, namespace string) (string, bool) {
	if run, ok := labels[probe.RunLabel]; ok {
		return run, true
	}
	if run, ok := strings.CutPrefix(namespace, probe.NamespacePrefix); ok {
		return run, true
	}
	return "", false
}
