package cluster

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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

// decodeRows turns each row's raw object (the server sends metadata only)
// into an object the table printer can read namespace and labels from, as
// kubectl does before printing.
func decodeRows(t *metav1.Table) error {
	for i := range t.Rows {
		row := &t.Rows[i]
		if row.Object.Raw == nil || row.Object.Object != nil {
			continue
		}
		obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, row.Object.Raw)
		if err != nil {
			return fmt.Errorf("decode row %d: %w", i, err)
		}
		row.Object.Object = obj
	}
	return nil
}

// rowName is the name of the object a row shows.
func rowName(row metav1.TableRow) string {
	if u, ok := row.Object.Object.(*unstructured.Unstructured); ok {
		return u.GetName()
	}
	if len(row.Cells) > 0 {
		if s, ok := row.Cells[0].(string); ok {
			return s
		}
	}
	return ""
}
