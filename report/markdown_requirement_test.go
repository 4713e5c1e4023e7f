package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// MarkdownRequirement is report.md cut down to its header and one
// requirement's section, byte for byte: an evidence file must say nothing
// report.md does not.
func TestMarkdownRequirement(t *testing.T) {
	for name, r := range map[string]*Report{"live": sealed(t, fixture()), "recorded": sealed(t, recorded())} {
		t.Run(name, func(t *testing.T) {
			var full bytes.Buffer
			require.NoError(t, Markdown(&full, r))
			doc := full.String()
			header := doc[:strings.Index(doc, "## Summary\n")]
			sections := map[string]string{
				"robust_controller":     doc[strings.Index(doc, "## robust_controller\n"):strings.Index(doc, "## gpu_nodes_allocatable\n")],
				"gpu_nodes_allocatable": doc[strings.Index(doc, "## gpu_nodes_allocatable\n"):],
			}
			for id, section := range sections {
				var got bytes.Buffer
				require.NoError(t, MarkdownRequirement(&got, r, id))
				assert.Equal(t, header+section, got.String(), id)
			}

			var got bytes.Buffer
			require.NoError(t, MarkdownRequirement(&got, r, "robust_controller"))
			out := got.String()
			assert.Contains(t, out, "- **Digest:** `"+r.Digest+"`")
			assert.Contains(t, out, "**Evidence 1**")
			assert.Contains(t, out, "# captured: ")
			assert.Contains(t, out, "→ KServe meets it")
			assert.NotContains(t, out, "## gpu_nodes_allocatable")
			assert.NotContains(t, out, "## Operators")
			assert.Equal(t, !r.Run.Cluster.Live, strings.Contains(out, "**Recorded, not live.**"))
		})
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestMarkdownRequirementErrors(t *testing.T) {
	r := sealed(t, fixture())
	assert.EqualError(t, MarkdownRequirement(&bytes.Buffer{}, r, "gang_scheduling"), `markdown: the report has no requirement "gang_scheduling"`)
	assert.EqualError(t, MarkdownRequirement(&bytes.Buffer{}, nil, "robust_controller"), "markdown: no report")
	assert.EqualError(t, MarkdownRequirement(failingWriter{}, r, "robust_controller"), "disk full")
}
