package probe

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestCreateCommand(t *testing.T) {
	w := widget("w1")
	w.SetLabels(map[string]string{RunLabel: "r"})
	cmd, err := CreateCommand("ns1", w, true, true)
	require.NoError(t, err)
	assert.Equal(t, `kubectl create --dry-run=server -n ns1 -o yaml -f - <<'EOF'
apiVersion: demo.example.com/v1
kind: Widget
metadata:
  labels:
    aiconform.io/run: r
  name: w1
EOF`, cmd)
	cmd, err = CreateCommand("ns1", w, false, false)
	require.NoError(t, err)
	assert.Contains(t, cmd, "kubectl create -n ns1 -f - <<'EOF'\n")
}

func TestKubectlLines(t *testing.T) {
	out, err := CreatedText(widget("w1"), true)
	require.NoError(t, err)
	assert.Equal(t, "widget.demo.example.com/w1 created (server dry run)\n", out)
	out, err = CreatedText(widget("w1"), false)
	require.NoError(t, err)
	assert.Equal(t, "widget.demo.example.com/w1 created\n", out)

	m := &meta.RESTMapping{Resource: widgetGVR, Scope: meta.RESTScopeNamespace}
	assert.Equal(t, "kubectl delete widgets.demo.example.com w1 -n ns1", DeleteCommand("ns1", m, "w1"))
	m.GroupVersionKind = widgetGVK
	assert.Equal(t, "widget.demo.example.com \"w1\" deleted from ns1 namespace\n", DeletedText(m, "ns1", "w1"),
		"kubectl delete names the kind, not the resource, and the namespace")
	core := &meta.RESTMapping{Resource: Namespaces, GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Scope: meta.RESTScopeRoot}
	assert.Equal(t, "kubectl delete namespaces x", DeleteCommand("ns1", core, "x"))
	assert.Equal(t, "namespace \"x\" deleted\n", DeletedText(core, "", "x"))
}

func TestErrorTextIsKubectls(t *testing.T) {
	denied := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden,
		Reason:  metav1.StatusReasonForbidden,
		Message: `admission webhook "v.demo.example.com" denied the request: no`}}
	assert.Equal(t, `Error from server (Forbidden): error when creating "STDIN": admission webhook "v.demo.example.com" denied the request: no`+"\n",
		ErrorText("creating", "STDIN", denied))

	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "demo.example.com", Kind: "Widget"}, "w1",
		field.ErrorList{field.Invalid(field.NewPath("spec", "size"), -1, "must be positive")})
	assert.Equal(t, "The Widget \"w1\" is invalid: spec.size: Invalid value: -1: must be positive\n",
		ErrorText("creating", "STDIN", invalid))

	assert.Equal(t, "error: boom\n", ErrorText("deleting", "", errors.New("boom")))
}
