package cluster

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"
)

// Custom columns are rendered here rather than by kubectl's printer:
// importing the kubectl module for it brought cli-runtime's flag machinery and
// kustomize into every run. What is printed must still be what
// `kubectl get -o custom-columns=SPEC` prints for the same objects; the
// golden files in testdata/columns were recorded from kubectl itself.

// column is one HEADER:PATH pair of a custom-columns spec.
type column struct {
	header string
	path   *jsonpath.JSONPath
}

// parseColumns reads a custom-columns spec as kubectl does, and refuses
// what kubectl refuses with kubectl's words, so that a spec kubectl would
// reject cannot produce evidence that the printed command never would.
// kubectl checks every pair's shape before it compiles any path, so a
// malformed pair is reported before a bad path earlier in the spec.
func parseColumns(spec string) ([]column, error) {
	if spec == "" {
		return nil, errors.New("custom-columns format specified but no custom columns given")
	}
	parts := strings.Split(spec, ",")
	cols := make([]column, len(parts))
	exprs := make([]string, len(parts))
	for i, part := range parts {
		header, path, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("unexpected custom-columns spec: %s, expected <header>:<json-path-expr>", part)
		}
		expr, err := relaxedPath(path)
		if err != nil {
			return nil, err
		}
		cols[i].header, exprs[i] = header, expr
	}
	for i, expr := range exprs {
		// Missing keys print as <none>, not as an error: most columns
		// name fields that only some objects have.
		p := jsonpath.New(fmt.Sprintf("column%d", i)).AllowMissingKeys(true)
		if err := p.Parse(expr); err != nil {
			return nil, err
		}
		cols[i].path = p
	}
	return cols, nil
}

// errRelaxedPath is kubectl's complaint about a column path it cannot
// make a JSONPath template of.
var errRelaxedPath = errors.New("unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'")

// relaxedPath turns a column's path into the JSONPath template kubectl
// evaluates: people write `.a.b`, `a.b`, `{a.b}` or `{.a.b}` and all
// mean `{.a.b}`. One pair of braces around the whole path is allowed and
// none inside it; an empty path stays empty, and prints <none>.
func relaxedPath(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	inner := path
	if len(path) >= 2 && path[0] == '{' && path[len(path)-1] == '}' {
		inner = path[1 : len(path)-1]
	}
	if inner == "" || strings.ContainsAny(inner, "{}") {
		return "", errRelaxedPath
	}
	// One leading dot is dropped, unless it is all there is: "." and "{.}"
	// become the recursive `{..}`, as they do in kubectl.
	if len(inner) > 1 && inner[0] == '.' {
		inner = inner[1:]
	}
	return "{." + inner + "}", nil
}

// writeColumns prints objects (as their JSON would decode) under cols the
// way kubectl prints a List with custom columns: the header once, even
// for no objects, then one line per object, aligned by kubectl's own
// tabwriter settings so that widths match to the byte.
func writeColumns(w io.Writer, cols []column, objects []map[string]any) error {
	tw := printers.GetNewTabWriter(w)
	cells := make([]string, len(cols))
	for i, c := range cols {
		cells[i] = c.header
	}
	fmt.Fprintln(tw, strings.Join(cells, "\t"))
	for _, o := range objects {
		for i, c := range cols {
			results, err := c.path.FindResults(o)
			if err != nil {
				// kubectl prints the lines before the failing object,
				// then the error; the caller has no use for half a table.
				return err
			}
			cells[i] = columnCell(results)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// columnCell is one object's value of one column: every match, joined
// with commas, or <none> when the path matched nothing. Values print as
// Go's %v does (maps as map[k:v], lists as [a b], JSON null as <nil>),
// because that is what kubectl does with them; escape and carriage-return
// characters are made visible, as kubectl does, so a value cannot drive
// the terminal.
func columnCell(results [][]reflect.Value) string {
	var vals []string
	if len(results) == 0 || len(results[0]) == 0 {
		vals = append(vals, "<none>")
	}
	for _, rs := range results {
		for _, v := range rs {
			if !v.IsValid() || !v.CanInterface() {
				continue
			}
			vals = append(vals, printers.EscapeTerminal(fmt.Sprint(v.Interface())))
		}
	}
	return strings.Join(vals, ",")
}
