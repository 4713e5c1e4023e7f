package declarative

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The file's apiVersion and kind. The version is in the file so that a later
// format can be told apart from this one rather than misread.
const (
	APIVersion = "aiconform.io/v1alpha1"
	Kind       = "Checks"
)

// Problem is one mistake in a file, where it is. Every error Load returns is
// made of Problems (errors.As finds the first), so that the CLI can tell a
// user's mistake (exit 2) from a failure of its own.
type Problem struct {
	File         string
	Line, Column int
	Msg          string
}

// Error is file:line:column: message, the form editors and CI logs link
// to the line; a Problem without a line (YAML that does not parse, whose
// parser says the line itself) is file: message.
func (p *Problem) Error() string {
	if p.Line == 0 {
		return p.File + ": " + p.Msg
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Column, p.Msg)
}

// File is a loaded file of checks: its requirements and checks, compiled and
// ready to run.
type File struct {
	name   string
	reqs   []checks.Requirement
	checks []*check
	// origin is where each requirement and check is declared, by id.
	origin map[string]string
}

// Name is where the file came from, as Load was told.
func (f *File) Name() string { return f.name }

// Checks are the file's checks, in the file's order.
func (f *File) Checks() []checks.Check {
	out := make([]checks.Check, len(f.checks))
	for i, c := range f.checks {
		out[i] = c
	}
	return out
}

// Requirements are the file's own requirements, in the file's order, each
// with the ids of the file's checks that name it. Checks that name a
// checklist requirement are not among them: checks.Extend adds their ids
// to that requirement's.
func (f *File) Requirements() []checks.Requirement {
	out := make([]checks.Requirement, len(f.reqs))
	for i, r := range f.reqs {
		r.Checks = slices.Clone(r.Checks)
		out[i] = r
	}
	return out
}

// Origin says where each of the file's requirements and checks is declared,
// file:line by id, for checks.Extensions.Origin: a clash found when files
// are merged then points at the line to change.
func (f *File) Origin() map[string]string { return maps.Clone(f.origin) }

// Extensions are the file's checks and requirements as a run takes them
// (checks.Extend); the caller merges those of several files and adds the
// skips of its config.
func (f *File) Extensions() checks.Extensions {
	return checks.Extensions{Checks: f.Checks(), Requirements: f.Requirements(), Origin: f.Origin()}
}

var (
	// Check ids are kebab-case like the built-in ones, since reports cite
	// them side by side; requirement ids are snake_case like the
	// checklist's.
	checkID       = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	requirementID = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
)

// Load reads a file of checks. name says where it came from in errors and in
// File.Name. catalog is the requirements the checks may name besides the
// file's own (the built-in catalog); its ids and check ids are taken, so a
// file cannot shadow them. A nil catalog leaves the requirements a file
// does not declare to checks.Extend, which knows them without a line. Decoding is strict: an unknown key, a missing
// field, a value out of range or a CEL expression that does not compile or
// is not of the right type is a Problem naming the file and line.
func Load(name string, data []byte, catalog []checks.Requirement) (*File, error) {
	d := &decoder{file: name}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &Problem{File: name, Msg: err.Error()}
	}
	if len(root.Content) == 0 {
		return nil, &Problem{File: name, Msg: "empty file: want apiVersion " + APIVersion + ", kind " + Kind}
	}
	f := &File{name: name, origin: map[string]string{}}
	top := d.mapping(root.Content[0], "file", []string{"apiVersion", "kind", "requirements", "checks"},
		"apiVersion", "kind", "checks")
	if top == nil {
		return nil, d.err()
	}
	if v, n := d.str(top, "apiVersion"); n != nil && v != APIVersion {
		d.errorf(n, "apiVersion %q: want %s", v, APIVersion)
	}
	if v, n := d.str(top, "kind"); n != nil && v != Kind {
		d.errorf(n, "kind %q: want %s", v, Kind)
	}

	taken := map[string]bool{}
	var builtinChecks []string
	for _, r := range catalog {
		taken[r.ID] = true
		builtinChecks = append(builtinChecks, r.Checks...)
	}
	own := map[string]int{}
	for _, n := range d.list(top["requirements"], "requirements") {
		r, ok := d.requirement(n)
		if !ok {
			continue
		}
		switch {
		case taken[r.ID]:
			d.errorf(n, "requirement %s is the checklist's: name it from a check instead of declaring it", r.ID)
		case own[r.ID] > 0:
			d.errorf(n, "requirement %s is declared twice", r.ID)
		default:
			own[r.ID] = len(f.reqs) + 1
			f.reqs = append(f.reqs, r)
			d.reqNodes = append(d.reqNodes, n)
			f.origin[r.ID] = fmt.Sprintf("%s:%d", name, n.Line)
		}
	}

	var known []string
	for _, r := range catalog {
		known = append(known, r.ID)
	}
	for _, r := range f.reqs {
		known = append(known, r.ID)
	}
	seen := map[string]bool{}
	checkNodes := d.list(top["checks"], "checks")
	if top["checks"] != nil && len(checkNodes) == 0 {
		d.errorf(top["checks"], "checks: the file declares no check")
	}
	for _, n := range checkNodes {
		c, reqNode := d.check(n)
		if c == nil {
			continue
		}
		id := c.meta.ID
		switch {
		case seen[id]:
			d.errorf(n, "check %s is declared twice", id)
			continue
		case slices.Contains(builtinChecks, id):
			d.errorf(n, "check %s is a built-in check's id: choose another", id)
			continue
		case slices.Contains(known, id):
			d.errorf(n, "check %s has the id of a requirement: reports could not tell them apart", id)
			continue
		}
		seen[id] = true
		req := c.meta.Requirement
		switch {
		case own[req] > 0:
			r := &f.reqs[own[req]-1]
			r.Checks = append(r.Checks, id)
		case taken[req], catalog == nil:
		default:
			d.errorf(reqNode, "requirement %q is neither the checklist's nor the file's%s", req, didYouMean(req, known))
			continue
		}
		f.checks = append(f.checks, c)
		f.origin[id] = fmt.Sprintf("%s:%d", name, n.Line)
	}
	for i, r := range f.reqs {
		if len(r.Checks) == 0 {
			d.errorf(d.reqNodes[i], "requirement %s: no check names it, so it could never be met", r.ID)
		}
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	return f, nil
}

