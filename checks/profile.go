package checks

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"path"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/labels"
)

// Profile says what identifies one operator and how to judge it.
type Profile struct {
	Name  string `yaml:"name"`
	Title string `yaml:"title"`
	// Groups are the API groups of the operator's CRDs; a cluster serving
	// any of them has the operator.
	Groups []string `yaml:"groups"`
	// CRDs must all be present, Established and NamesAccepted.
	CRDs []string `yaml:"crds"`
	// Served, by CRD name, is a version the CRD must serve for the
	// profile to be found by it: a CRD name two operators share, each
	// with versions of its own (the MPI Operator's mpijobs.kubeflow.org
	// serves v2beta1, the Training Operator's v1).
	Served     map[string]string `yaml:"served"`
	Controller Controller        `yaml:"controller"`
	// Webhooks are the names the operator's installers (kustomize, Helm)
	// give its webhook configurations, validating or mutating: a webhook in
	// one of them is the operator's. Webhooks served from the controller's
	// namespace whose rules name the operator's groups are the operator's
	// without being listed. None of these names must exist: installers differ.
	Webhooks []string `yaml:"webhooks"`
	// RequiredWebhooks are webhook names (not configurations) the operator
	// registers however it is installed; each must be among its own.
	RequiredWebhooks []string       `yaml:"requiredWebhooks"`
	Resources        []ResourceKind `yaml:"resources"`
	// Probe is what --probe sends to prove the operator's webhooks answer
	// and its controller reconciles; nil when the profile has none.
	Probe *Probe `yaml:"probe"`
	// Carries are the requirements the profile's solution can meet. Empty
	// means robust_controller: every operator with CRDs is a candidate
	// for it, and some are more (Kueue is also a gang scheduler).
	Carries []string `yaml:"carries"`
	// Gang says how the solution admits gangs, for gang_scheduling.
	Gang *Gang `yaml:"gang"`

	// Source is the file the profile came from, for messages.
	Source string `yaml:"-"`
}

// Controller says how to know the operator's controller. It is found in
// any namespace (Locate): Namespace and Deployment are where the
// operator's own manifests put it, hints that order what is found and
// pick among Deployments of one namespace, never the only place looked.
type Controller struct {
	Namespace  string `yaml:"namespace"`
	Deployment string `yaml:"deployment"`
	// Selector is the labels of the controller's pod template, which its
	// installers share (kustomize and Helm alike).
	Selector string `yaml:"selector"`
	// Lease is the controller's leader-election Lease (its
	// LeaderElectionID), in the controller's own namespace; empty when the
	// operator has none.
	Lease string `yaml:"lease"`
}

// At is a copy of p for its install in namespace ns, when the operator
// runs in several: named and titled for it, so that each is judged and
// reported apart.
func (p *Profile) At(ns string) *Profile {
	cp := *p
	cp.Name = p.Name + "@" + ns
	cp.Title = p.Title + " in " + ns
	return &cp
}

// ResourceKind is a kind of custom resource the controller reconciles.
// Operators and their versions differ in the conditions they write and in
// what they create, so a profile says both for the version it describes.
type ResourceKind struct {
	// CRD is the CRD's name (plural.group).
	CRD string `yaml:"crd"`
	// ReadyConditions must be True while the resource runs; with
	// AnyCondition one of them suffices. Empty when the operator writes no
	// condition for a running resource (Trainer v2.0's TrainJob): its
	// children alone show it is reconciled.
	ReadyConditions []string `yaml:"readyConditions"`
	AnyCondition    bool     `yaml:"anyCondition"`
	// IdleConditions, any of them True, mean the resource rightly runs no
	// pod: it has run to its end (Complete, Succeeded) or is held
	// (Suspended). ReadyConditions are not asked for then, nor built-in
	// children (operators clean up pods, Jobs and Services by policy); the
	// custom children, the operator's record of the run, still are.
	IdleConditions []string `yaml:"idleConditions"`
	// FailedConditions, any of them True, mean the resource failed.
	FailedConditions []string `yaml:"failedConditions"`
	// ChildLabel is the label key whose value is the owning resource's name
	// on the pods (and the built-in children) the controller creates for it.
	ChildLabel string `yaml:"childLabel"`
	// Children are the kinds each resource must own, directly or through
	// the others, by ownerReferences: Deployment (with its ReplicaSets),
	// Service, Job, Pod, or a custom resource named by its CRD
	// (jobsets.jobset.x-k8s.io), which is matched by ownership alone. A
	// resource with children must also own a Running and Ready pod, unless
	// it is idle.
	Children []string `yaml:"children"`
}

