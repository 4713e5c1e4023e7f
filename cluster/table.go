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

// parseTable reads one page of a Table response.
func parseTable(body []byte) (*metav1.Table, error) {
	var t metav1.Table
	if err := json.Unmarshal(body, &t); err != nil {
		return nil, fmt.Errorf("decode table: %w", err)
	}
	if t.Kind != "Table" {
		return nil, fmt.Errorf("server answered %q where a Table was asked for", t.Kind)
	}
	return &t, nil
}

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
