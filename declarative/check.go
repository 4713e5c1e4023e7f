package declarative

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// maxDetails bounds the failing objects a result lists: on a cluster of
// thousands of nodes, the first ones show the pattern and the count says
// the rest.
const maxDetails = 100

// read is what a check lists.
type read struct {
	gv            schema.GroupVersion
	kind          string
	namespace     string
	labelSelector string
	fieldSelector string
}

// check is a check of a file.
type check struct {
	meta        checks.Meta
	read        read
	each, all   *program
	message     string
	messageExpr *program
	listMessage string
	onFailure   checks.Status
}

// Meta implements checks.Check.
func (c *check) Meta() checks.Meta { return c.meta }

// describe is the user's description followed by what the check reads and
// the expressions it judges by: Description is what docs and the catalog
// digest hold of a check, so two runs whose files differ only in an
// expression do not look judged by the same rules.
func (c *check) describe() string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(c.meta.Description))
	fmt.Fprintf(&b, " Declarative check: reads %s %s", c.read.kind, c.read.gv)
	if c.read.namespace != "" {
		fmt.Fprintf(&b, " in namespace %s", c.read.namespace)
	}
	if c.read.labelSelector != "" {
		fmt.Fprintf(&b, " with labels %s", c.read.labelSelector)
	}
	if c.read.fieldSelector != "" {
		fmt.Fprintf(&b, " with fields %s", c.read.fieldSelector)
	}
	b.WriteString(";")
	if c.each != nil {
		fmt.Fprintf(&b, " each object must satisfy `%s`;", oneLine(c.each.source))
	}
	if c.all != nil {
		fmt.Fprintf(&b, " the list must satisfy `%s`;", oneLine(c.all.source))
	}
	fmt.Fprintf(&b, " otherwise %s.", c.onFailure)
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// discoveryPath is the path of the API server's list of the resources of
// gv, the one `kubectl api-resources` reads.
func discoveryPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

// resolve finds the resource serving the check's kind from the cluster's
// discovery, read through the run's cache (so a recording replays it).
// A kind the cluster does not serve is an error saying so: the check cannot
// be evaluated, which is not a Pass.
func (c *check) resolve(ctx context.Context, env *checks.Env, r *checks.Result) (cluster.Resource, error) {
	path := discoveryPath(c.read.gv)
	body, _, err := env.Cluster.Raw(ctx, path)
	if err != nil {
		r.AddRawEvidence(ctx, env, cluster.GetRaw{Path: path}, "the resources the cluster serves in "+c.read.gv.String())
		if apierrors.IsNotFound(err) {
			return cluster.Resource{}, fmt.Errorf("the cluster does not serve kind %s: it serves no API group version %s", c.read.kind, c.read.gv)
		}
		return cluster.Resource{}, fmt.Errorf("read which resources the cluster serves in %s: %w", c.read.gv, err)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		return cluster.Resource{}, fmt.Errorf("read which resources the cluster serves in %s: GET %s: %w", c.read.gv, path, err)
	}
	for _, res := range list.APIResources {
		if res.Kind != c.read.kind || strings.Contains(res.Name, "/") {
			continue // another kind, or a subresource (nodes/status is a Node too)
		}
		arg := res.Name
		if c.read.gv.Group != "" {
			// kubectl's fully qualified form, which no other group's
			// resource of the same name can shadow.
			arg = res.Name + "." + c.read.gv.Group
		}
		return cluster.Resource{GVR: c.read.gv.WithResource(res.Name), Kind: res.Kind, Arg: arg, Namespaced: res.Namespaced}, nil
	}
	r.AddRawEvidence(ctx, env, cluster.GetRaw{Path: path, Grep: `"kind":`}, "the kinds the cluster serves in "+c.read.gv.String())
	return cluster.Resource{}, fmt.Errorf("the cluster does not serve kind %s in %s (it serves %s)", c.read.kind, c.read.gv, kinds(list))
}

