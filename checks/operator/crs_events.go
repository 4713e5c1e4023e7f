package operator

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// recentEvents is how far back a Warning event counts as a current
// problem rather than history.
const recentEvents = time.Hour

// maxEventLines bounds the findings named in a reason; Details hold all.
const maxEventLines = 3

// maxEventMessage bounds an event message quoted in a finding.
const maxEventMessage = 200

// conflictMessage is how the API server refuses an update written over a
// stale resourceVersion (k8s.io/apiserver's OptimisticLockErrorMsg).
// Controllers that record their reconcile errors as events (KServe)
// record these too: the update is retried at once, and says nothing of the
// resource's health.
const conflictMessage = "the object has been modified; please apply your changes to the latest version and try again"

// warningEvents is the one LIST of events every operator's check shares:
// Warning events of the whole cluster, filtered by the server.
var warningEvents = cluster.Query{Resource: cluster.Events, FieldSelector: "type=" + corev1.EventTypeWarning}

// CRsEvents checks that nothing reported trouble with the operator's
// custom resources in the last hour.
type CRsEvents struct{}

// Meta implements checks.Check.
func (CRsEvents) Meta() checks.Meta {
	return checks.Meta{
		ID:          "crs-events",
		Title:       "No recent Warning events on custom resources",
		Requirement: "robust_controller",
		PerOperator: true,
		Description: "Warning events whose involved object is a custom resource of the kinds the profile names " +
			"(matched by API group and kind) and that were last seen within the hour before the time of " +
			"judging (lastTimestamp, or for events written through events.k8s.io their series' last " +
			"observation or eventTime) are reported one line per resource and reason (events on resources in " +
			"aiconform's probe namespaces are not counted, nor those of an update the API server refused as " +
			"written over a stale version, which controllers retry at once), with their count and latest message. They warn " +
			"and never fail: an event tells what happened, while whether the resources are reconciled now is " +
			"crs-reconciled's verdict. Older Warning events are history and pass. The events are read in one " +
			"LIST of the cluster's Warning events (field selector type=Warning), shared by every operator.",
		Remediation: "Read the events with the resource (`kubectl describe`) and the controller's logs around their " +
			"time. Recurring warnings (failed creates, webhook denials, quota refusals, invalid specs) are " +
			"what keeps a resource from becoming Ready or makes it flap.",
	}
}

// eventGroup is the Warning events of one resource with one reason.
type eventGroup struct {
	object, reason, message string
	count                   int32
	last                    time.Time
}

