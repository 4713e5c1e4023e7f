package security_test

import (
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/security"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func runtimeClass(name, handler string, nodeSelector map[string]string) *nodev1.RuntimeClass {
	c := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}
	if nodeSelector != nil {
		c.Scheduling = &nodev1.Scheduling{NodeSelector: nodeSelector,
			Tolerations: []corev1.Toleration{{Key: "sandbox.gke.io/runtime", Operator: corev1.TolerationOpEqual, Value: "gvisor", Effect: corev1.TaintEffectNoSchedule}}}
	}
	return c
}

func TestSandboxRuntimes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		classes []*nodev1.RuntimeClass
		edit    func(w *checkstest.World)
		status  checks.Status
		reason  string
		details []string
	}{
		{name: "gVisor on every node", classes: []*nodev1.RuntimeClass{runtimeClass("gvisor", "runsc", nil)}, status: checks.Pass,
			reason: "RuntimeClass gvisor (gVisor, handler runsc) admits 2 Ready nodes"},
		{name: "GKE Sandbox on its node pool", classes: []*nodev1.RuntimeClass{runtimeClass("gvisor", "gvisor", map[string]string{"eks.amazonaws.com/nodegroup": "cpu-pool"})},
			status: checks.Pass, reason: "RuntimeClass gvisor (gVisor, handler gvisor) admits 1 Ready node"},
		{name: "Kata, beside the NVIDIA runtime", classes: []*nodev1.RuntimeClass{runtimeClass("nvidia", "nvidia", nil), runtimeClass("kata-qemu", "kata-qemu", nil)},
			status: checks.Pass, reason: "RuntimeClass kata-qemu (Kata Containers, handler kata-qemu) admits 2 Ready nodes"},
		{name: "no node for it", classes: []*nodev1.RuntimeClass{runtimeClass("gvisor", "runsc", map[string]string{"sandbox.gke.io/runtime": "gvisor"})},
			status: checks.Warn, reason: "RuntimeClass gvisor (gVisor, handler runsc) admits no Ready, schedulable node (by its scheduling node selector)"},
		{name: "only the NVIDIA runtime", classes: []*nodev1.RuntimeClass{runtimeClass("nvidia", "nvidia", nil)}, status: checks.Fail,
			reason: "no RuntimeClass names a sandbox's handler (gVisor's runsc, gvisor or runsc-*; Kata Containers (Firecracker)'s kata-fc; " +
				"Kata Containers' kata or kata-*; Edera's edera): the RuntimeClasses are nvidia (handler nvidia)"},
		{name: "Kata on Firecracker, named for its VMM", classes: []*nodev1.RuntimeClass{runtimeClass("kata-fc", "kata-fc", nil)},
			status: checks.Pass, reason: "RuntimeClass kata-fc (Kata Containers (Firecracker), handler kata-fc) admits 2 Ready nodes"},
		{name: "Edera on its labelled nodes", classes: []*nodev1.RuntimeClass{runtimeClass("edera", "edera", map[string]string{"eks.amazonaws.com/nodegroup": "cpu-pool"})},
			status: checks.Pass, reason: "RuntimeClass edera (Edera, handler edera) admits 1 Ready node"},
		{name: "a handler that only begins like Edera's", classes: []*nodev1.RuntimeClass{runtimeClass("edera-ish", "ederax", nil)},
			status: checks.Fail, reason: "the RuntimeClasses are edera-ish (handler ederax)"},
		{name: "none", status: checks.Fail, reason: "there is no RuntimeClass"},
		{name: "agent-sandbox", classes: []*nodev1.RuntimeClass{runtimeClass("gvisor", "runsc", nil)}, edit: func(w *checkstest.World) {
			crd := checkstest.EstablishedCRD("sandboxes", "Sandbox")
			crd.Name, crd.Spec.Group = "sandboxes.agents.x-k8s.io", "agents.x-k8s.io"
			w.CRDs = append(w.CRDs, crd, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "sandboxtemplates.extensions.agents.x-k8s.io"},
				Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "extensions.agents.x-k8s.io"}})
		}, status: checks.Pass, details: []string{"the Kubernetes agent-sandbox project is installed: CRDs sandboxes.agents.x-k8s.io, sandboxtemplates.extensions.agents.x-k8s.io"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := checkstest.NewWorld(t)
			w.RuntimeClasses = tc.classes
			if tc.edit != nil {
				tc.edit(w)
			}
			r := checkstest.Result(t, w.Serve().Run([]checks.Check{security.SandboxRuntimes{}}, nil), "sandbox-runtimes", "")
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
			for _, d := range tc.details {
				assert.Contains(t, r.Details, d)
			}
			require.NotEmpty(t, r.Evidence)
			assert.Equal(t, "kubectl get runtimeclasses", r.Evidence[0].Command)
		})
	}
}