// childKinds are the built-in kinds a profile may name as children.
var childKinds = []string{"Deployment", "Job", "Pod", "Service"}

// CustomChild is true for a child named by its CRD (plural.group).
func CustomChild(kind string) bool { return strings.Contains(kind, ".") }

//go:embed profiles/*.yaml
var builtinProfiles embed.FS

// BuiltinProfiles returns the profiles shipped in the binary, by name.
func BuiltinProfiles() ([]*Profile, error) {
	entries, err := builtinProfiles.ReadDir("profiles")
	if err != nil {
		return nil, err
	}
	var ps []*Profile
	for _, e := range entries {
		name := path.Join("profiles", e.Name())
		data, err := builtinProfiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		more, err := ParseProfiles(name, data)
		if err != nil {
			return nil, err
		}
		ps = append(ps, more...)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	return ps, nil
}

var (
	nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	lineRE = regexp.MustCompile(`line (\d+): `)
)

// ParseProfiles reads one or more YAML documents of profiles. Errors name
// file:line.
func ParseProfiles(file string, data []byte) ([]*Profile, error) {
	// Each document is parsed once, into a node that keeps the lines
	// errors point to, and decoded from it.
	nodes := yaml.NewDecoder(bytes.NewReader(data))
	var ps []*Profile
	for {
		var doc yaml.Node
		if err := nodes.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fileLineError(file, err)
		}
		// A misspelt key is named with the nearest right one, where
		// yaml.v3's KnownFields would name the Go type.
		if line, msg := UnknownKey(&doc, reflect.TypeOf(Profile{})); msg != "" {
			return nil, fmt.Errorf("%s:%d: %s", file, line, msg)
		}
		p := &Profile{Source: file}
		if err := doc.Decode(p); err != nil {
			return nil, fileLineError(file, err)
		}
		if err := p.validate(&doc); err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("%s: no profile in file", file)
	}
	return ps, nil
}

// fileLineError turns yaml's "line N: msg" into "file:N: msg".
func fileLineError(file string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	msg = yamlWords(msg)
	if m := lineRE.FindStringSubmatchIndex(msg); m != nil && m[0] == 0 {
		return fmt.Errorf("%s:%s: %s", file, msg[m[2]:m[3]], msg[m[1]:])
	}
	return fmt.Errorf("%s: %s", file, msg)
}

// yamlTags and goTypes put yaml's words for a value of the wrong kind in a
// profile's terms: a user wrote YAML, not Go (`cannot unmarshal !!seq into
// checks.Profile` says a profile is a mapping, not a list).
var (
	yamlTags = strings.NewReplacer("cannot unmarshal ", "found ", "!!seq", "a list", "!!map", "a mapping", "!!str", "the string", "!!int", "the number",
		"!!bool", "the boolean", "!!float", "the number", "!!null", "nothing")
	goTypeRE = regexp.MustCompile(`into (\[\])?([\w.]+)`)
)

func yamlWords(msg string) string {
	msg = yamlTags.Replace(msg)
	return goTypeRE.ReplaceAllStringFunc(msg, func(m string) string {
		sub := goTypeRE.FindStringSubmatch(m)
		what := "a mapping"
		switch sub[2] {
		case "checks.Profile":
			what = "a profile (a mapping: name, title, groups, controller...)"
		case "string":
			what = "a string"
		case "bool":
			what = "true or false"
		case "int", "int32", "int64", "float64":
			what = "a number"
		}
		if sub[1] != "" {
			what = "a list of " + strings.TrimPrefix(strings.TrimPrefix(what, "a "), "an ") + "s"
		}
		return "where the profile needs " + what
	})
}

