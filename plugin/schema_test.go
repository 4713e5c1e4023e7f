package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// schemaDef compiles one definition of docs/report.schema.json, asserting
// formats, as the report's own schema test does.
func schemaDef(t *testing.T, def string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", "report.schema.json"))
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	require.NoError(t, c.AddResource("report.schema.json", doc))
	s, err := c.Compile("report.schema.json#/$defs/" + def)
	require.NoError(t, err)
	return s
}

// TestAnswerSchema holds the schema to what ParseAnswer accepts: a plugin
// author validating with the schema gets the verdict aiconform gives.
func TestAnswerSchema(t *testing.T) {
	s := schemaDef(t, "pluginAnswer")
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(goodAnswer))
	require.NoError(t, err)
	assert.NoError(t, s.Validate(doc))
	judged := 0
	for name, out := range badAnswers {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
		if err != nil {
			continue // not one JSON document: nothing for a schema to judge
		}
		judged++
		assert.Error(t, s.Validate(doc), name)
	}
	assert.GreaterOrEqual(t, judged, 10)
}
