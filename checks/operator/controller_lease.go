package operator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
)

// leaseColumns show what the verdict reads from a Lease: who holds it, when
// it was last renewed, and for how long a renewal counts.
const leaseColumns = "NAME:.metadata.name,HOLDER:.spec.holderIdentity,RENEWED:.spec.renewTime,DURATION:.spec.leaseDurationSeconds"

// hostnameColumns show each controller pod's hostname, which starts the
// identity its leader writes into the Lease.
const hostnameColumns = "NAME:.metadata.name,HOSTNAME:.spec.hostname,NODE:.spec.nodeName"

// maxHostnameLength is the kubelet's limit: a longer pod name is cut to it
// to make the pod's hostname.
const maxHostnameLength = 63

// ControllerLease checks that the operator's controller leads: a pod of it
// holds the leader-election Lease and keeps renewing it.
type ControllerLease struct{}

// Meta implements checks.Check.
func (ControllerLease) Meta() checks.Meta {
	return checks.Meta{
		ID:          "controller-lease",
		Title:       "The controller holds a fresh leader lease",
		Requirement: "robust_controller",
		PerOperator: true,
		Description: "The profile's leader-election Lease (the operator's LeaderElectionID, `controller.lease`) in " +
			"the namespace where its controller was found (controller-ready says where and how) must be held " +
			"by one of the controller's pods and renewed in time: spec.renewTime plus " +
			"spec.leaseDurationSeconds after the time of judging. client-go and controller-runtime write the " +
			"holder as `<hostname>_<uuid>`, and a pod's hostname is its spec.hostname, or else its name cut " +
			"to 63 characters. A stale Lease fails, naming the last renewal and the holder: the leader " +
			"stopped renewing, so it hangs or is gone, though its pod may still look Running. A holder that " +
			"is no controller pod fails, naming it: something else holds the lock and the controller waits. " +
			"A Lease without a holder fails: no replica leads. No Lease warns, since running without leader " +
			"election is allowed for one replica, and fails when more than one controller pod runs: they " +
			"would reconcile concurrently. A profile without a lease skips. The Leases of the controller " +
			"namespace are read in one LIST.",
		Remediation: "For a stale Lease, read the leader's logs (`kubectl logs` of the pod the holder names) and " +
			"restart it; it may be deadlocked or cut off from the API server. For a holder that is no " +
			"controller pod, find what holds the lock (an old install in another namespace sharing the name, " +
			"a developer's local run) and stop it, or delete the Lease so a controller pod can take it. " +
			"Without a Lease, enable leader election (KServe `--leader-elect`, KubeRay " +
			"`--enable-leader-election`) before running more than one replica.",
	}
}

