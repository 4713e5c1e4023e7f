package checks_test

import (
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
			assert.NotEmpty(t, p.Resources, "crs-reconciled needs a kind to judge")
			for _, r := range p.Resources {
				assert.Contains(t, p.CRDs, r.CRD, "a judged kind's CRD is one the profile requires")
			}
		})
	}
	// Sorted by name, and the ones the design promises are there.
	assert.Equal(t, []string{"kserve", "kubeflow-trainer", "kubeflow-training", "kuberay", "kueue"}, names)
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
			err:  "p.yaml:4: field controler not found in type checks.Profile",
		},
		{
			name: "misspelt nested field",
			yaml: "name: x\ntitle: X\ngroups: [a.io]\ncontroller:\n  namespace: n\n  selektor: a=b\n",
			err:  "p.yaml:6: field selektor not found in type checks.Controller",
		},
		{
			name: "misspelt field in a later document",
			yaml: "name: x\ntitle: X\ngroups: [a.io]\ncontroller: {namespace: n, selector: a=b}\n---\nname: y\ntitle: Y\ngroups: [b.io]\ncontroller: {namespace: n, selector: a=b}\nbogus: 1\n",
			err:  "p.yaml:10: field bogus not found in type checks.Profile",
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
			err:  `p.yaml:4: profile "x": controller: namespace and selector are required`,
		},
		{
			name: "wrong type",
			yaml: "name: x\ntitle: X\ngroups: a.io\n",
			err:  "p.yaml:3: cannot unmarshal !!str `a.io` into []string",
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