// decoder walks a yaml.v3 tree, which keeps every node's line, and gathers
// every Problem rather than stop at the first: a user fixes a file in one go.
type decoder struct {
	file     string
	problems []error
	// reqNodes are the nodes of the file's requirements, in order, for
	// problems found after every check was read.
	reqNodes []*yaml.Node
}

func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	p := &Problem{File: d.file, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	d.problems = append(d.problems, p)
}

func (d *decoder) err() error { return errors.Join(d.problems...) }

// mapping reads n as a mapping of the given keys, required ones first
// checked, and returns each key's value node. Keys are the YAML's keys, so an
// unknown one is named with the nearest valid key.
func (d *decoder) mapping(n *yaml.Node, what string, keys []string, required ...string) map[string]*yaml.Node {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "%s: want a mapping, got %s", what, kindName(n))
		return nil
	}
	m := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case !slices.Contains(keys, k.Value):
			d.errorf(k, "%s: unknown key %q%s", what, k.Value, didYouMean(k.Value, keys))
		case m[k.Value] != nil:
			d.errorf(k, "%s: key %q given twice", what, k.Value)
		default:
			m[k.Value] = v
		}
	}
	for _, k := range required {
		if m[k] == nil {
			d.errorf(n, "%s: missing %s", what, k)
		}
	}
	return m
}

// str is the string value of key in m, and its node; nil when absent or not
// a scalar (a Problem then says so).
func (d *decoder) str(m map[string]*yaml.Node, key string) (string, *yaml.Node) {
	n := m[key]
	if n == nil {
		return "", nil
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.errorf(n, "%s: want a string, got %s", key, kindName(n))
		return "", nil
	}
	return n.Value, n
}

// nonEmpty is str for a field that must say something.
func (d *decoder) nonEmpty(m map[string]*yaml.Node, key string) (string, *yaml.Node) {
	v, n := d.str(m, key)
	if n != nil && strings.TrimSpace(v) == "" {
		d.errorf(n, "%s: must not be empty", key)
		return "", nil
	}
	return v, n
}

func (d *decoder) list(n *yaml.Node, what string) []*yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, "%s: want a list, got %s", what, kindName(n))
		return nil
	}
	return n.Content
}

func (d *decoder) requirement(n *yaml.Node) (checks.Requirement, bool) {
	m := d.mapping(n, "requirement", []string{"id", "title", "level"}, "id", "title", "level")
	if m == nil {
		return checks.Requirement{}, false
	}
	before := len(d.problems)
	id, idNode := d.nonEmpty(m, "id")
	if idNode != nil && !requirementID.MatchString(id) {
		d.errorf(idNode, "requirement id %q: want snake_case, as the checklist's (gpu_nodes_allocatable)", id)
	}
	title, _ := d.nonEmpty(m, "title")
	level, levelNode := d.str(m, "level")
	if levelNode != nil && level != string(checks.Must) && level != string(checks.Should) {
		d.errorf(levelNode, "level %q: want %s or %s", level, checks.Must, checks.Should)
	}
	if len(d.problems) > before {
		return checks.Requirement{}, false
	}
	return checks.Requirement{ID: id, Title: title, Level: checks.Level(level), Category: UserCategory, Program: checks.UserProgram}, true
}