// Run implements checks.Check.
func (ControllerLease) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	p, in := env.Profile, env.Install
	c := p.Controller
	switch {
	case c.Lease == "":
		r.Finish(checks.Skip, "profile %s names no leader-election lease (controller.lease)", p.Name)
		return r, nil
	case env.LocateErr != nil:
		return r, fmt.Errorf("cannot look for %s's controller: %w", p.Title, env.LocateErr)
	case in == nil:
		// The Lease lives in the controller's namespace, and there is none.
		r.Finish(checks.Fail, "no controller of %s was found to hold Lease %s: %s", p.Title, c.Lease, checks.Searched(p))
		return r, nil
	}
	get := cluster.Get{Resources: []cluster.Resource{cluster.Leases}, Namespace: in.Namespace, Names: []string{c.Lease}}
	r.AddEvidence(ctx, env, get, "")
	cols := get
	cols.Columns = leaseColumns
	r.AddEvidence(ctx, env, cols, "holderIdentity is <hostname>_<uuid> of the leader; it leads until renewTime + leaseDurationSeconds")
	leases, err := checks.List[*coordinationv1.Lease](ctx, env, get.Queries()[0])
	if err != nil {
		return r, err
	}
	podsGet := cluster.Get{Resources: []cluster.Resource{cluster.Pods}, Namespace: in.Namespace, LabelSelector: in.Selector, Columns: hostnameColumns}
	r.AddEvidence(ctx, env, podsGet, "the controller pods: a pod's hostname is spec.hostname, or its name when that is unset")
	pods, err := checks.List[*corev1.Pod](ctx, env, podsGet.Queries()[0])
	if err != nil {
		return r, err
	}
	var running []*corev1.Pod
	for _, pod := range pods {
		if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			running = append(running, pod)
		}
	}

	id := in.Namespace + "/" + c.Lease
	var lease *coordinationv1.Lease
	for _, l := range leases {
		if l.Name == c.Lease {
			lease = l
		}
	}
	if lease == nil {
		if len(running) > 1 {
			r.Finish(checks.Fail, "no Lease %s, yet %d controller pods run (%s): without leader election they reconcile concurrently", id, len(running), podNames(running))
			r.Details = []string{r.Reason}
			return r, nil
		}
		r.Finish(checks.Warn, "no Lease %s: leader election is off, which is allowed for a single replica "+
			"(%s), but nothing shows which controller leads", id, checks.Plural(len(running), "controller pod"))
		return r, nil
	}

	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	if holder == "" {
		r.Finish(checks.Fail, "Lease %s has no holder: the last leader released it and no controller replica took it", id)
		r.Details = []string{r.Reason}
		return r, nil
	}
	if lease.Spec.RenewTime == nil {
		r.Finish(checks.Fail, "Lease %s, held by %s, was never renewed (no spec.renewTime)", id, holder)
		r.Details = []string{r.Reason}
		return r, nil
	}
	if lease.Spec.LeaseDurationSeconds == nil {
		return r, fmt.Errorf("Lease %s has no spec.leaseDurationSeconds: how long its holder leads cannot be told", id)
	}
	now := env.Now()
	renewed := lease.Spec.RenewTime.Time
	duration := time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	since := now.Sub(renewed)

	var fails []string
	leader := holderPod(holder, running)
	if leader == nil {
		where := fmt.Sprintf("no controller pod runs in namespace %s with labels %s", in.Namespace, in.Selector)
		if len(running) > 0 {
			where = "none of the controller pods (" + podNames(running) + ") has that hostname"
		}
		fails = append(fails, fmt.Sprintf("Lease %s is held by %s, and %s: something else holds the lock", id, holder, where))
	}
	if !renewed.Add(duration).After(now) {
		fails = append(fails, fmt.Sprintf("Lease %s is stale: last renewed at %s by %s, %s before judging, with a lease duration of %s: the leader stopped renewing",
			id, renewed.UTC().Format(time.RFC3339), holder, kube.Age(since), duration))
	}
	r.Details = fails
	if len(fails) > 0 {
		r.Finish(checks.Fail, "%s", strings.Join(fails, "; "))
		return r, nil
	}
	ago := kube.Age(since) + " before judging"
	if since < 0 {
		// The leader's clock runs ahead of the one judging: still fresh.
		ago = kube.Age(-since) + " after the time of judging (clocks differ)"
	}
	r.Finish(checks.Pass, "Lease %s held by controller pod %s (holder %s), renewed %s, within its %s lease duration", id, leader.Name, holder, ago, duration)
	return r, nil
}

// podHostname is the hostname the kubelet gives a pod: spec.hostname, or
// the pod's name, cut to 63 characters without a trailing dash or dot.
func podHostname(p *corev1.Pod) string {
	h := p.Spec.Hostname
	if h == "" {
		h = p.Name
	}
	if len(h) > maxHostnameLength {
		h = strings.TrimRight(h[:maxHostnameLength], "-.")
	}
	return h
}

// holderPod is the pod whose hostname starts the holder identity:
// `<hostname>_<uuid>` as client-go's and controller-runtime's leader
// election write it, the bare hostname, or the fully qualified one of a
// pod with setHostnameAsFQDN.
func holderPod(holder string, pods []*corev1.Pod) *corev1.Pod {
	for _, p := range pods {
		h := podHostname(p)
		if holder == h || strings.HasPrefix(holder, h+"_") {
			return p
		}
		if p.Spec.SetHostnameAsFQDN != nil && *p.Spec.SetHostnameAsFQDN && p.Spec.Subdomain != "" &&
			strings.HasPrefix(holder, h+"."+p.Spec.Subdomain+"."+p.Namespace+".") {
			return p
		}
	}
	return nil
}

func podNames(pods []*corev1.Pod) string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}
