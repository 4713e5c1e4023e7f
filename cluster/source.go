package cluster

import (
	"context"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Source answers queries. Live asks an API server; Recording replays what a
// snapshot stored. Each answer carries the time it was captured.
type Source interface {
	// List returns the query's objects: typed for built-in kinds,
	// *unstructured.Unstructured for custom resources.
	List(ctx context.Context, q Query) ([]runtime.Object, time.Time, error)
	// Table returns the server's Table rendering of the same query, with
	// each row's object decoded (metadata only), as kubectl receives it.
	Table(ctx context.Context, q Query) (*metav1.Table, time.Time, error)
	// Raw returns the body of a GET of an API server path, as `kubectl
	// get --raw PATH` prints it: a proxied exporter's metrics, say.
	Raw(ctx context.Context, path string) ([]byte, time.Time, error)
	// Info describes the cluster and where the answers come from.
	Info(ctx context.Context) (Info, error)
}

// Info is what a report header says about the cluster.
type Info struct {
	// Live is false when the answers come from a recording.
	Live bool `json:"live"`
	// Source names the recording (a fixture name or path) when not live.
	Source        string    `json:"source,omitempty"`
	Context       string    `json:"context,omitempty"`
	Server        string    `json:"server,omitempty"`
	ServerVersion string    `json:"serverVersion,omitempty"`
	ClusterID     string    `json:"clusterID,omitempty"`
	RecordedAt    time.Time `json:"recordedAt,omitzero"`
}

// scheme knows every built-in kind aiconform reads, so recordings decode
// into the same typed objects a live read gives.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	// Both only fail on conflicting registrations, which a fresh scheme
	// cannot have.
	_ = clientgoscheme.AddToScheme(s)
	_ = apiextensionsv1.AddToScheme(s)
	return s
}()

var codecs = serializer.NewCodecFactory(scheme)