// UserCategory is the Category of a requirement a file declares: the
// checklist's categories are its own.
const UserCategory = "user"

var checkKeys = []string{"id", "title", "requirement", "description", "remediation", "read",
	"expression", "message", "messageExpression", "listExpression", "listMessage", "onFailure"}

// check reads one check and compiles its expressions; nil when it has a
// Problem. The requirement's node comes back for the caller's problems.
func (d *decoder) check(n *yaml.Node) (*check, *yaml.Node) {
	m := d.mapping(n, "check", checkKeys, "id", "title", "requirement", "description", "remediation", "read")
	if m == nil {
		return nil, nil
	}
	before := len(d.problems)
	c := &check{}
	id, idNode := d.nonEmpty(m, "id")
	if idNode != nil && !checkID.MatchString(id) {
		d.errorf(idNode, "check id %q: want kebab-case (gpu-nodes-labelled)", id)
	}
	c.meta.ID = id
	c.meta.Title, _ = d.nonEmpty(m, "title")
	req, reqNode := d.nonEmpty(m, "requirement")
	c.meta.Requirement = req
	c.meta.Description, _ = d.nonEmpty(m, "description")
	c.meta.Remediation, _ = d.nonEmpty(m, "remediation")
	if rn := m["read"]; rn != nil {
		c.read = d.read(rn)
	}

	c.onFailure = checks.Fail
	if v, vn := d.str(m, "onFailure"); vn != nil {
		switch checks.Status(v) {
		case checks.Fail, checks.Warn:
			c.onFailure = checks.Status(v)
		default:
			d.errorf(vn, "onFailure %q: want %s or %s", v, checks.Fail, checks.Warn)
		}
	}

	expr, exprNode := d.nonEmpty(m, "expression")
	listExpr, listNode := d.nonEmpty(m, "listExpression")
	if m["expression"] == nil && m["listExpression"] == nil {
		d.errorf(n, "check %s: missing expression (each object) or listExpression (the list): give one or both", id)
	}
	if exprNode != nil {
		c.each = d.compile(objectEnv, exprNode, "expression", expr, boolResult)
	}
	if listNode != nil {
		c.all = d.compile(listEnv, listNode, "listExpression", listExpr, boolResult)
	}
	c.message, _ = d.nonEmpty(m, "message")
	if v, vn := d.nonEmpty(m, "messageExpression"); vn != nil {
		c.messageExpr = d.compile(objectEnv, vn, "messageExpression", v, stringResult)
	}
	c.listMessage, _ = d.nonEmpty(m, "listMessage")
	for _, k := range []string{"message", "messageExpression"} {
		if m[k] != nil && exprNode == nil {
			d.errorf(m[k], "%s: says why an object fails expression, which this check does not have", k)
		}
	}
	if m["listMessage"] != nil && listNode == nil {
		d.errorf(m["listMessage"], "listMessage: says why the list fails listExpression, which this check does not have")
	}
	if len(d.problems) > before {
		return nil, reqNode
	}
	c.meta.Description = c.describe()
	return c, reqNode
}

func (d *decoder) read(n *yaml.Node) read {
	m := d.mapping(n, "read", []string{"apiVersion", "kind", "namespace", "labelSelector", "fieldSelector"}, "apiVersion", "kind")
	if m == nil {
		return read{}
	}
	var r read
	apiVersion, avNode := d.nonEmpty(m, "apiVersion")
	if avNode != nil {
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil || gv.Version == "" {
			d.errorf(avNode, "apiVersion %q: want VERSION or GROUP/VERSION (v1, apps/v1)", apiVersion)
		}
		r.gv = gv
	}
	r.kind, _ = d.nonEmpty(m, "kind")
	r.namespace, _ = d.str(m, "namespace")
	if v, vn := d.str(m, "labelSelector"); vn != nil {
		if _, err := labels.Parse(v); err != nil {
			d.errorf(vn, "labelSelector %q: %v", v, err)
		}
		r.labelSelector = v
	}
	if v, vn := d.str(m, "fieldSelector"); vn != nil {
		if _, err := fields.ParseSelector(v); err != nil {
			d.errorf(vn, "fieldSelector %q: %v", v, err)
		}
		r.fieldSelector = v
	}
	return r
}

func didYouMean(word string, names []string) string {
	if n := checks.Nearest(word, names); n != "" {
		return fmt.Sprintf(" (did you mean %q?)", n)
	}
	return ""
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return fmt.Sprintf("%q", n.Value)
}
