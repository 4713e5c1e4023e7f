package cluster

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tableAccept is the Accept header kubectl sends for `kubectl get`: the
// server renders the rows, CRD printer columns included.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

// parseTable reads one page of a Table response, with each row's object
// decoded as the page is (tablePage) and trimmed, as decodeRows leaves it.
func parseTable(body []byte) (*metav1.Table, error) {
	var page tablePage
	if err := json.Unmarshal(body, &page); err != nil {
		return nil, fmt.Errorf("decode table: %w", err)
	}
	if page.Kind != "Table" {
		return nil, fmt.Errorf("server answered %q where a Table was asked for", page.Kind)
	}
	t := &metav1.Table{TypeMeta: page.TypeMeta, ListMeta: page.ListMeta, ColumnDefinitions: page.ColumnDefinitions,
		Rows: make([]metav1.TableRow, len(page.Rows))}
	for i, r := range page.Rows {
		t.Rows[i] = metav1.TableRow{Cells: r.Cells, Conditions: r.Conditions}
		if r.Object == nil {
			continue
		}
		if r.Object.Kind == "" {
			return nil, fmt.Errorf("decode row %d: the object has no kind", i)
		}
		obj := &metav1.PartialObjectMetadata{TypeMeta: r.Object.TypeMeta, ObjectMeta: r.Object.Metadata.ObjectMeta}
		trim(obj)
		t.Rows[i].Object.Object = obj
	}
	return t, nil
}

// tablePage is a page of a Table as the server sends it, its rows' objects
// (metadata only) decoded in the same pass as the page: a metav1.Table
// keeps them raw, to be parsed a second time, and that second pass was
// most of what reading a Table cost. Their managed fields, most of a
// node's metadata, are passed over, not decoded.
type tablePage struct {
	metav1.TypeMeta
	metav1.ListMeta   `json:"metadata,omitempty"`
	ColumnDefinitions []metav1.TableColumnDefinition `json:"columnDefinitions"`
	Rows              []struct {
		Cells      []any                      `json:"cells"`
		Conditions []metav1.TableRowCondition `json:"conditions,omitempty"`
		Object     *struct {
			metav1.TypeMeta
			Metadata struct {
				metav1.ObjectMeta
				// Shadows ObjectMeta's: the shallower field is the
				// one JSON decodes into.
				ManagedFields passedOver `json:"managedFields,omitempty"`
			} `json:"metadata"`
		} `json:"object,omitempty"`
	} `json:"rows"`
}

// passedOver decodes nothing of a JSON value.
type passedOver struct{}

func (*passedOver) UnmarshalJSON([]byte) error { return nil }

// decodeRows turns each row's raw object into an object the table printer
// can read namespace and labels from, as kubectl does before printing. The
// server sends metadata only (PartialObjectMetadata), which a typed struct
// holds in a fraction of the time and memory of a map.
func decodeRows(t *metav1.Table) error {
	for i := range t.Rows {
		row := &t.Rows[i]
		if row.Object.Raw == nil || row.Object.Object != nil {
			continue
		}
		obj := &metav1.PartialObjectMetadata{}
		if err := json.Unmarshal(row.Object.Raw, obj); err != nil {
			return fmt.Errorf("decode row %d: %w", i, err)
		}
		if obj.Kind == "" {
			return fmt.Errorf("decode row %d: the object has no kind", i)
		}
		// The rows' metadata carries managed fields, most of it on a
		// node; the printers read names, namespaces and labels only, and a
		// recording marshals the object again.
		trim(obj)
		row.Object.Object, row.Object.Raw = obj, nil
	}
	return nil
}

// rowName is the name of the object a row shows.
func rowName(row metav1.TableRow) string {
	if o := row.Object.Object; o != nil {
		if m, err := meta.Accessor(o); err == nil {
			return m.GetName()
		}
	}
	if len(row.Cells) > 0 {
		if s, ok := row.Cells[0].(string); ok {
			return s
		}
	}
	return ""
}