func kinds(l metav1.APIResourceList) string {
	var ks []string
	for _, r := range l.APIResources {
		if !strings.Contains(r.Name, "/") && !checks.Contains(ks, r.Kind) {
			ks = append(ks, r.Kind)
		}
	}
	if len(ks) == 0 {
		return "no kind"
	}
	return checks.CapLines(ks, 10, ", ")
}

// Run implements checks.Check. It returns an error only for what the
// runner cannot know better: a verdict, Error included, is in the Result.
func (c *check) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	res, err := c.resolve(ctx, env, &r)
	if err != nil {
		r.Finish(checks.Error, "%v", err)
		return r, nil
	}
	if !res.Namespaced && c.read.namespace != "" {
		r.Finish(checks.Error, "%s is not namespaced: read.namespace %q has no meaning for it", c.read.kind, c.read.namespace)
		return r, nil
	}
	// Whole: the cache drops of some kinds what no built-in check reads (a
	// node's images, a workload's pod template), and a user's expression
	// may read exactly that; it must not see such a field absent.
	q := cluster.Query{Resource: res, LabelSelector: c.read.labelSelector, FieldSelector: c.read.fieldSelector, Whole: true}
	if res.Namespaced {
		q.Namespace = c.read.namespace
	}
	get := cluster.Get{Resources: []cluster.Resource{res}, Namespace: q.Namespace,
		LabelSelector: c.read.labelSelector, FieldSelector: c.read.fieldSelector}
	objs, _, err := env.Cluster.List(ctx, q)
	if err != nil {
		r.AddEvidence(ctx, env, get, "the objects "+c.meta.ID+" judges")
		r.Finish(checks.Error, "list %s: %v", q, err)
		return r, nil
	}

	b := &budget{left: checkBudget}
	items := make([]any, 0, len(objs))
	var failed, broken, failedNames []string
	for _, o := range objs {
		m, err := asMap(o, res)
		if err != nil {
			r.Finish(checks.Error, "read %s as CEL sees it: %v", q, err)
			return r, nil
		}
		items = append(items, m)
		if c.each == nil {
			continue
		}
		who := objectRef(res, m)
		vars := map[string]any{objectVar: m}
		v, err := c.each.eval(ctx, b, vars)
		switch {
		case err != nil:
			broken = append(broken, who+": "+err.Error())
		case v != nil && v.Value() == false:
			failed = append(failed, who+": "+c.why(ctx, b, vars))
			failedNames = append(failedNames, objectName(m))
		}
		if ctx.Err() != nil || b.left == 0 {
			break
		}
	}
	if b.left == 0 && len(broken) == 0 {
		// Spent on a message: the objects after it were not judged.
		broken = append(broken, fmt.Sprintf("the check's CEL cost budget (%d) is spent", uint64(checkBudget)))
	}
	listFailed := ""
	if c.all != nil && len(broken) == 0 && ctx.Err() == nil {
		v, err := c.all.eval(ctx, b, map[string]any{objectsVar: items})
		switch {
		case err != nil:
			broken = append(broken, "the list: "+err.Error())
		case v.Value() == false:
			listFailed = c.listMessage
			if listFailed == "" {
				listFailed = "the list does not satisfy listExpression " + oneLine(c.all.source)
			}
		}
	}

	c.addEvidence(ctx, env, &r, get, len(objs), failedNames)
	noun := fmt.Sprintf("%s %s", res.Kind, res.GVR.GroupVersion())
	r.Details = capped(failed)
	switch {
	case ctx.Err() != nil:
		r.Finish(checks.Error, "evaluation of %d %s objects did not finish: %v", len(objs), noun, ctx.Err())
	case len(broken) > 0:
		r.Details = capped(append(broken, failed...))
		r.Finish(checks.Error, "%d of %d %s objects could not be judged: %s", len(broken), len(objs), noun, broken[0])
	case len(failed) > 0 || listFailed != "":
		var why []string
		if c.each != nil && len(failed) > 0 {
			why = append(why, fmt.Sprintf("%d of %d %s objects fail: %s", len(failed), len(objs), noun, firstMessage(failed[0])))
		}
		if listFailed != "" {
			why = append(why, listFailed)
		}
		r.Finish(c.onFailure, "%s", strings.Join(why, "; "))
	case len(objs) == 0 && c.all == nil:
		r.Finish(checks.Skip, "no %s object matched the read (%s): nothing to judge", noun, q)
	case c.each != nil:
		r.Finish(checks.Pass, "all %d %s objects satisfy the expression", len(objs), noun)
	default:
		r.Finish(checks.Pass, "the %d %s objects satisfy listExpression", len(objs), noun)
	}
	return r, nil
}

