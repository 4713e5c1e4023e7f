package hardware

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DRAGroup is the Dynamic Resource Allocation API group; DRAVersion the
// version the checks read, GA since Kubernetes 1.34.
const (
	DRAGroup   = "resource.k8s.io"
	DRAVersion = "v1"
)

//go:embed dra_drivers.yaml
var draDriversYAML []byte

var _ = checks.RegisterData[[]DRADriver]("dra_drivers.yaml", draDriversYAML)

// DRADriver is one DRA driver dra_drivers.yaml knows.
type DRADriver struct {
	Driver      string `yaml:"driver"`
	Name        string `yaml:"name"`
	Accelerator bool   `yaml:"accelerator"`
}

// DRADrivers are the DRA drivers dra_drivers.yaml knows.
func DRADrivers() ([]DRADriver, error) {
	return checks.Data[[]DRADriver]("dra_drivers.yaml", draDriversYAML)
}

// DescribeDriver names a driver as dra_drivers.yaml knows it, with the name
// it publishes under.
func DescribeDriver(ds []DRADriver, driver string) string {
	for _, d := range ds {
		if d.Driver == driver {
			return d.Name + " (" + driver + ")"
		}
	}
	return driver
}

// IsAcceleratorDriver is true for a driver dra_drivers.yaml knows as an
// accelerator's.
func IsAcceleratorDriver(ds []DRADriver, driver string) bool {
	for _, d := range ds {
		if d.Driver == driver {
			return d.Accelerator
		}
	}
	return false
}

// AcceleratorNodes are the nodes with accelerators, in name order: those
// advertising an accelerator resource, and those an accelerator DRA driver
// of dra_drivers.yaml publishes devices for (dra names those drivers by
// node). With none, r skips, saying so, and nodes is nil; a node list the
// cluster refuses is shown in r's evidence as kubectl would meet it, and a
// bad accelerators.yaml is the error.
func AcceleratorNodes(ctx context.Context, env *checks.Env, r *checks.Result) (nodes []*corev1.Node, dra map[string][]string, err error) {
	if _, err := AcceleratorTable(); err != nil {
		return nil, nil, err
	}
	all, err := checks.List[*corev1.Node](ctx, env, cluster.Query{Resource: cluster.Nodes})
	if err != nil {
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Nodes}}, "")
		return nil, nil, err
	}
	if dra, err = draAcceleratorNodes(ctx, env); err != nil {
		return nil, nil, fmt.Errorf("the nodes DRA drivers publish accelerators for: %w", err)
	}
	for _, n := range all {
		if len(AcceleratorResources(n)) > 0 || dra[n.Name] != nil {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		r.Finish(checks.Skip, "none of %d nodes has an accelerator (no accelerator resource, no accelerator DRA driver's devices)", len(all))
		return nil, nil, nil
	}
	slices.SortFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return nodes, dra, nil
}

// draAcceleratorNodes are the nodes an accelerator driver of
// dra_drivers.yaml publishes devices for, each with those drivers; none
// when the DRA API is not registered. It adds no evidence of its own:
// dra-devices shows the same slices.
func draAcceleratorNodes(ctx context.Context, env *checks.Env) (map[string][]string, error) {
	services, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: cluster.APIServices})
	if err != nil {
		return nil, err
	}
	registered := slices.ContainsFunc(services, func(s *unstructured.Unstructured) bool {
		group, _, _ := unstructured.NestedString(s.Object, "spec", "group")
		version, _, _ := unstructured.NestedString(s.Object, "spec", "version")
		return group == DRAGroup && version == DRAVersion
	})
	if !registered {
		return nil, nil
	}
	drivers, err := DRADrivers()
	if err != nil {
		return nil, err
	}
	rslices, err := checks.List[*resourcev1.ResourceSlice](ctx, env, cluster.Query{Resource: cluster.ResourceSlices})
	if err != nil {
		return nil, err
	}
	nodes := map[string][]string{}
	for _, s := range rslices {
		n := s.Spec.NodeName
		if n == nil || *n == "" || len(s.Spec.Devices) == 0 || !IsAcceleratorDriver(drivers, s.Spec.Driver) {
			continue
		}
		if !slices.Contains(nodes[*n], s.Spec.Driver) {
			nodes[*n] = append(nodes[*n], s.Spec.Driver)
		}
	}
	return nodes, nil
}
