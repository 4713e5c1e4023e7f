package operator_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// How a controller pod restarts, and why, is reported: recent restarts
// warn with count, reason and exit code; older ones are listed without
// changing the verdict; sidecars count as containers.
func TestControllerRestarts(t *testing.T) {
	terminated := func(reason string, code int32, ago time.Duration) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code, FinishedAt: metav1.NewTime(checkstest.JudgeAt.Add(-ago))}
	}
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name    string
		tweak   func(p *corev1.Pod)
		status  checks.Status
		reason  string
		details []string
	}{
		{
			name: "OOMKilled yesterday: listed, not counted",
			tweak: func(p *corev1.Pod) {
				cs := &p.Status.ContainerStatuses[0]
				cs.RestartCount, cs.LastTerminationState.Terminated = 12, terminated("OOMKilled", 137, 25*time.Hour)
			},
			status:  checks.Pass,
			reason:  "1 pod Running and Ready",
			details: []string{"pod widget-controller-7c9d-abcde container manager restarted 12 times, last 25h0m0s ago (OOMKilled, exit code 137): not recent, not counted"},
		},
		{
			name: "restarts without a recorded termination",
			tweak: func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].RestartCount = 2
			},
			status:  checks.Pass,
			details: []string{"pod widget-controller-7c9d-abcde container manager restarted 2 times (its last termination is not recorded)"},
		},
		{
			name: "Error ten minutes ago warns",
			tweak: func(p *corev1.Pod) {
				cs := &p.Status.ContainerStatuses[0]
				cs.RestartCount, cs.LastTerminationState.Terminated = 4, terminated("Error", 1, 10*time.Minute)
			},
			status:  checks.Warn,
			reason:  "but pod widget-controller-7c9d-abcde container manager restarted 4 times, last 10m0s ago (Error, exit code 1)",
			details: []string{"pod widget-controller-7c9d-abcde container manager restarted 4 times, last 10m0s ago (Error, exit code 1)"},
		},
		{
			name: "a container terminated in a Running pod fails with its reason",
			tweak: func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: terminated("OOMKilled", 137, time.Minute)}
			},
			status: checks.Fail,
			reason: "pod widget-controller-7c9d-abcde container manager has terminated (OOMKilled, exit code 137)",
		},
		{
			name: "a crash-looping sidecar fails",
			tweak: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "proxy", RestartCount: 9,
					State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 2m40s"}},
					LastTerminationState: corev1.ContainerState{Terminated: terminated("Error", 2, 2*time.Minute)}}}
			},
			status: checks.Fail,
			reason: "pod widget-controller-7c9d-abcde container proxy is waiting: CrashLoopBackOff back-off 2m40s",
			details: []string{
				"pod widget-controller-7c9d-abcde container proxy is waiting: CrashLoopBackOff back-off 2m40s",
				"pod widget-controller-7c9d-abcde container proxy restarted 9 times, last 2m0s ago (Error, exit code 2)",
			},
		},
		{
			name: "a completed init container is no crash",
			tweak: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "migrate"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "migrate",
					State: corev1.ContainerState{Terminated: terminated("Completed", 0, time.Hour)}}}
			},
			status: checks.Pass,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := checkstest.Result(t, checkstest.RunWorld(t, builtin.Registry(), func(w *checkstest.World) { tc.tweak(w.ControllerPod) }), "controller-ready", "widgets")
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
			if tc.details != nil {
				assert.Equal(t, tc.details, r.Details)
			} else if tc.status == checks.Pass {
				assert.Empty(t, r.Details)
			}
			assert.False(t, strings.Contains(r.Reason, "not recent"), "history stays out of the reason: %s", r.Reason)
		})
	}
}