func findKey(n *yaml.Node, key string) *yaml.Node {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i]
			}
		}
	}
	for _, c := range n.Content {
		if f := findKey(c, key); f != nil {
			return f
		}
	}
	return nil
}

// lineOf is the line of a top-level key of doc, or of the document.
func lineOf(doc *yaml.Node, key string) int {
	if n := findKey(doc, key); n != nil {
		return n.Line
	}
	return doc.Line
}

func (p *Profile) validate(doc *yaml.Node) error {
	bad := func(key, format string, args ...any) error {
		return fmt.Errorf("%s:%d: profile %q: %s", p.Source, lineOf(doc, key), p.Name, fmt.Sprintf(format, args...))
	}
	if !nameRE.MatchString(p.Name) {
		return bad("name", "name must be lowercase letters, digits and dashes")
	}
	if len(p.Groups) == 0 {
		return bad("groups", "groups: at least one API group is needed to detect the operator")
	}
	for _, c := range p.CRDs {
		if !p.ownsCRD(c) {
			return bad("crds", "crd %q is not in the profile's groups %v", c, p.Groups)
		}
	}
	for crd, v := range p.Served {
		if !Contains(p.CRDs, crd) || v == "" {
			return bad("served", "served: %q must be one of the profile's crds, with a version", crd)
		}
	}
	if p.Controller.Selector == "" {
		return bad("controller", "controller: a selector (the labels of its pod template) is required to find it")
	}
	if _, err := labels.Parse(p.Controller.Selector); err != nil {
		return bad("selector", "controller selector: %v", err)
	}
	if p.Probe != nil {
		if err := p.Probe.parse(p); err != nil {
			return bad("probe", "probe: %v", err)
		}
	}
	if p.Gang != nil {
		if !p.CandidateFor("gang_scheduling") {
			return bad("gang", "gang: the profile must carry gang_scheduling (carries:)")
		}
		if err := p.Gang.validate(p); err != nil {
			return bad("gang", "gang: %v", err)
		}
	}
	for i, r := range p.Resources {
		// Errors in a resource point into that resource's own mapping.
		at := func(key, format string, args ...any) error {
			line := lineOf(doc, "resources")
			if item := resourceItem(doc, i); item != nil {
				line = lineOf(item, key)
			}
			return fmt.Errorf("%s:%d: profile %q: %s", p.Source, line, p.Name, fmt.Sprintf(format, args...))
		}
		if !p.ownsCRD(r.CRD) {
			return at("crd", "resource crd %q is not in the profile's groups %v", r.CRD, p.Groups)
		}
		if len(r.ReadyConditions) == 0 && len(r.Children) == 0 {
			return at("readyConditions", "resource %s: readyConditions is empty, and no children show it is reconciled", r.CRD)
		}
		if len(r.Children) > 0 && r.ChildLabel == "" {
			return at("children", "resource %s: children need a childLabel to find them", r.CRD)
		}
		for _, k := range r.Children {
			if !Contains(childKinds, k) && !CustomChild(k) {
				return at("children", "resource %s: child kind %q, want one of %v or a CRD name (plural.group)", r.CRD, k, childKinds)
			}
		}
	}
	return nil
}

// resourceItem is the i-th entry of the document's resources list.
func resourceItem(doc *yaml.Node, i int) *yaml.Node {
	seq := valueOf(doc, "resources")
	if seq == nil || seq.Kind != yaml.SequenceNode || i >= len(seq.Content) {
		return nil
	}
	return seq.Content[i]
}

// valueOf is the value node of a key anywhere in n.
func valueOf(n *yaml.Node, key string) *yaml.Node {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i+1]
			}
		}
	}
	for _, c := range n.Content {
		if v := valueOf(c, key); v != nil {
			return v
		}
	}
	return nil
}

// CandidateFor is true when the profile's solution may carry the
// requirement id.
func (p *Profile) CandidateFor(id string) bool {
	if len(p.Carries) == 0 {
		return id == "robust_controller"
	}
	return Contains(p.Carries, id)
}

// ownsCRD is true when the CRD name (plural.group) is in one of p's groups.
func (p *Profile) ownsCRD(name string) bool {
	_, group, ok := strings.Cut(name, ".")
	return ok && Contains(p.Groups, group)
}
