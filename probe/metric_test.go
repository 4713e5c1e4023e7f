package probe

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	restfake "k8s.io/client-go/rest/fake"
)

func TestParseMetric(t *testing.T) {
	for _, tc := range []struct {
		in, name, str string
		sel           map[string]string
		err           string
	}{
		{in: "queue_depth", name: "queue_depth", str: "queue_depth"},
		{in: " s0-rps{scaledobject=llm, app=vllm} ", name: "s0-rps", sel: map[string]string{"scaledobject": "llm", "app": "vllm"}, str: "s0-rps{app=vllm,scaledobject=llm}"},
		{in: "{app=x}", err: "names no metric"},
		{in: "m{app=x", err: "the labels end with }"},
		{in: "m{app}", err: "m{app}"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			m, err := ParseMetric(tc.in)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.name, m.Name)
			assert.Equal(t, tc.sel, m.Selector)
			assert.Equal(t, tc.str, m.String())
			if len(tc.sel) > 0 {
				assert.Equal(t, tc.sel, m.LabelSelector().MatchLabels)
			} else {
				assert.Nil(t, m.LabelSelector())
			}
		})
	}
}

func TestPatchAndRawLines(t *testing.T) {
	hpa := &meta.RESTMapping{Resource: schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"},
		GroupVersionKind: schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}, Scope: meta.RESTScopeNamespace}
	assert.Equal(t, `kubectl patch horizontalpodautoscalers.autoscaling h -n ns1 --type merge -p '{"spec":{}}'`, PatchCommand("ns1", hpa, "h", []byte(`{"spec":{}}`)))
	assert.Equal(t, "horizontalpodautoscaler.autoscaling/h patched\n", PatchedText(hpa, "h"))
	assert.Equal(t, "kubectl get --raw /apis/external.metrics.k8s.io/v1beta1", RawCommand("/apis/external.metrics.k8s.io/v1beta1"))
	assert.Equal(t, "kubectl get --raw '/apis/x/v1/namespaces/n/m?labelSelector=a%3Db'", RawCommand("/apis/x/v1/namespaces/n/m?labelSelector=a%3Db"))
}

// GetRaw sends the path and its query as given, and returns the body
// untouched: it is what kubectl prints.
func TestGetRaw(t *testing.T) {
	s, _ := newSession(t)
	_, err := s.GetRaw(context.Background(), "/apis")
	require.Error(t, err, "no raw client")
	var asked string
	const body = `{"kind":"ExternalMetricValueList","items":[]}`
	s.Raw = &restfake.RESTClient{NegotiatedSerializer: scheme.Codecs.WithoutConversion(), Client: restfake.CreateHTTPClient(func(r *http.Request) (*http.Response, error) {
		asked = r.URL.RequestURI()
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body))}, nil
	})}
	got, err := s.GetRaw(context.Background(), "/apis/external.metrics.k8s.io/v1beta1/namespaces/n/m?labelSelector=a%3Db")
	require.NoError(t, err)
	assert.Equal(t, body, string(got))
	assert.Equal(t, "/apis/external.metrics.k8s.io/v1beta1/namespaces/n/m?labelSelector=a%3Db", asked)
}
