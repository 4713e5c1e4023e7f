package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/cli-runtime/pkg/printers"
)

// Get is one `kubectl get` invocation. Command prints the line a person can
// run; Cache.Print renders what that line prints on the same cluster, from the
// same Tables kubectl would receive. Keeping both in one value is what makes
// every evidence block re-runnable.
type Get struct {
	Resources     []Resource
	Namespace     string
	AllNamespaces bool
	LabelSelector string
	FieldSelector string
	// Names narrows a single resource to these objects, in this order, as
	// `kubectl get crd a b` does. A few names are read one by one (see
	// namedTable); more come from the one LIST of them all.
	Names []string
	Wide  bool
	// LabelColumns are kubectl's -L columns.
	LabelColumns []string
	// Columns, when set, is a custom-columns spec (`-o custom-columns=`):
	// kubectl prints those columns from the full objects, client side,
	// where the server's Table has no column for what the evidence must
	// show (a node's allocatable GPUs).
	Columns string
	// Grep is an extended regular expression the output is piped through
	// (`| grep -E`), as evidence written by hand often is.
	Grep string
}

// Command is the kubectl command line.
func (g Get) Command() string {
	args := []string{"kubectl", "get"}
	res := make([]string, len(g.Resources))
	for i, r := range g.Resources {
		res[i] = r.Arg
	}
	args = append(args, strings.Join(res, ","))
	args = append(args, g.Names...)
	switch {
	case g.allNamespaces():
		args = append(args, "-A")
	case g.namespaced():
		args = append(args, "-n", g.Namespace)
	}
	if g.LabelSelector != "" {
		args = append(args, "-l", g.LabelSelector)
	}
	if g.FieldSelector != "" {
		args = append(args, "--field-selector", g.FieldSelector)
	}
	for _, l := range g.LabelColumns {
		args = append(args, "-L", l)
	}
	switch {
	case g.Columns != "":
		args = append(args, "-o", "custom-columns="+g.Columns)
	case g.Wide:
		args = append(args, "-o", "wide")
	}
	for i := range args {
		args[i] = shellQuote(args[i])
	}
	s := strings.Join(args, " ")
	if g.Grep != "" {
		s += " | grep -E " + shellQuote(g.Grep)
	}
	return s
}

// namespaced is true when a namespace narrows a namespaced resource;
// kubectl ignores -n for cluster-scoped resources, and so does Command.
func (g Get) namespaced() bool {
	return g.Namespace != "" && !g.AllNamespaces && g.anyNamespaced()
}

// allNamespaces is true when a namespaced resource is read across every
// namespace: asked for, or implied by no namespace at all. Without -A, kubectl
// would read the kubeconfig's namespace instead, so the command must say it.
func (g Get) allNamespaces() bool {
	return g.anyNamespaced() && (g.AllNamespaces || g.Namespace == "")
}

func (g Get) anyNamespaced() bool {
	for _, r := range g.Resources {
		if r.Namespaced {
			return true
		}
	}
	return false
}

// Queries are the LISTs the command makes, one per resource.
func (g Get) Queries() []Query {
	qs := make([]Query, len(g.Resources))
	for i, r := range g.Resources {
		q := Query{Resource: r, LabelSelector: g.LabelSelector, FieldSelector: g.FieldSelector}
		if r.Namespaced && !g.allNamespaces() {
			q.Namespace = g.Namespace
		}
		qs[i] = q
	}
	return qs
}

