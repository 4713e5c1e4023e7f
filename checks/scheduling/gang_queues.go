package scheduling

import (
	"context"
	"fmt"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// GangQueues judges the gang scheduler's queues: a gang can only be
// admitted through an Active queue, so a scheduler whose queues are all
// inactive admits nothing, however healthy its controller.
type GangQueues struct{}

// Meta implements checks.Check.
func (GangQueues) Meta() checks.Meta {
	return checks.Meta{
		ID: "gang-queues", Title: "The gang scheduler's queues are Active",
		Requirement: "gang_scheduling", PerOperator: true,
		Description: "Lists the queue kinds the solution's profile names (Kueue: ClusterQueues, then LocalQueues in " +
			"every namespace; Volcano: Queues) and reads each queue's conditions, or the field the profile " +
			"names (Volcano: status.state, Open). Passes when at least one queue of the first " +
			"kind is Active and no queue is inactive; an inactive queue is named with the reason the " +
			"scheduler gives (a missing ResourceFlavor, a stopped or closed queue). Queues a probe run created " +
			"(labelled aiconform.io/run) are not judged. No queue of the first kind warns: the scheduler " +
			"works, but admits nothing of the cluster's own until an admin creates one. A solution with no " +
			"queue kind (scheduler-plugins' coscheduling) skips.",
		Remediation: "Create a queue with quota for the accelerators the workloads request (Kueue: a ResourceFlavor, " +
			"a ClusterQueue whose resourceGroups cover them, and a LocalQueue in each namespace that submits " +
			"jobs); for an inactive queue, the reason names what it is missing.",
	}
}

// Run implements checks.Check.
func (GangQueues) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	g := env.Profile.Gang
	if g == nil {
		return r, fmt.Errorf("the %s profile says nothing of gangs (gang:)", env.Profile.Name)
	}
	if len(g.Queues) == 0 {
		r.Finish(checks.Skip, "%s has no queue kind: it admits a gang when all of its pods can be placed, not through a queue", env.Profile.Title)
		return r, nil
	}
	var active, inactive []string
	firstActive, firstKind := 0, ""
	for i, q := range g.Queues {
		res, err := checks.CustomResource(ctx, env, q.CRD)
		if err != nil {
			return r, err
		}
		if i == 0 {
			firstKind = res.Kind
		}
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{res}, AllNamespaces: res.Namespaced}, "")
		objs, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: res})
		if err != nil {
			return r, err
		}
		for _, o := range objs {
			if _, ok := checks.ProbeRun(o.GetLabels(), o.GetNamespace()); ok {
				continue
			}
			name := res.Kind + " " + kube.ObjectName(o)
			if missing := notReady(o, q); len(missing) > 0 {
				inactive = append(inactive, name+": "+strings.Join(missing, "; "))
				continue
			}
			active = append(active, name)
			if i == 0 {
				firstActive++
			}
		}
	}
	r.Details = inactive
	switch {
	case len(inactive) > 0:
		r.Finish(checks.Fail, "%d of %s not Active: %s", len(inactive), checks.Plural(len(inactive)+len(active), "queue"), inactive[0])
	case firstActive == 0:
		// The solution works (the probe brings a queue of its own), but the
		// cluster's users cannot submit a gang until an admin adds one.
		r.Finish(checks.Warn, "no %s: %s admits no workload of the cluster's own until one is created", firstKind, env.Profile.Title)
	default:
		r.Finish(checks.Pass, "%s Active (%s)", checks.Plural(len(active), "queue"), checks.CapLines(active, 4, ", "))
	}
	return r, nil
}

// notReady says why queue u of kind q admits nothing: its conditions not
// True, or its state field's value; nothing when it admits.
func notReady(u *unstructured.Unstructured, q checks.GangQueue) []string {
	st := q.ReadyState
	if st == nil {
		return notTrue(u, q.ReadyConditions)
	}
	switch v, _ := checks.StringAt(u, st.Field); {
	case v == "":
		return []string{st.Field + " not reported"}
	case !checks.Contains(st.Values, v):
		return []string{fmt.Sprintf("%s=%s, not %s", st.Field, v, strings.Join(st.Values, " or "))}
	}
	return nil
}

// notTrue lists the conditions of want that are not True, each with the
// reason the object gives.
func notTrue(u *unstructured.Unstructured, want []string) []string {
	cs := kube.Conditions(u)
	var out []string
	for _, t := range want {
		c, ok := kube.FindCondition(cs, t)
		switch {
		case !ok:
			out = append(out, t+" not reported")
		case c.Status != "True":
			why := c.Reason
			if c.Message != "" {
				why += ": " + c.Message
			}
			out = append(out, fmt.Sprintf("%s=%s (%s)", t, c.Status, why))
		}
	}
	return out
}
