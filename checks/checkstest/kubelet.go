package checkstest

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
)

// Kubelet makes the fake run the pods a probe creates in namespace, as an
// API server and a kubelet would show them: each create is answered in
// namespace with resourceVersion 1 (and kept, for a deletion), and a
// watch of pods then shows each pod created so far as status makes it
// (bound, Running, ended...).
func (f *FakeCluster) Kubelet(t testing.TB, namespace string, status func(created *corev1.Pod) *corev1.Pod) {
	var mu sync.Mutex
	var created []*corev1.Pod
	f.Dyn.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		u.SetNamespace(namespace)
		u.SetResourceVersion("1")
		var p corev1.Pod
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p))
		mu.Lock()
		created = append(created, &p)
		mu.Unlock()
		// Kept, so that the probe can delete it.
		require.NoError(t, f.Dyn.Tracker().Create(a.GetResource(), u, namespace))
		return true, u, nil
	})
	f.Dyn.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		fw := watch.NewFakeWithChanSize(len(created), false)
		for _, p := range created {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status(p.DeepCopy()))
			require.NoError(t, err)
			fw.Modify(&unstructured.Unstructured{Object: m})
		}
		return true, fw, nil
	})
}
