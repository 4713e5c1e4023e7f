package checks_test

import (
	"strings"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestBuiltinProfiles(t *testing.T) {
	ps := checkstest.BuiltinProfiles(t)
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
		t.Run(p.Name, func(t *testing.T) {
			assert.Equal(t, "profiles/"+p.Name+".yaml", p.Source, "one profile per file, named after it")
			assert.NotEmpty(t, p.Title)
			assert.NotEmpty(t, p.Groups)
			assert.NotEmpty(t, p.CRDs)
			assert.NotEmpty(t, p.Controller.Namespace)
			assert.NotEmpty(t, p.Controller.Deployment)
			assert.NotEmpty(t, p.Controller.Selector)
			if p.CandidateFor("robust_controller") {
				assert.NotEmpty(t, p.Resources, "crs-reconciled needs a kind to judge")
			}
			for _, r := range p.Resources {
				assert.Contains(t, p.CRDs, r.CRD, "a judged kind's CRD is one the profile requires")
			}
		})
	}
	// Sorted by name, and the ones the design promises are there.
	assert.Equal(t, []string{"aibrix", "coscheduling", "dynamo", "kaito", "kserve", "kubeflow-pipelines", "kubeflow-trainer",
		"kubeflow-training", "kuberay", "kueue", "mpi-operator", "nim-operator", "volcano"}, names)
}

const goodProfile = `name: demo
title: Demo
groups: [demo.example.com]
crds: [widgets.demo.example.com]
controller:
  namespace: demo-system
  selector: app=demo
resources:
  - crd: widgets.demo.example.com
    readyConditions: [Ready]
    childLabel: demo.example.com/widget
    children: [Deployment, Pod, Service]
`

func TestParseProfiles(t *testing.T) {
	t.Run("one profile", func(t *testing.T) {
		ps, err := checks.ParseProfiles("demo.yaml", []byte(goodProfile))
		require.NoError(t, err)
		require.Len(t, ps, 1)
		p := ps[0]
		assert.Equal(t, "demo", p.Name)
		assert.Equal(t, "demo.yaml", p.Source)
		assert.Equal(t, checks.Controller{Namespace: "demo-system", Selector: "app=demo"}, p.Controller)
		assert.Equal(t, []checks.ResourceKind{{CRD: "widgets.demo.example.com", ReadyConditions: []string{"Ready"},
			ChildLabel: "demo.example.com/widget", Children: []string{"Deployment", "Pod", "Service"}}}, p.Resources)
	})
	t.Run("several documents", func(t *testing.T) {
		ps, err := checks.ParseProfiles("two.yaml", []byte(goodProfile+"---\n"+`name: other
title: Other
groups: [other.example.com]
controller: {namespace: other, selector: "app in (a,b)"}
`))
		require.NoError(t, err)
		require.Len(t, ps, 2)
		assert.Equal(t, "other", ps[1].Name)
		assert.Equal(t, "two.yaml", ps[1].Source)
	})
}

func TestParseProfilesErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		err  string
	}{
		{
			name: "misspelt field",
			yaml: "name: x\ntitle: X\ngroups: [a.io]\ncontroler: {namespace: n, selector: a=b}\n",
			err:  `p.yaml:4: unknown key "controler"; did you mean "controller"?`,
		},
		{
			name: "misspelt nested field",
			yaml: "name: x\ntitle: X\ngroups: [a.io]\ncontroller:\n  namespace: n\n  selektor: a=b\n",
			err:  `p.yaml:6: unknown key "selektor"; did you mean "selector"?`,
		},
		{
			name: "misspelt field in a later document",
			yaml: "name: x\ntitle: X\ngroups: [a.io]\ncontroller: {namespace: n, selector: a=b}\n---\nname: y\ntitle: Y\ngroups: [b.io]\ncontroller: {namespace: n, selector: a=b}\nbogus: 1\n",
			err:  `p.yaml:10: unknown key "bogus"; known keys: carries, controller, crds, gang, groups, name, probe, requiredWebhooks, resources, served, title, webhooks`,
		},
		{
			name: "bad selector",
			yaml: "name: x\ntitle: X\ngroups: [a.io]\ncontroller:\n  namespace: n\n  selector: 'a in (b'\n",
			err:  `p.yaml:6: profile "x": controller selector: unable to parse requirement`,
		},
		{
			name: "crd outside the groups",
			yaml: "name: x\ntitle: X\ngroups: [a.io]\ncontroller: {namespace: n, selector: a=b}\ncrds: [foos.a.io, foos.b.io]\n",
			err:  `p.yaml:5: profile "x": crd "foos.b.io" is not in the profile's groups [a.io]`,
		},
		{
			name: "crd outside the groups in a later document",
			yaml: "name: x\ntitle: X\ngroups: [a.io]\ncontroller: {namespace: n, selector: a=b}\n---\nname: y\ntitle: Y\ngroups: [b.io]\ncontroller: {namespace: n, selector: a=b}\ncrds: [foo.a.io]\n",
			err:  `p.yaml:10: profile "y": crd "foo.a.io" is not in the profile's groups [b.io]`,
		},
		{
			name: "resource crd outside the groups",
			yaml: "name: x\ntitle: X\ngroups: [a.io]\ncontroller: {namespace: n, selector: a=b}\nresources:\n  - crd: foos\n    readyConditions: [Ready]\n",
			err:  `p.yaml:6: profile "x": resource crd "foos" is not in the profile's groups [a.io]`,
		},
		{
			name: "child kind not allowed",
			yaml: "name: x\ntitle: X\ngroups: [a.io]\ncontroller: {namespace: n, selector: a=b}\nresources:\n  - crd: foos.a.io\n    readyConditions: [Ready]\n    childLabel: l\n    children: [Deployment, ReplicaSet]\n",
			err:  `p.yaml:9: profile "x": resource foos.a.io: child kind "ReplicaSet", want one of [Deployment Job Pod Service] or a CRD name (plural.group)`,
		},
		{
			name: "children without a label",
			yaml: "name: x\ntitle: X\ngroups: [a.io]\ncontroller: {namespace: n, selector: a=b}\nresources:\n  - crd: foos.a.io\n    readyConditions: [Ready]\n    children: [Pod]\n",
			err:  `p.yaml:8: profile "x": resource foos.a.io: children need a childLabel to find them`,
		},
		{
			name: "no ready condition",
			yaml: "name: x\ntitle: X\ngroups: [a.io]\ncontroller: {namespace: n, selector: a=b}\nresources:\n  - crd: foos.a.io\n",
			err:  `p.yaml:6: profile "x": resource foos.a.io: readyConditions is empty`,
		},
		{
			name: "bad name",
			yaml: "name: KServe_2\ntitle: X\ngroups: [a.io]\ncontroller: {namespace: n, selector: a=b}\n",
			err:  `p.yaml:1: profile "KServe_2": name must be lowercase letters, digits and dashes`,
		},
		{
			name: "no group",
			yaml: "name: x\ntitle: X\ncontroller: {namespace: n, selector: a=b}\n",
			err:  `p.yaml:1: profile "x": groups: at least one API group is needed`,
		},
		{
			name: "no controller selector",
			yaml: "name: x\ntitle: X\ngroups: [a.io]\ncontroller: {namespace: n}\n",
			err:  `p.yaml:4: profile "x": controller: a selector (the labels of its pod template) is required to find it`,
		},
		{
			name: "wrong type",
			yaml: "name: x\ntitle: X\ngroups: a.io\n",
			err:  "p.yaml:3: found the string `a.io` where the profile needs a list of strings",
		},
		{
			// A list where a profile goes: yaml's words, not Go's type.
			name: "a list, not a profile",
			yaml: "- name: x\n",
			err:  "p.yaml:1: found a list where the profile needs a profile (a mapping: name, title, groups, controller...)",
		},
		{
			name: "YAML syntax error",
			yaml: "name: x\n  title: X\n",
			err:  "p.yaml:2: mapping values are not allowed in this context",
		},
		{
			name: "YAML syntax error, unclosed flow",
			yaml: "name: x\ntitle: X\ngroups: [a.io\ncontroller: {}\n",
			err:  "p.yaml:2: did not find expected ',' or ']'",
		},
		{
			name: "empty file",
			yaml: "",
			err:  "p.yaml: no profile in file",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := checks.ParseProfiles("p.yaml", []byte(tc.yaml))
			require.Error(t, err)
			assert.Nil(t, ps)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// An error in the second resource points at the second resource.
func TestParseProfilesErrorLineOfLaterResource(t *testing.T) {
	_, err := checks.ParseProfiles("p.yaml", []byte(`name: x
title: X
groups: [a.io]
controller: {namespace: n, selector: a=b}
resources:
  - crd: foos.a.io
    readyConditions: [Ready]
    childLabel: l
    children: [Deployment]
  - crd: bars.a.io
    readyConditions: [Ready]
    childLabel: l
    children: [ReplicaSet]
`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "p.yaml:13:")
}

func TestProbeProfileErrors(t *testing.T) {
	base := `
name: widgets
groups: [demo.example.com]
controller: {namespace: demo, selector: app=widgets}
`
	tests := []struct{ name, probe, want string }{
		{"deniedBy missing", "probe:\n  invalid: |\n    apiVersion: demo.example.com/v1\n    kind: Widget\n    metadata: {name: bad}\n", "deniedBy: webhook is required with invalid"},
		{"other group", "probe:\n  canary: |\n    apiVersion: other.example.com/v1\n    kind: Widget\n    metadata: {name: c}\n", "not in the profile's groups"},
		{"namespace set", "probe:\n  canary: |\n    apiVersion: demo.example.com/v1\n    kind: Widget\n    metadata: {name: c, namespace: default}\n", "metadata.namespace must be left out"},
		{"empty", "probe: {}\n", "neither invalid nor canary is set"},
		{"not YAML", "probe:\n  canary: '{'\n", "probe: canary"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checks.ParseProfiles("widgets.yaml", []byte(base+tc.probe))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "widgets.yaml:", "the error names the file and line")
		})
	}
	ps, err := checks.BuiltinProfiles()
	require.NoError(t, err)
	for _, p := range ps {
		if p.Name == "kserve" || p.Name == "kuberay" {
			require.NotNil(t, p.Probe, p.Name)
			assert.NotNil(t, p.Probe.InvalidObject(), p.Name)
			assert.NotNil(t, p.Probe.CanaryObject(), p.Name)
		}
	}
}

func TestGangProfile(t *testing.T) {
	const base = `name: queues
title: Queues
groups: [queue.example.com]
controller: {namespace: q, selector: app=q}
`
	const gang = `gang:
  queues: [{crd: clusterqueues.queue.example.com, readyConditions: [Active]}]
  workloads: {crd: workloads.queue.example.com, admittedCondition: Admitted, podCounts: "spec.podSets[].count"}
`
	ps, err := checks.ParseProfiles("q.yaml", []byte(base+"carries: [gang_scheduling]\n"+gang))
	require.NoError(t, err)
	assert.True(t, ps[0].CandidateFor("gang_scheduling"))
	assert.False(t, ps[0].CandidateFor("robust_controller"), "a profile that lists what it carries carries nothing else")

	_, err = checks.ParseProfiles("q.yaml", []byte(base+gang))
	assert.ErrorContains(t, err, "q.yaml:5: profile \"queues\": gang: the profile must carry gang_scheduling (carries:)")
	_, err = checks.ParseProfiles("q.yaml", []byte(base+"carries: [gang_scheduling]\n"+strings.Replace(gang, "workloads.queue", "workloads.other", 1)))
	assert.ErrorContains(t, err, "workloads: crd (of the profile's groups), admittedCondition and podCounts are required")

	// The shipped Kueue profile's probe parses, with its placeholders filled.
	for _, p := range checkstest.BuiltinProfiles(t) {
		if p.Name != "kueue" {
			gangs := p.Name == "volcano" || p.Name == "coscheduling"
			assert.Equal(t, gangs, p.CandidateFor("gang_scheduling"), p.Name)
			continue
		}
		require.NotNil(t, p.Gang)
		setup, fits, exceeds, err := p.Gang.Probe.Objects("RUN1", "aiconform-probe-RUN1", "mirror.example/pause:3.10")
		require.NoError(t, err)
		for _, gang := range []*unstructured.Unstructured{fits, exceeds} {
			cs, _, _ := unstructured.NestedSlice(gang.Object, "spec", "template", "spec", "containers")
			require.Len(t, cs, 1)
			assert.Equal(t, "mirror.example/pause:3.10", cs[0].(map[string]any)["image"], "--probe-image runs the gangs")
		}
		require.Len(t, setup, 3)
		cq, _, _ := unstructured.NestedString(setup[2].Object, "spec", "clusterQueue")
		assert.Equal(t, "aiconform-gang-RUN1", cq, "the LocalQueue names the ClusterQueue as Label will rename it")
		sel, _, _ := unstructured.NestedString(setup[1].Object, "spec", "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name")
		assert.Equal(t, "aiconform-probe-RUN1", sel)
		n, _, _ := unstructured.NestedInt64(fits.Object, "spec", "parallelism")
		assert.Equal(t, int64(p.Gang.Probe.Fits.Pods), n)
		n, _, _ = unstructured.NestedInt64(exceeds.Object, "spec", "parallelism")
		assert.Equal(t, int64(p.Gang.Probe.Exceeds.Pods), n)
	}
	// `aiconform cleanup` looks for leftovers of every kind a probe writes,
	// the gang probe's own quota included.
	var kinds []string
	for _, gvk := range checks.ProbeKinds(checkstest.BuiltinProfiles(t)) {
		kinds = append(kinds, gvk.Kind)
	}
	assert.Subset(t, kinds, []string{"ClusterQueue", "ResourceFlavor", "LocalQueue", "Job"})
}

func TestPodCount(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"podSets": []any{
		map[string]any{"count": int64(1)}, map[string]any{"count": int64(4)},
	}, "minMember": int64(3)}}}
	n, ok := checks.PodCount(u, "spec.podSets[].count")
	assert.True(t, ok)
	assert.Equal(t, int64(5), n)
	n, ok = checks.PodCount(u, "spec.minMember")
	assert.True(t, ok)
	assert.Equal(t, int64(3), n)
	_, ok = checks.PodCount(u, "spec.replicas")
	assert.False(t, ok, "an absent field is no count")
}
