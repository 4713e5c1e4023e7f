package operator_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const leaseUUID = "_6c1f0a9e-2b4d-4e8f-9a7c-5d3e1b2f4a60"

func TestControllerLease(t *testing.T) {
	renewedAgo := func(w *checkstest.World, d time.Duration) {
		w.Lease.Spec.RenewTime = checkstest.Ptr(metav1.NewMicroTime(checkstest.JudgeAt.Add(-d)))
	}
	holder := func(w *checkstest.World, h string) { w.Lease.Spec.HolderIdentity = checkstest.Ptr(h) }
	// A name longer than a hostname may be: the kubelet cuts it to 63
	// characters and drops the trailing dash.
	const longName = "widget-controller-with-a-very-long-deployment-name-7c9d5f6b8-abcde"
	tests := []struct {
		name   string
		tweak  func(w *checkstest.World)
		status checks.Status
		reason string
	}{
		{"healthy", nil, checks.Pass,
			"Lease demo-system/widget-controller-leader held by controller pod widget-controller-7c9d-abcde (holder widget-controller-7c9d-abcde" + leaseUUID + "), renewed 4s before judging, within its 15s lease duration"},
		{"renewed just inside the lease duration", func(w *checkstest.World) { renewedAgo(w, 14*time.Second) }, checks.Pass, "renewed 14s before judging"},
		{"renewed exactly one lease duration ago: expired", func(w *checkstest.World) { renewedAgo(w, 15*time.Second) }, checks.Fail,
			"Lease demo-system/widget-controller-leader is stale: last renewed at 2026-06-01T11:59:45Z by widget-controller-7c9d-abcde" + leaseUUID + ", 15s before judging, with a lease duration of 15s: the leader stopped renewing"},
		{"stale for ten minutes", func(w *checkstest.World) { renewedAgo(w, 10*time.Minute) }, checks.Fail,
			"last renewed at 2026-06-01T11:50:00Z by widget-controller-7c9d-abcde" + leaseUUID + ", 10m0s before judging"},
		{"the leader's clock runs ahead", func(w *checkstest.World) { renewedAgo(w, -2*time.Second) }, checks.Pass, "renewed 2s after the time of judging (clocks differ)"},
		{"held by something that is no controller pod", func(w *checkstest.World) { holder(w, "laptop-of-dev"+leaseUUID) }, checks.Fail,
			"Lease demo-system/widget-controller-leader is held by laptop-of-dev" + leaseUUID + ", and none of the controller pods (widget-controller-7c9d-abcde) has that hostname: something else holds the lock"},
		{"a hostname that only starts the pod's name is not it", func(w *checkstest.World) { holder(w, "widget-controller-7c9d-abcdef"+leaseUUID) }, checks.Fail,
			"none of the controller pods (widget-controller-7c9d-abcde) has that hostname"},
		{"stale and held by a stranger: both said", func(w *checkstest.World) {
			holder(w, "old-install-5d4f"+leaseUUID)
			renewedAgo(w, time.Hour)
		}, checks.Fail, "something else holds the lock; Lease demo-system/widget-controller-leader is stale"},
		{"the bare hostname as identity", func(w *checkstest.World) { holder(w, "widget-controller-7c9d-abcde") }, checks.Pass, "held by controller pod widget-controller-7c9d-abcde"},
		{"spec.hostname is the pod's hostname", func(w *checkstest.World) {
			w.ControllerPod.Spec.Hostname = "vm"
			holder(w, "vm"+leaseUUID)
		}, checks.Pass, "held by controller pod widget-controller-7c9d-abcde (holder vm" + leaseUUID + ")"},
		{"with spec.hostname, the pod's name is not its hostname", func(w *checkstest.World) { w.ControllerPod.Spec.Hostname = "vm" }, checks.Fail,
			"none of the controller pods (widget-controller-7c9d-abcde) has that hostname"},
		{"a long pod name is cut to 63 characters", func(w *checkstest.World) {
			w.ControllerPod.Name = longName
			holder(w, strings.TrimRight(longName[:63], "-")+leaseUUID)
		}, checks.Pass, "held by controller pod " + longName},
		{"a hostname as FQDN", func(w *checkstest.World) {
			w.ControllerPod.Spec.Hostname, w.ControllerPod.Spec.Subdomain = "ctl-0", "widget-controller"
			w.ControllerPod.Spec.SetHostnameAsFQDN = checkstest.Ptr(true)
			holder(w, "ctl-0.widget-controller.demo-system.svc.cluster.local"+leaseUUID)
		}, checks.Pass, "held by controller pod widget-controller-7c9d-abcde"},
		{"released: no holder", func(w *checkstest.World) { w.Lease.Spec.HolderIdentity = nil }, checks.Fail,
			"Lease demo-system/widget-controller-leader has no holder: the last leader released it and no controller replica took it"},
		{"an empty holder is no holder", func(w *checkstest.World) { holder(w, "") }, checks.Fail, "has no holder"},
		{"never renewed", func(w *checkstest.World) { w.Lease.Spec.RenewTime = nil }, checks.Fail,
			"Lease demo-system/widget-controller-leader, held by widget-controller-7c9d-abcde" + leaseUUID + ", was never renewed (no spec.renewTime)"},
		{"no lease duration: cannot judge", func(w *checkstest.World) { w.Lease.Spec.LeaseDurationSeconds = nil }, checks.Error,
			"Lease demo-system/widget-controller-leader has no spec.leaseDurationSeconds: how long its holder leads cannot be told"},
		{"no Lease, one replica: leader election off", func(w *checkstest.World) { w.Lease = nil }, checks.Warn,
			"no Lease demo-system/widget-controller-leader: leader election is off, which is allowed for a single replica (1 controller pod), but nothing shows which controller leads"},
		{"a Lease of another name does not count", func(w *checkstest.World) { w.Lease.Name = "other-leader" }, checks.Warn, "no Lease demo-system/widget-controller-leader"},
		{"no Lease, two replicas: they race", func(w *checkstest.World) {
			w.Lease = nil
			second := w.ControllerPod.DeepCopy()
			second.Name = "widget-controller-7c9d-fghij"
			w.Pods = append(w.Pods, second)
		}, checks.Fail, "no Lease demo-system/widget-controller-leader, yet 2 controller pods run (widget-controller-7c9d-abcde, widget-controller-7c9d-fghij): without leader election they reconcile concurrently"},
		{"a finished pod is no replica", func(w *checkstest.World) {
			w.Lease = nil
			done := w.ControllerPod.DeepCopy()
			done.Name = "widget-controller-7c9d-old00"
			done.Status.Phase = corev1.PodFailed
			w.Pods = append(w.Pods, done)
		}, checks.Warn, "(1 controller pod)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := checkstest.RunWorld(t, builtin.Registry(), tc.tweak)
			r := checkstest.Result(t, out, "controller-lease", "widgets")
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
			if tc.status == checks.Fail {
				assert.NotEmpty(t, r.Details, "a failure lists its findings")
			}
		})
	}
}