// Run implements checks.Check.
func (CRsEvents) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	p := env.Profile
	if len(p.Resources) == 0 {
		r.Finish(checks.Skip, "profile %s names no custom resource kind to judge", p.Name)
		return r, nil
	}
	crds, err := checks.List[*apiextensionsv1.CustomResourceDefinition](ctx, env, cluster.Query{Resource: cluster.CRDs})
	if err != nil {
		return r, err
	}
	kinds := map[schema.GroupKind]bool{}
	var names []string
	for _, k := range p.Resources {
		crd := kube.FindCRD(crds, k.CRD)
		if crd == nil {
			continue // crds-established and crs-reconciled say so
		}
		gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
		if kinds[gk] {
			continue
		}
		kinds[gk] = true
		names = append(names, gk.Kind)
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Events},
			FieldSelector: warningEvents.FieldSelector + ",involvedObject.kind=" + gk.Kind}, "")
	}
	if len(kinds) == 0 {
		r.Finish(checks.Skip, "none of the CRDs whose resources profile %s judges is installed", p.Name)
		return r, nil
	}
	events, err := checks.List[*corev1.Event](ctx, env, warningEvents)
	if err != nil {
		return r, err
	}
	now := env.Now()
	groups := map[string]*eventGroup{}
	older, conflicts := 0, 0
	for _, e := range events {
		// The field selector already keeps Warnings; checking again costs
		// nothing and keeps the verdict right whatever served the list.
		if e.Type != corev1.EventTypeWarning {
			continue
		}
		gv, err := schema.ParseGroupVersion(e.InvolvedObject.APIVersion)
		if err != nil || !kinds[schema.GroupKind{Group: gv.Group, Kind: e.InvolvedObject.Kind}] {
			continue
		}
		if _, ok := checks.ProbeRun(nil, e.InvolvedObject.Namespace); ok {
			continue // about a probe's canary, not the cluster's own resources
		}
		last := eventLastSeen(e)
		if now.Sub(last) > recentEvents {
			older++
			continue
		}
		if strings.Contains(e.Message, conflictMessage) {
			conflicts++
			continue
		}
		object := e.InvolvedObject.Kind + " " + e.InvolvedObject.Name
		if e.InvolvedObject.Namespace != "" {
			object = e.InvolvedObject.Kind + " " + e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
		}
		key := object + "\x00" + e.Reason
		g := groups[key]
		if g == nil {
			g = &eventGroup{object: object, reason: e.Reason}
			groups[key] = g
		}
		g.count += eventCount(e)
		if !last.Before(g.last) {
			g.last, g.message = last, e.Message
		}
	}
	var notCounted []string
	if older > 0 {
		notCounted = append(notCounted, checks.Plural(older, "Warning event")+" older than an hour")
	}
	if conflicts > 0 {
		notCounted = append(notCounted, checks.Plural(conflicts, "update conflict")+" the controller retried")
	}
	history := ""
	if len(notCounted) > 0 {
		history = " (" + strings.Join(notCounted, ", ") + ", not counted)"
	}
	if len(groups) == 0 {
		r.Finish(checks.Pass, "no Warning event on %s in the last hour%s", strings.Join(names, ", "), history)
		return r, nil
	}
	found := make([]*eventGroup, 0, len(groups))
	for _, g := range groups {
		found = append(found, g)
	}
	sort.Slice(found, func(i, j int) bool {
		if !found[i].last.Equal(found[j].last) {
			return found[i].last.After(found[j].last)
		}
		if found[i].object != found[j].object {
			return found[i].object < found[j].object
		}
		return found[i].reason < found[j].reason
	})
	var total int32
	objects := map[string]bool{}
	for _, g := range found {
		total += g.count
		objects[g.object] = true
		r.Details = append(r.Details, fmt.Sprintf("%s: %s ×%d, last seen %s before judging: %s",
			g.object, g.reason, g.count, kube.Age(max(now.Sub(g.last), 0)), shorten(g.message, maxEventMessage)))
	}
	shown := r.Details
	more := ""
	if len(shown) > maxEventLines {
		more = fmt.Sprintf("; and %d more", len(shown)-maxEventLines)
		shown = shown[:maxEventLines]
	}
	r.Finish(checks.Warn, "%s on %s in the last hour%s: %s%s", checks.Plural(int(total), "Warning event"), checks.Plural(len(objects), "custom resource"),
		history, strings.Join(shown, "; "), more)
	return r, nil
}

// eventLastSeen is when an event was last observed: lastTimestamp for the
// core API's events, the series' last observation or eventTime for those
// written through events.k8s.io, the first sighting or the object's
// creation when nothing later is set.
func eventLastSeen(e *corev1.Event) time.Time {
	last := e.LastTimestamp.Time
	if e.Series != nil && e.Series.LastObservedTime.Time.After(last) {
		last = e.Series.LastObservedTime.Time
	}
	if e.EventTime.Time.After(last) {
		last = e.EventTime.Time
	}
	if last.IsZero() {
		last = e.FirstTimestamp.Time
	}
	if last.IsZero() {
		last = e.CreationTimestamp.Time
	}
	return last
}

// eventCount is how many times an event was seen: count for the core API's
// events, the series' count for events.k8s.io's, at least once.
func eventCount(e *corev1.Event) int32 {
	n := e.Count
	if e.Series != nil && e.Series.Count > n {
		n = e.Series.Count
	}
	return max(n, 1)
}

// shorten cuts s to n runes, on one line.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