// Print renders what g.Command() prints, standard output then standard
// error as a terminal shows them, and returns when the newest Table it used
// was captured. An error means a Table could not be read at all; the
// caller decides what that makes of its check.
func (c *Cache) Print(ctx context.Context, g Get) (string, time.Time, error) {
	if len(g.Names) > 0 && len(g.Resources) != 1 {
		return "", time.Time{}, fmt.Errorf("kubectl get: names need exactly one resource type")
	}
	if g.Columns != "" {
		return c.printColumns(ctx, g)
	}
	var out, errOut bytes.Buffer
	tracking := &trackingWriter{w: &out}
	sep := &separatorWriter{w: tracking}
	tw := printers.GetNewTabWriter(sep)
	withKind := len(g.Resources) > 1
	var captured time.Time
	for i, q := range g.Queries() {
		t, at, err := c.namedTable(ctx, q, g.Names)
		if err != nil {
			return kubectlError(err), at, err
		}
		if at.After(captured) {
			captured = at
		}
		t = printable(t)
		if len(g.Names) > 0 {
			var missing []string
			t.Rows, missing = pick(t.Rows, rowName, g.Names)
			for _, name := range missing {
				fmt.Fprintf(&errOut, "Error from server (NotFound): %s %q not found\n", qualified(q.Resource), name)
			}
		}
		// kubectl starts a fresh printer per resource type: column widths
		// restart, and a blank line separates types once something was
		// written.
		tw.Flush()
		tw.SetRememberedWidths(nil)
		if i > 0 && tracking.n > 0 {
			sep.ready = true
		}
		p := printers.NewTablePrinter(printers.PrintOptions{
			WithNamespace: g.allNamespaces() && q.Resource.Namespaced,
			WithKind:      withKind,
			Kind:          q.Resource.GroupKind(),
			Wide:          g.Wide,
			ColumnLabels:  g.LabelColumns,
		})
		if err := p.PrintObj(t, tw); err != nil {
			return "", captured, fmt.Errorf("print %s: %w", q, err)
		}
	}
	tw.Flush()
	if tracking.n == 0 && errOut.Len() == 0 {
		if g.namespaced() && g.allNamespaced() {
			fmt.Fprintf(&errOut, "No resources found in %s namespace.\n", g.Namespace)
		} else {
			fmt.Fprintln(&errOut, "No resources found")
		}
	}
	stdout, err := g.grepped(out.String())
	if err != nil {
		return "", captured, err
	}
	return stdout + errOut.String(), captured, nil
}

// maxNamedReads is the most names Print reads one by one; past it, one
// LIST of them all costs less.
const maxNamedReads = 10

// namedTable is the Table of q that Print picks names from: with a few
// names, their rows alone, each read by a LIST that only the object of
// that name passes (as `kubectl get` of a name reads it alone). Evidence
// names a handful of nodes of thousands: the whole Table of 2,000 nodes
// was 3.7 MiB of JSON, 0.2 s of the API server's CPU to print, and as
// much of aiconform's to read, for five rows.
func (c *Cache) namedTable(ctx context.Context, q Query, names []string) (*metav1.Table, time.Time, error) {
	if len(names) == 0 || len(names) > maxNamedReads || q.LabelSelector != "" || q.FieldSelector != "" {
		return c.Table(ctx, q)
	}
	var (
		out      *metav1.Table
		captured time.Time
		read     = map[string]bool{}
	)
	for _, name := range names {
		if read[name] {
			continue
		}
		read[name] = true
		t, at, err := c.Table(ctx, q.Named(name))
		if at.After(captured) {
			captured = at
		}
		if err != nil {
			return nil, captured, err
		}
		if out == nil {
			out = &metav1.Table{TypeMeta: t.TypeMeta, ColumnDefinitions: t.ColumnDefinitions}
		}
		out.Rows = append(out.Rows, t.Rows...)
	}
	return out, captured, nil
}

// printable is a copy of t that kubectl's table printer may change: it
// rewrites rows and their cells in place (namespace, kind and label
// columns), and reads the rows' objects only. The objects are shared with
// the run's cache, not copied: a Table of 2,000 nodes is printed by several
// checks, and a deep copy for each was most of what printing cost.
func printable(t *metav1.Table) *metav1.Table {
	c := *t
	c.Rows = make([]metav1.TableRow, len(t.Rows))
	for i, row := range t.Rows {
		row.Cells = slices.Clone(row.Cells)
		c.Rows[i] = row
	}
	return &c
}

// grepped is stdout as the command's `| grep -E` leaves it; the pipe takes
// standard output only, so kubectl's errors are never filtered.
func (g Get) grepped(stdout string) (string, error) {
	if g.Grep == "" {
		return stdout, nil
	}
	re, err := regexp.Compile(g.Grep)
	if err != nil {
		return "", fmt.Errorf("grep -E %q: %w", g.Grep, err)
	}
	return grep(stdout, re), nil
}

