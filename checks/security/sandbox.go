package security

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
)

//go:embed sandboxes.yaml
var sandboxesYAML []byte

var _ = checks.RegisterData[[]sandbox]("sandboxes.yaml", sandboxesYAML)

// sandbox is one entry of sandboxes.yaml.
type sandbox struct {
	Name     string   `yaml:"name"`
	Handlers []string `yaml:"handlers"`
	Prefixes []string `yaml:"prefixes"`
}

func sandboxes() ([]sandbox, error) {
	return checks.Data[[]sandbox]("sandboxes.yaml", sandboxesYAML)
}

// sandboxOf names the sandbox a handler runs, "" for none known.
func sandboxOf(known []sandbox, handler string) string {
	for _, s := range known {
		if slices.Contains(s.Handlers, handler) || slices.ContainsFunc(s.Prefixes, func(p string) bool { return strings.HasPrefix(handler, p) }) {
			return s.Name
		}
	}
	return ""
}

// handlersOf says which handlers the known sandboxes use, for a verdict
// that found none: "gVisor's runsc, gvisor or runsc-*".
func handlersOf(known []sandbox) string {
	var each []string
	for _, s := range known {
		names := append([]string(nil), s.Handlers...)
		for _, p := range s.Prefixes {
			names = append(names, p+"*")
		}
		owner := s.Name + "'s"
		if strings.HasSuffix(s.Name, "s") {
			owner = s.Name + "'"
		}
		switch n := len(names); n {
		case 0:
		case 1:
			each = append(each, owner+" "+names[0])
		default:
			each = append(each, owner+" "+strings.Join(names[:n-1], ", ")+" or "+names[n-1])
		}
	}
	return strings.Join(each, "; ")
}

// agentSandboxGroup is the API group of the Kubernetes agent-sandbox
// project's CRDs (Sandbox, and its templates and claims).
const agentSandboxGroup = "agents.x-k8s.io"

// sandboxClass is a RuntimeClass of a sandbox and the Ready nodes it may
// run on.
type sandboxClass struct {
	class   *nodev1.RuntimeClass
	sandbox string
	nodes   []*corev1.Node
}

// sandboxClasses reads the RuntimeClasses whose handler is a sandbox's,
// in name order, each with the Ready, schedulable nodes its scheduling
// node selector admits; others are the RuntimeClasses that are not.
func sandboxClasses(ctx context.Context, env *checks.Env) (found []sandboxClass, others []string, err error) {
	known, err := sandboxes()
	if err != nil {
		return nil, nil, err
	}
	classes, err := checks.List[*nodev1.RuntimeClass](ctx, env, cluster.Query{Resource: cluster.RuntimeClasses})
	if err != nil {
		return nil, nil, err
	}
	nodes, err := checks.List[*corev1.Node](ctx, env, cluster.Query{Resource: cluster.Nodes})
	if err != nil {
		return nil, nil, err
	}
	for _, c := range classes {
		name := sandboxOf(known, c.Handler)
		if name == "" {
			others = append(others, fmt.Sprintf("%s (handler %s)", c.Name, c.Handler))
			continue
		}
		sc := sandboxClass{class: c, sandbox: name}
		sel := labels.Everything()
		if c.Scheduling != nil && len(c.Scheduling.NodeSelector) > 0 {
			sel = labels.SelectorFromSet(c.Scheduling.NodeSelector)
		}
		for _, n := range nodes {
			if ready, _ := kube.NodeReady(n); ready == corev1.ConditionTrue && !n.Spec.Unschedulable && sel.Matches(labels.Set(n.Labels)) {
				sc.nodes = append(sc.nodes, n)
			}
		}
		found = append(found, sc)
	}
	slices.SortFunc(found, func(a, b sandboxClass) int { return strings.Compare(a.class.Name, b.class.Name) })
	return found, others, nil
}

// SandboxRuntimes looks for a way to run pods in a sandbox: a RuntimeClass
// whose handler is a sandbox's, that some Ready node can run.
type SandboxRuntimes struct{}

// Meta implements checks.Check.
func (SandboxRuntimes) Meta() checks.Meta {
	return checks.Meta{
		ID: "sandbox-runtimes", Title: "A RuntimeClass runs pods in a sandbox",
		Requirement: "workload_sandboxing",
		Description: "Reads the RuntimeClasses and finds those whose handler is a sandbox's, as " +
			"checks/security/sandboxes.yaml knows them (gVisor: runsc, gvisor, runsc-*; Kata Containers: " +
			"kata, kata-*, and kata-fc, named as Kata on Firecracker; Edera: edera), and which Ready, " +
			"schedulable nodes each one's scheduling node selector admits. The Kubernetes agent-sandbox " +
			"project's CRDs (agents.x-k8s.io), where installed, are named. Passes when a sandbox RuntimeClass " +
			"admits at least one Ready node; warns when none does; fails when no RuntimeClass names a " +
			"sandbox handler. A RuntimeClass is a name for a handler: that the handler is installed on those " +
			"nodes and isolates is what sandbox-probe shows.",
		Remediation: "Install a sandbox runtime on the nodes that run untrusted code (gVisor's runsc, Kata " +
			"Containers or Edera, with their containerd shims), and a RuntimeClass naming its handler, with " +
			"a scheduling node selector and tolerations for those nodes.",
	}
}

// Run implements checks.Check.
func (SandboxRuntimes) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.RuntimeClasses}}, "")
	found, others, err := sandboxClasses(ctx, env)
	if err != nil {
		return r, err
	}
	known, err := sandboxes()
	if err != nil {
		return r, err
	}
	if len(found) > 0 {
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.RuntimeClasses},
			Columns: "NAME:.metadata.name,HANDLER:.handler,NODE_SELECTOR:.scheduling.nodeSelector,TOLERATIONS:.scheduling.tolerations[*].key"},
			"where each RuntimeClass's pods may be scheduled")
	}
	if crds, err := checks.List[*apiextensionsv1.CustomResourceDefinition](ctx, env, cluster.Query{Resource: cluster.CRDs}); err == nil {
		var agent []string
		for _, c := range crds {
			if c.Spec.Group == agentSandboxGroup || strings.HasSuffix(c.Spec.Group, "."+agentSandboxGroup) {
				agent = append(agent, c.Name)
			}
		}
		if len(agent) > 0 {
			slices.Sort(agent)
			r.Details = append(r.Details, "the Kubernetes agent-sandbox project is installed: CRDs "+strings.Join(agent, ", "))
		}
	}
	var usable, idle []string
	for _, sc := range found {
		desc := fmt.Sprintf("RuntimeClass %s (%s, handler %s)", sc.class.Name, sc.sandbox, sc.class.Handler)
		if len(sc.nodes) == 0 {
			idle = append(idle, desc)
			continue
		}
		usable = append(usable, fmt.Sprintf("%s admits %s", desc, checks.Plural(len(sc.nodes), "Ready node")))
	}
	switch {
	case len(usable) > 0:
		r.Finish(checks.Pass, "%s", strings.Join(usable, "; "))
	case len(idle) > 0:
		r.Finish(checks.Warn, "%s admits no Ready, schedulable node (by its scheduling node selector)", strings.Join(idle, ", "))
	default:
		other := "there is no RuntimeClass"
		if len(others) > 0 {
			other = "the RuntimeClasses are " + strings.Join(others, ", ")
		}
		r.Finish(checks.Fail, "no RuntimeClass names a sandbox's handler (%s): %s", handlersOf(known), other)
	}
	return r, nil
}
