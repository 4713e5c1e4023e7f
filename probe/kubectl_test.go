package probe

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
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

// The expected texts are what kubectl v1.32.4 printed on standard error for
// `kubectl create --validate=false -f -` (source "STDIN") and for
// `kubectl delete configmaps a` (no source) when a throwaway in-process
// HTTP server answered the write with the status in the row.
func TestErrorTextMatchesKubectl(t *testing.T) {
	status := func(code int32, reason metav1.StatusReason, msg string, d *metav1.StatusDetails) error {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg, Details: d}}
	}
	cm := func(causes ...metav1.StatusCause) *metav1.StatusDetails {
		return &metav1.StatusDetails{Name: "a", Kind: "ConfigMap", Causes: causes}
	}
	xInvalid := metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: "Invalid value: -1: must be positive", Field: "data.x"}
	yRequired := metav1.StatusCause{Type: metav1.CauseTypeFieldValueRequired, Message: "Required value", Field: "data.y"}
	tests := []struct {
		name           string
		err            error
		create, delete string
	}{
		{"forbidden", status(403, metav1.StatusReasonForbidden, `admission webhook "v.demo.example.com" denied the request: no`, nil),
			`Error from server (Forbidden): error when creating "STDIN": admission webhook "v.demo.example.com" denied the request: no` + "\n",
			`Error from server (Forbidden): admission webhook "v.demo.example.com" denied the request: no` + "\n"},
		{"invalid, one cause", status(422, metav1.StatusReasonInvalid, `ConfigMap "a" is invalid: data.x: Invalid value: -1: must be positive`, cm(xInvalid)),
			`The ConfigMap "a" is invalid: data.x: Invalid value: -1: must be positive` + "\n",
			`The ConfigMap "a" is invalid: data.x: Invalid value: -1: must be positive` + "\n"},
		{"invalid, causes one per line, each once", status(422, metav1.StatusReasonInvalid, `ConfigMap "a" is invalid: [...]`, cm(xInvalid, yRequired, xInvalid)),
			"The ConfigMap \"a\" is invalid: \n* data.x: Invalid value: -1: must be positive\n* data.y: Required value\n",
			"The ConfigMap \"a\" is invalid: \n* data.x: Invalid value: -1: must be positive\n* data.y: Required value\n"},
		{"invalid, no causes", status(422, metav1.StatusReasonInvalid, `ConfigMap "a" is invalid`, cm()),
			"The ConfigMap \"a\" is invalid\n", "The ConfigMap \"a\" is invalid\n"},
		{"invalid, no details", status(422, metav1.StatusReasonInvalid, "something is wrong", nil),
			"The request is invalid: error when creating \"STDIN\": something is wrong\n", "The request is invalid: something is wrong\n"},
		{"invalid, details without kind or name", status(422, metav1.StatusReasonInvalid, "something is wrong", &metav1.StatusDetails{Group: "x"}),
			"The request is invalid: error when creating \"STDIN\": something is wrong\n", "The request is invalid: something is wrong\n"},
		{"invalid, causes without kind or name", status(422, metav1.StatusReasonInvalid, "something is wrong", &metav1.StatusDetails{Causes: []metav1.StatusCause{{Message: "bad", Field: "spec"}}}),
			"The request is invalid: spec: bad\n", "The request is invalid: spec: bad\n"},
		{"invalid, cause without a field", status(422, metav1.StatusReasonInvalid, "x", cm(metav1.StatusCause{Message: "bad"})),
			"The ConfigMap \"a\" is invalid: : bad\n", "The ConfigMap \"a\" is invalid: : bad\n"},
		{"already exists", status(409, metav1.StatusReasonAlreadyExists, `configmaps "a" already exists`, &metav1.StatusDetails{Name: "a", Kind: "configmaps"}),
			`Error from server (AlreadyExists): error when creating "STDIN": configmaps "a" already exists` + "\n",
			`Error from server (AlreadyExists): configmaps "a" already exists` + "\n"},
		{"not found", status(404, metav1.StatusReasonNotFound, `configmaps "a" not found`, &metav1.StatusDetails{Name: "a", Kind: "configmaps"}),
			`Error from server (NotFound): error when creating "STDIN": configmaps "a" not found` + "\n",
			`Error from server (NotFound): configmaps "a" not found` + "\n"},
		{"no reason", status(500, "", "something broke", nil),
			"Error from server: error when creating \"STDIN\": something broke\n", "Error from server: something broke\n"},
		{"a message ending in a newline gets no second one", status(500, metav1.StatusReasonInternalError, "broke\n", nil),
			"Error from server (InternalError): error when creating \"STDIN\": broke\n", "Error from server (InternalError): broke\n"},
		{"no reason, newline", status(400, "", "broke\n", nil),
			"Error from server: error when creating \"STDIN\": broke\n", "Error from server: broke\n"},
		{"unauthorized", status(401, metav1.StatusReasonUnauthorized, "Unauthorized", nil),
			"error: You must be logged in to the server (error when creating \"STDIN\": Unauthorized)\n",
			"error: You must be logged in to the server (Unauthorized)\n"},
		{"conflict", status(409, metav1.StatusReasonConflict, `Operation cannot be fulfilled on configmaps "a": the object has been modified`, nil),
			`Error from server (Conflict): error when creating "STDIN": Operation cannot be fulfilled on configmaps "a": the object has been modified` + "\n",
			`Error from server (Conflict): Operation cannot be fulfilled on configmaps "a": the object has been modified` + "\n"},
		// client-go's own status for an answer that was not a Status.
		{"not a status", apierrors.NewGenericServerResponse(500, "POST", schema.GroupResource{Resource: "configmaps"}, "", "oops not json", 0, true),
			`Error from server (InternalError): error when creating "STDIN": an error on the server ("oops not json") has prevented the request from succeeding (post configmaps)` + "\n",
			""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.create, ErrorText("creating", "STDIN", tc.err))
			if tc.delete != "" {
				assert.Equal(t, tc.delete, ErrorText("deleting", "", tc.err))
			}
		})
	}
}

