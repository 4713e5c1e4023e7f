package checks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// List reads q through the shared cache as objects of type T.
func List[T any](ctx context.Context, env *Env, q cluster.Query) ([]T, error) {
	return listAs[T](ctx, env.Cluster, q)
}

// ProbeRun names the aiconform probe run that made an object: the run label
// on the object, or the probe namespace it lives in. Read-only checks judge
// the cluster's own workloads, never these: a canary of another run still
// in flight, or one a killed run left behind, says nothing of the cluster.
// (This run's own probes write only after every read-only check is done.)
func ProbeRun(labels map[string]string, namespace string) (string, bool) {
	if run, ok := labels[probe.RunLabel]; ok {
		return run, true
	}
	if run, ok := strings.CutPrefix(namespace, probe.NamespacePrefix); ok {
		return run, true
	}
	return "", false
}

// CustomResource resolves a kind, named by its CRD (plural.group), against
// the CRDs the cluster serves: its resource at the newest served version.
func CustomResource(ctx context.Context, env *Env, crdName string) (cluster.Resource, error) {
	crds, err := List[*apiextensionsv1.CustomResourceDefinition](ctx, env, cluster.Query{Resource: cluster.CRDs})
	if err != nil {
		return cluster.Resource{}, err
	}
	crd := kube.FindCRD(crds, crdName)
	if crd == nil {
		return cluster.Resource{}, fmt.Errorf("%s: the cluster serves no such CRD", crdName)
	}
	return kube.CRDResource(crd), nil
}

// SortedKeys are a map's keys in order.
func SortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Plural counts a noun: "1 webhook", "7 webhooks".
func Plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Contains is true when s is in list.
func Contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// CapLines joins the first n lines with sep and says how many more there
// are, so that a verdict on a large cluster stays one line.
func CapLines(lines []string, n int, sep string) string {
	if len(lines) <= n {
		return strings.Join(lines, sep)
	}
	return fmt.Sprintf("%s%sand %d more", strings.Join(lines[:n], sep), sep, len(lines)-n)
}
