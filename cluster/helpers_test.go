package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// t0 is when the test cluster was read.
var t0 = time.Date(2026, 11, 29, 22, 3, 39, 0, time.UTC)

// isvcs is a custom resource, as a check resolves it from its CRD.
var isvcs = Resource{
	GVR:        schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1beta1", Resource: "inferenceservices"},
	Kind:       "InferenceService",
	Arg:        "inferenceservices.serving.kserve.io",
	Namespaced: true,
}

// col is a column of a server-side Table; priority 1 columns show only
// with -o wide.
func col(name string, priority int32) metav1.TableColumnDefinition {
	c := metav1.TableColumnDefinition{Name: name, Type: "string", Priority: priority}
	if name == "Name" {
		c.Format = "name"
	}
	return c
}

// row is a Table row for the object ns/name, carrying the metadata the
// server sends with it (kubectl reads namespace and labels from it).
func row(ns, name string, labels map[string]string, cells ...any) metav1.TableRow {
	return metav1.TableRow{
		Cells: append([]any{name}, cells...),
		Object: runtime.RawExtension{Object: &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		}},
	}
}

func table(cols []metav1.TableColumnDefinition, rows ...metav1.TableRow) *metav1.Table {
	return &metav1.Table{
		TypeMeta:          metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"},
		ColumnDefinitions: cols,
		Rows:              rows,
	}
}

// answer is one recorded Table: the query, what the server said, when.
type answer struct {
	q   Query
	t   *metav1.Table
	at  time.Time
	err error
}

// replay records answers the way a snapshot does, writes the recording
// and loads it back, so that what a test prints went through a file.
func replay(t *testing.T, answers ...answer) *Cache {
	t.Helper()
	rec := &Recording{APIVersion: RecordingAPIVersion, Kind: RecordingKind, Cluster: Info{ServerVersion: "v1.37.2", RecordedAt: t0}}
	for _, a := range answers {
		at := a.at
		if at.IsZero() {
			at = t0
		}
		rec.Tables = append(rec.Tables, recordTable(a.q, a.t, at, a.err))
	}
	data, err := rec.Marshal()
	require.NoError(t, err)
	loaded, err := LoadRecording("test", data)
	require.NoError(t, err)
	return NewCache(loaded)
}