func TestControllerLeaseEvidence(t *testing.T) {
	r := checkstest.Result(t, checkstest.RunWorld(t, builtin.Registry(), nil), "controller-lease", "widgets")
	require.Equal(t, checks.Pass, r.Status, r.Reason)
	require.Len(t, r.Evidence, 3)
	assert.Equal(t, "kubectl get lease widget-controller-leader -n demo-system", r.Evidence[0].Command)
	assert.Equal(t, "kubectl get lease widget-controller-leader -n demo-system -o "+
		"custom-columns=NAME:.metadata.name,HOLDER:.spec.holderIdentity,RENEWED:.spec.renewTime,DURATION:.spec.leaseDurationSeconds", r.Evidence[1].Command)
	// Custom columns print from the objects, so the fake shows them.
	assert.Equal(t, ""+
		"NAME                       HOLDER                                                              RENEWED                       DURATION\n"+
		"widget-controller-leader   widget-controller-7c9d-abcde_6c1f0a9e-2b4d-4e8f-9a7c-5d3e1b2f4a60   2026-06-01T11:59:56.000000Z   15\n",
		r.Evidence[1].Output)
	assert.Equal(t, "kubectl get pods -n demo-system -l app=widget-controller -o custom-columns=NAME:.metadata.name,HOSTNAME:.spec.hostname,NODE:.spec.nodeName", r.Evidence[2].Command)
	assert.Equal(t, "NAME                           HOSTNAME   NODE\nwidget-controller-7c9d-abcde   <none>     cpu-node-1\n", r.Evidence[2].Output)

	// A missing Lease shows as kubectl shows it.
	r = checkstest.Result(t, checkstest.RunWorld(t, builtin.Registry(), func(w *checkstest.World) { w.Lease = nil }), "controller-lease", "widgets")
	require.Equal(t, checks.Warn, r.Status, r.Reason)
	assert.Equal(t, `Error from server (NotFound): leases.coordination.k8s.io "widget-controller-leader" not found`+"\n", r.Evidence[1].Output)
}

func TestControllerLeaseWithoutProfileLease(t *testing.T) {
	yaml := strings.Replace(checkstest.WidgetProfileYAML, "  lease: widget-controller-leader\n", "", 1)
	require.NotEqual(t, checkstest.WidgetProfileYAML, yaml)
	ps, err := checks.ParseProfiles("widgets.yaml", []byte(yaml))
	require.NoError(t, err)
	out := checkstest.NewWorld(t).Serve().Run(builtin.Registry(), ps)
	r := checkstest.Result(t, out, "controller-lease", "widgets")
	assert.Equal(t, checks.Skip, r.Status)
	assert.Equal(t, "profile widgets names no leader-election lease (controller.lease)", r.Reason)
	assert.Empty(t, r.Evidence)
}

// Every built-in profile names its operator's lease, and the ones the rig
// runs are those its operators write (e2e/liveness_test.go shows them
// held). Trainer v2.0 elects no leader, so it has none.
func TestBuiltinProfilesNameLeases(t *testing.T) {
	want := map[string]string{
		"kserve":            "kserve-controller-manager-leader-lock",
		"kuberay":           "ray-operator-leader",
		"kueue":             "c1f6bfd2.kueue.x-k8s.io",
		"kubeflow-training": "1ca428e5.training-operator.kubeflow.org",
		"kubeflow-trainer":  "",
		"aibrix":            "aibrix-controller-manager",
		"nim-operator":      "a0715c6e.nvidia.com",
		"mpi-operator":      "mpi-operator",
	}
	for _, p := range checkstest.BuiltinProfiles(t) {
		assert.Equal(t, want[p.Name], p.Controller.Lease, p.Name)
	}
}