// These cases follow kubectl's source (pkg/cmd/util in the kubectl module,
// CheckErr) rather than a recorded run: the errors do not come from a
// server's answer.
func TestErrorTextOtherErrors(t *testing.T) {
	assert.Equal(t, "", ErrorText("creating", "STDIN", nil), "no error, nothing printed")
	assert.Equal(t, "error: error when creating \"STDIN\": boom\n", ErrorText("creating", "STDIN", errors.New("boom")))
	assert.Equal(t, "error: already said\n", ErrorText("", "", errors.New("error: already said")), "no second prefix")
	assert.Equal(t, "error: two\nlines\n", ErrorText("", "", errors.New("two\nlines\n")))
	assert.Equal(t, "error: wrapped: configmaps \"a\" not found\n",
		ErrorText("", "", fmt.Errorf("wrapped: %w", apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "a"))),
		"kubectl looks at the error itself, not at what it wraps")

	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "a")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "b", errors.New("no"))
	assert.Equal(t, "Error from server (NotFound): configmaps \"a\" not found\n",
		ErrorText("", "", utilerrors.NewAggregate([]error{notFound})), "an aggregate of one is that one error")
	assert.Equal(t, "Error from server (NotFound): configmaps \"a\" not found\nError from server (Forbidden): configmaps \"b\" is forbidden: no\nplain\n",
		ErrorText("", "", utilerrors.NewAggregate([]error{notFound, forbidden, errors.New("plain")})))

	assert.Equal(t, "the server doesn't have a resource type \"widgets\" in group \"demo.example.com\" and version \"v1\"\n",
		ErrorText("", "", &meta.NoResourceMatchError{PartialResource: widgetGVR}))
	assert.Equal(t, "the server doesn't have a resource type \"widgets\"\n",
		ErrorText("", "", &meta.NoResourceMatchError{PartialResource: schema.GroupVersionResource{Resource: "widgets"}}))

	refused := &url.Error{Op: "Post", URL: "https://10.0.0.1:6443/api/v1/namespaces/x/configmaps", Err: errors.New("dial tcp 10.0.0.1:6443: connect: connection refused")}
	assert.Equal(t, "The connection to the server 10.0.0.1:6443 was refused - did you specify the right host or port?\n", ErrorText("", "", refused))
	timeout := &url.Error{Op: "Post", URL: "https://10.0.0.1:6443/api", Err: errors.New("i/o timeout")}
	assert.Equal(t, "Unable to connect to the server: i/o timeout\n", ErrorText("", "", timeout))
	assert.Equal(t, "error: error when creating \"STDIN\": Post \"https://10.0.0.1:6443/api\": i/o timeout\n", ErrorText("creating", "STDIN", timeout),
		"the source turns a connection error into a plain one")
}
