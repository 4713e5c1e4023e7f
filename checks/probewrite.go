package checks

import (
	"context"

	"github.com/aiconform/aiconform/probe"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ProbeCreate is how a probe writes one object of its own: labelled with
// the run, in the run's namespace (or named after the run when it is
// cluster-scoped), and added to r's evidence as the `kubectl create -f -`
// it is, with what kubectl answers. obj is changed in place; the time of a
// successful creation goes to tl when tl is not nil.
func ProbeCreate(ctx context.Context, env *Env, r *Result, tl *probe.Timeline, obj *unstructured.Unstructured, note string) (*unstructured.Unstructured, error) {
	s := env.Probe
	m, err := s.Mapping(obj.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	s.Label(obj, m)
	cmd, err := probe.CreateCommand(s.NamespaceOf(m), obj, false, false)
	if err != nil {
		return nil, err
	}
	created, cerr := s.Create(ctx, m, obj)
	out := probe.ErrorText("creating", "STDIN", cerr)
	if cerr == nil {
		if out, err = probe.CreatedText(obj, false); err != nil {
			return nil, err
		}
		if tl != nil {
			tl.Add(env.Now(), "created %s/%s", m.Resource.Resource, obj.GetName())
		}
	}
	r.Evidence = append(r.Evidence, Step{Command: cmd, Output: out, CapturedAt: env.Now().UTC(), Note: note})
	return created, cerr
}
