package operator

import (
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// trainJobKind judges a TrainJob of Kubeflow Trainer v2.0: no condition
// while it runs, Complete or Suspended when idle, and a JobSet it owns that
// owns Jobs that own the pods.
var trainJobKind = checks.ResourceKind{
	CRD:              "trainjobs.trainer.kubeflow.org",
	IdleConditions:   []string{"Complete", "Suspended"},
	FailedConditions: []string{"Failed"},
	ChildLabel:       "jobset.sigs.k8s.io/jobset-name",
	Children:         []string{"jobsets.jobset.x-k8s.io", "Job"},
}

func ownedBy(kind, name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{Kind: kind, Name: name, UID: uid}}
}

// trainJob is a TrainJob named t1 with the given conditions, and the chain
// a reconcile leaves: JobSet t1 -> Job t1-node-0 -> Pod t1-node-0-0-x.
func trainJob(t *testing.T, phase corev1.PodPhase, conds ...map[string]any) (*unstructured.Unstructured, family) {
	t.Helper()
	tj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob"}}
	tj.SetNamespace("ml")
	tj.SetName("t1")
	tj.SetUID("uid-tj")
	if len(conds) > 0 {
		var cs []any
		for _, c := range conds {
			cs = append(cs, c)
		}
		require.NoError(t, unstructured.SetNestedSlice(tj.Object, cs, "status", "conditions"))
	}
	js := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"}}
	js.SetNamespace("ml")
	js.SetName("t1")
	js.SetUID("uid-js")
	js.SetOwnerReferences(ownedBy("TrainJob", "t1", "uid-tj"))
	label := map[string]string{trainJobKind.ChildLabel: "t1"}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "t1-node-0", UID: "uid-job", Labels: label,
		OwnerReferences: ownedBy("JobSet", "t1", "uid-js")}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "t1-node-0-0-x", UID: "uid-pod", Labels: label,
		OwnerReferences: ownedBy("Job", "t1-node-0", "uid-job")},
		Status: corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	return tj, family{jobs: []*batchv1.Job{job}, pods: []*corev1.Pod{pod},
		custom: map[string][]*unstructured.Unstructured{"jobsets.jobset.x-k8s.io": {js}}, kinds: map[string]string{"jobsets.jobset.x-k8s.io": "JobSet"}}
}

func cond(typ, status, reason string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": reason + " happened"}
}

func TestJudgeTrainJob(t *testing.T) {
	t.Run("complete, its JobSet kept, its pod finished", func(t *testing.T) {
		tj, f := trainJob(t, corev1.PodSucceeded, cond("Complete", "True", "AllJobsCompleted"))
		assert.Empty(t, judgeCR(tj, trainJobKind, f))
	})
	t.Run("complete, its pods and Jobs cleaned up", func(t *testing.T) {
		tj, f := trainJob(t, corev1.PodSucceeded, cond("Complete", "True", "AllJobsCompleted"))
		f.jobs, f.pods = nil, nil
		assert.Empty(t, judgeCR(tj, trainJobKind, f))
	})
	t.Run("running: no condition, a Running and Ready pod through JobSet and Job", func(t *testing.T) {
		tj, f := trainJob(t, corev1.PodRunning)
		assert.Empty(t, judgeCR(tj, trainJobKind, f))
	})
	t.Run("running, but its pod not yet running", func(t *testing.T) {
		tj, f := trainJob(t, corev1.PodPending)
		assert.Equal(t, []string{"none of its 1 pod(s) Running and Ready"}, judgeCR(tj, trainJobKind, f))
	})
	t.Run("failed", func(t *testing.T) {
		tj, f := trainJob(t, corev1.PodFailed, cond("Failed", "True", "JobSetFailed"))
		assert.Equal(t, []string{"Failed=True JobSetFailed: JobSetFailed happened", "none of its 1 pod(s) Running and Ready"}, judgeCR(tj, trainJobKind, f))
	})
	t.Run("suspended by a queue: a JobSet, no pod", func(t *testing.T) {
		tj, f := trainJob(t, corev1.PodPending, cond("Suspended", "True", "Suspended"))
		f.pods = nil
		assert.Empty(t, judgeCR(tj, trainJobKind, f))
	})
	t.Run("complete, but no JobSet owned: not reconciled by this controller", func(t *testing.T) {
		tj, f := trainJob(t, corev1.PodSucceeded, cond("Complete", "True", "AllJobsCompleted"))
		f.custom["jobsets.jobset.x-k8s.io"][0].SetOwnerReferences(ownedBy("TrainJob", "t0", "uid-other"))
		assert.Equal(t, []string{"owns no JobSet"}, judgeCR(tj, trainJobKind, f))
	})
	t.Run("a pod of another JobSet's Job is not its own", func(t *testing.T) {
		tj, f := trainJob(t, corev1.PodRunning)
		f.jobs[0].OwnerReferences = ownedBy("JobSet", "t0", "uid-other")
		assert.Equal(t, []string{"owns no Job", "owns no Pod"}, judgeCR(tj, trainJobKind, f))
	})
	t.Run("suspended is not ready for a kind that asks Ready", func(t *testing.T) {
		k := checks.ResourceKind{CRD: "widgets.demo.example.com", ReadyConditions: []string{"Ready"}}
		tj, f := trainJob(t, corev1.PodRunning, cond("Ready", "False", "Waiting"))
		assert.Equal(t, []string{"Ready=False Waiting"}, judgeCR(tj, k, f))
	})
}
