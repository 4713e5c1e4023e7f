package cluster

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// The golden files in testdata/columns are what kubectl v1.32.4 printed to
// standard output for `kubectl get nodes -o custom-columns=SPEC` (and, for
// empty-list, `kubectl get configmaps -A -o custom-columns=SPEC`), run
// against a throwaway in-process HTTP server that answered discovery and
// the LIST with testdata/columns/nodes.json (an empty ConfigMapList for
// configmaps). The errors expected below are what kubectl printed on
// standard error for the same specs, without its "error: " prefix. The
// objects are decoded as kubectl decodes them, so numbers are int64 or
// float64 as they are in kubectl.
func TestWriteColumnsIsKubectls(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "columns", "nodes.json"))
	require.NoError(t, err)
	obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, data)
	require.NoError(t, err)
	var nodes []map[string]any
	for _, it := range obj.(*unstructured.UnstructuredList).Items {
		nodes = append(nodes, it.Object)
	}

	tests := []struct {
		golden  string
		spec    string
		objects []map[string]any
	}{
		{"devices", "NAME:.metadata.name,NODE:.spec.nodeName,DRIVER_VERSION:.spec.devices[*].attributes.driverVersion.version", nodes},
		{"escaped-dots", `NAME:.metadata.name,GPU:.status.allocatable.nvidia\.com/gpu,PRESENT:.metadata.labels.nvidia\.com/gpu\.present,BUNDLE:.metadata.annotations.gateway\.networking\.k8s\.io/bundle-version`, nodes},
		{"owner", "NAME:.metadata.name,OWNER:.metadata.ownerReferences[0].name,OWNERS:.metadata.ownerReferences[*].name", nodes},
		{"relaxed", "A:metadata.name,B:{metadata.name},C:.metadata.name,D:{.metadata.name}", nodes},
		{"scalars", "NAME:.metadata.name,COUNT:.spec.count,RATIO:.spec.ratio,WHOLE:.spec.whole,BIG:.spec.big,TINY:.spec.tiny,FLAG:.spec.flag,OFF:.spec.off,NULL:.spec.nothing", nodes},
		{"collections", "NAME:.metadata.name,EMPTYL:.spec.emptyList,EMPTYM:.spec.emptyMap,TAGS:.spec.tags,NESTED:.spec.nested,ALLOC:.status.allocatable,LABELS:.metadata.labels", nodes},
		{"filter", `NAME:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].status,TYPES:.status.conditions[*].type`, nodes},
		{"escapes", "NAME:.metadata.name,WEIRD:.spec.weird,TABBED:.spec.tabbed,MULTI:.spec.multi", nodes},
		{"empty-header", ":.metadata.name,X:.spec.count", nodes},
		{"empty-path", "NAME:.metadata.name,EMPTY:", nodes},
		{"recursive", "NAME:.metadata.name,VERSIONS:..version", nodes},
		{"colon-in-path", `NAME:.metadata.name,GPU:.status.allocatable.nvidia\.com/gpu:x`, nodes},
		{"empty-list", "NAME:.metadata.name,NAMESPACE:.metadata.namespace", nil},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", "columns", tc.golden+".golden"))
			require.NoError(t, err)
			cols, err := parseColumns(tc.spec)
			require.NoError(t, err)
			var out bytes.Buffer
			require.NoError(t, writeColumns(&out, cols, tc.objects))
			assert.Equal(t, string(want), out.String())
		})
	}
}

func TestParseColumnsErrorsAreKubectls(t *testing.T) {
	const badPath = "unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'"
	tests := []struct {
		name, spec, want string
	}{
		{"no spec", "", "custom-columns format specified but no custom columns given"},
		{"no path", "NAME", "unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>"},
		{"second pair without a path", "NAME:.metadata.name,NODE", "unexpected custom-columns spec: NODE, expected <header>:<json-path-expr>"},
		{"trailing comma", "NAME:.metadata.name,", "unexpected custom-columns spec: , expected <header>:<json-path-expr>"},
		{"unclosed brace", "NAME:{.metadata.name", badPath},
		{"brace inside", "NAME:.metadata.{name}", badPath},
		{"empty braces", "NAME:{}", badPath},
		{"bad JSONPath", "NAME:.metadata.name[0", "unterminated array"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseColumns(tc.spec)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

// A malformed pair is reported before a bad path earlier in the spec:
// kubectl checks the pairs when it reads the flag and compiles the paths
// only when it prints.
func TestParseColumnsChecksPairsFirst(t *testing.T) {
	_, err := parseColumns("NAME:.metadata.name[0,NODE")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unexpected custom-columns spec: NODE")
}

func TestRelaxedPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{".a.b", "{.a.b}"},
		{"a.b", "{.a.b}"},
		{"{a.b}", "{.a.b}"},
		{"{.a.b}", "{.a.b}"},
		{`.status.allocatable.nvidia\.com/gpu`, `{.status.allocatable.nvidia\.com/gpu}`},
		{"..a", "{..a}"},
		{".", "{..}"},
		{"{.}", "{..}"},
		{"", ""},
	}
	for _, tc := range tests {
		got, err := relaxedPath(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

// An index past the end of a list is an error even with missing keys
// allowed; kubectl v1.32.4 says "error: array index out of bounds: index
// 5, length 2" for the same spec and objects.
func TestWriteColumnsIndexOutOfRange(t *testing.T) {
	cols, err := parseColumns("NAME:.metadata.name,IDX:.spec.devices[5].name")
	require.NoError(t, err)
	objs := []map[string]any{{"metadata": map[string]any{"name": "n"}, "spec": map[string]any{"devices": []any{map[string]any{}, map[string]any{}}}}}
	err = writeColumns(&bytes.Buffer{}, cols, objs)
	require.Error(t, err)
	assert.Equal(t, "array index out of bounds: index 5, length 2", err.Error())
}

// Objects converted from typed ones, as printColumns makes them, print
// numbers as kubectl prints the same numbers decoded from JSON.
func TestWriteColumnsTypedNumbers(t *testing.T) {
	cols, err := parseColumns("NAME:.metadata.name,REPLICAS:.spec.replicas,READY:.status.ready")
	require.NoError(t, err)
	objs := []map[string]any{{"metadata": map[string]any{"name": "d"}, "spec": map[string]any{"replicas": int64(3)}, "status": map[string]any{"ready": true}}}
	var out bytes.Buffer
	require.NoError(t, writeColumns(&out, cols, objs))
	assert.Equal(t, "NAME   REPLICAS   READY\nd      3          true\n", out.String())
}
