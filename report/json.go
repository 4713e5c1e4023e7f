package report

import (
	"encoding/json"
	"io"
)

// JSON writes the report as indented JSON, the contract of
// docs/report.schema.json.
func JSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}
