package checks

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aiconform/aiconform/probe"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// Refused is a probe's answer when one of its steps failed with err: a
// write the cluster refused (a *CreateError) ends the check, as Error when
// it was not allowed (the probe could not judge) and as Fail with the
// cluster's own words otherwise; any other error is the check's error.
func Refused(r Result, err error) (Result, error) {
	var ce *CreateError
	if !errors.As(err, &ce) {
		return r, err
	}
	if errors.Is(ce.Err, probe.ErrClosed) || apierrors.IsForbidden(ce.Err) {
		return r, fmt.Errorf("cannot create the probe's %s: %w", ce.Object.GetKind(), ce.Err)
	}
	r.Finish(Fail, "the probe's %s %s could not be created: %v", ce.Object.GetKind(), ce.Object.GetName(), ce.Err)
	return r, nil
}

// ProbeObject parses a probe's object from the YAML it is written in.
func ProbeObject(text string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(text), &u.Object); err != nil {
		return nil, fmt.Errorf("probe object: %w", err)
	}
	return u, nil
}

// probeUser is the user probe pods run as: not root, and no user of the
// image's own.
const probeUser = 65535

// ProbePodSpec is what every pod a probe makes itself runs: image (the
// --probe-image, which does nothing until stopped), not root, no
// privilege, all capabilities dropped, 10m of CPU and 16Mi of memory with
// equal limits, plus the extra resources it requests; tolerating taints
// of the keys given (those named after the accelerator it asks for).
func ProbePodSpec(image string, extra corev1.ResourceList, tolerate ...string) corev1.PodSpec {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}
	for name, q := range extra {
		res[name] = q
	}
	spec := corev1.PodSpec{
		AutomountServiceAccountToken:  ptr.To(false),
		TerminationGracePeriodSeconds: ptr.To[int64](1),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](probeUser),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name: "probe", Image: image,
			Resources: corev1.ResourceRequirements{Requests: res, Limits: res.DeepCopy()},
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}},
	}
	for _, k := range tolerate {
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: k, Operator: corev1.TolerationOpExists})
	}
	return spec
}

// ProbeDeadline is the activeDeadlineSeconds of a probe's pod: longer than
// the probe's phases, so that a pod a cleanup missed still ends.
func ProbeDeadline(timeout time.Duration) *int64 {
	return ptr.To(int64(3 * timeout / time.Second))
}

// Unstructured converts a typed object to what Probing.Create sends.
func Unstructured(obj runtime.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	// Typed objects carry these empty; the server fills them.
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	return u, nil
}

// TimelineHeader heads every probe's timeline table: what happened, when
// (UTC, to the millisecond) and how long after the probe's first write.
// The HTML report knows a timeline by it.
var TimelineHeader = []string{"EVENT", "AT (UTC)", "SINCE START"}

// TimelineTable is a probe's timeline as its result's table: the one
// writer of every probe's, so that all read alike.
func TimelineTable(tl *probe.Timeline) *Table {
	return &Table{Header: slices.Clone(TimelineHeader), Rows: tl.Rows}
}