// evidenceRows is how many objects' rows the evidence of a failure shows
// at most: on a long list, the failing ones are what an auditor needs, and
// a report is no place for every pod of a cluster.
const evidenceRows = 20

// addEvidence adds the read, as kubectl prints it: the whole list, or of a
// list longer than evidenceRows with objects that failed, the first
// evidenceRows of those (grep keeps kubectl's header and their rows; an
// object of the same name in another namespace shows too).
func (c *check) addEvidence(ctx context.Context, env *checks.Env, r *checks.Result, get cluster.Get, n int, failedNames []string) {
	if len(failedNames) == 0 || n <= evidenceRows {
		r.AddEvidence(ctx, env, get, "the objects "+c.meta.ID+" judges")
		return
	}
	names := slices.Compact(slices.Sorted(slices.Values(failedNames)))
	note := fmt.Sprintf("the %d objects of %d that fail", len(failedNames), n)
	if len(names) > evidenceRows {
		names = names[:evidenceRows]
		note += fmt.Sprintf(", the first %d names shown", evidenceRows)
	}
	get.Grep = `^NAME|(^| )(` + cluster.GrepAny(names...) + `)( |$)`
	r.AddEvidence(ctx, env, get, note)
}

func objectName(m map[string]any) string {
	md, _ := m["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	return name
}

// why is the message of an object that failed expression: messageExpression,
// else message, else a sentence quoting the expression, as the API server
// falls back when an admission policy's messageExpression fails.
func (c *check) why(ctx context.Context, b *budget, vars map[string]any) string {
	fallback := c.message
	if fallback == "" {
		fallback = "does not satisfy " + oneLine(c.each.source)
	}
	if c.messageExpr == nil {
		return fallback
	}
	v, err := c.messageExpr.eval(ctx, b, vars)
	if err != nil {
		return fallback + " (" + err.Error() + ")"
	}
	s, _ := v.Value().(string)
	if strings.TrimSpace(s) == "" {
		return fallback
	}
	return oneLine(s)
}

// asMap is o as the API server would serve it, a JSON object, with its
// apiVersion and kind: typed lists leave them empty on their items, and an
// expression must not depend on where an object came from. The cache's
// objects are shared, so o itself is never changed.
func asMap(o runtime.Object, res cluster.Resource) (map[string]any, error) {
	var m map[string]any
	if u, ok := o.(*unstructured.Unstructured); ok {
		m = maps.Clone(u.Object)
	} else {
		var err error
		if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(o); err != nil {
			return nil, err
		}
	}
	if m["apiVersion"] == nil || m["apiVersion"] == "" {
		m["apiVersion"] = res.GVR.GroupVersion().String()
	}
	if m["kind"] == nil || m["kind"] == "" {
		m["kind"] = res.Kind
	}
	return m, nil
}

// objectRef names an object as kubectl prints it, kind/name, with its
// namespace for a namespaced one.
func objectRef(res cluster.Resource, m map[string]any) string {
	md, _ := m["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	ref := strings.ToLower(res.Kind) + "/" + objectName(m)
	if ns != "" {
		ref = ns + "/" + ref
	}
	return ref
}

// firstMessage is a detail line's message, without the object it names
// (the reason names the count, the details the objects).
func firstMessage(detail string) string {
	if _, msg, ok := strings.Cut(detail, ": "); ok {
		return msg
	}
	return detail
}

func capped(lines []string) []string {
	if len(lines) <= maxDetails {
		return lines
	}
	out := append([]string(nil), lines[:maxDetails]...)
	return append(out, fmt.Sprintf("and %d more", len(lines)-maxDetails))
}