// printColumns renders custom columns the way kubectl's generic printing
// does: every object fetched, gathered into one v1 List, printed once.
func (c *Cache) printColumns(ctx context.Context, g Get) (string, time.Time, error) {
	var errOut bytes.Buffer
	var items []map[string]any
	var captured time.Time
	for _, q := range g.Queries() {
		objs, at, err := c.List(ctx, q)
		if err != nil {
			return kubectlError(err), at, err
		}
		if at.After(captured) {
			captured = at
		}
		if len(g.Names) > 0 {
			var missing []string
			objs, missing = pick(objs, objectName, g.Names)
			for _, name := range missing {
				fmt.Fprintf(&errOut, "Error from server (NotFound): %s %q not found\n", qualified(q.Resource), name)
			}
		}
		apiVersion, kind := q.Resource.GVR.GroupVersion().WithKind(q.Resource.Kind).ToAPIVersionAndKind()
		for _, o := range objs {
			m, err := jsonMap(o)
			if err != nil {
				return "", captured, err
			}
			m["apiVersion"], m["kind"] = apiVersion, kind
			items = append(items, m)
		}
	}
	cols, err := parseColumns(g.Columns)
	if err != nil {
		return "", captured, fmt.Errorf("custom-columns %q: %w", g.Columns, err)
	}
	// kubectl prints the list, and so its header, even when it is empty;
	// only a single name it cannot find ends the command before that.
	var out bytes.Buffer
	if len(items) > 0 || len(g.Names) != 1 {
		if err := writeColumns(&out, cols, items); err != nil {
			return "", captured, fmt.Errorf("custom-columns %q: %w", g.Columns, err)
		}
	}
	stdout, err := g.grepped(out.String())
	if err != nil {
		return "", captured, err
	}
	return stdout + errOut.String(), captured, nil
}

// jsonMap is o as kubectl reads it from the server's JSON, a map of its
// own that the caller may write at its top level. Of an unstructured
// object it is a copy of the object's map, which is shared with every
// check (two checks printing the same custom resources at once wrote it
// together). A typed object is written as JSON and read back: apimachinery's
// converter, which gives the same map, caches what it learns of each field
// of each type in a map it copies whole for each new one, and learning the
// fields of the few kinds a run prints that way was a fortieth of check
// all's CPU.
func jsonMap(o runtime.Object) (map[string]any, error) {
	if u, ok := o.(runtime.Unstructured); ok {
		return maps.Clone(u.UnstructuredContent()), nil
	}
	data, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// kubectlError is how kubectl prints an error the API server answered with,
// so that evidence of a refused read reads as the command would show it.
// Other errors (a recording without the answer) have no kubectl form.
func kubectlError(err error) string {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return ""
	}
	// kubectl prints the status it got, not what wraps it.
	return KubectlMessage(&apierrors.StatusError{ErrStatus: st.Status()}) + "\n"
}

func (g Get) allNamespaced() bool {
	for _, r := range g.Resources {
		if !r.Namespaced {
			return false
		}
	}
	return true
}

// pick keeps the named items in the order named, as kubectl's one GET per
// name would print them, and says which are missing.
func pick[T any](items []T, nameOf func(T) string, names []string) (kept []T, missing []string) {
	byName := make(map[string]T, len(items))
	for _, it := range items {
		byName[nameOf(it)] = it
	}
	for _, n := range names {
		if it, ok := byName[n]; ok {
			kept = append(kept, it)
		} else {
			missing = append(missing, n)
		}
	}
	return kept, missing
}

// objectName is the name of a listed object.
func objectName(o runtime.Object) string {
	if m, err := meta.Accessor(o); err == nil {
		return m.GetName()
	}
	return ""
}

// qualified is how API errors name a resource: "deployments.apps".
func qualified(r Resource) string {
	if r.GVR.Group == "" {
		return r.GVR.Resource
	}
	return r.GVR.Resource + "." + r.GVR.Group
}

func grep(s string, re *regexp.Regexp) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if line != "" && re.MatchString(strings.TrimSuffix(line, "\n")) {
			b.WriteString(line)
		}
	}
	return b.String()
}

// GrepAny is an extended regular expression matching any of the literal
// words, for Get.Grep.
func GrepAny(words ...string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = regexp.QuoteMeta(w)
	}
	return strings.Join(q, "|")
}

type trackingWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int
}

func (t *trackingWriter) Write(p []byte) (int, error) {
	t.n += len(p)
	return t.w.Write(p)
}

// separatorWriter writes one blank line before the next non-empty write once
// it is made ready: kubectl's separation between resource types.
type separatorWriter struct {
	w     interface{ Write([]byte) (int, error) }
	ready bool
}

func (s *separatorWriter) Write(p []byte) (int, error) {
	if len(p) > 0 && s.ready {
		if _, err := s.w.Write([]byte("\n")); err != nil {
			return 0, err
		}
		s.ready = false
	}
	return s.w.Write(p)
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=,:@%+", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
