package main

import (
	"fmt"
	"io"

	"github.com/aiconform/aiconform/submission"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// SubmissionLintOptions holds the flags of `aiconform submission lint`.
type SubmissionLintOptions struct {
	Dir      string
	Template string

	streams genericiooptions.IOStreams
}

// newCmdSubmissionLint builds `aiconform submission lint`.
func newCmdSubmissionLint(streams genericiooptions.IOStreams) *cobra.Command {
	o := &SubmissionLintOptions{streams: streams}
	cmd := &cobra.Command{
		Use:   "lint DIR [--template FILE]",
		Short: "Check DIR/PRODUCT.yaml offline against the CNCF AI Conformance validator's rules",
		Long: `lint applies the program's validator rules to DIR/PRODUCT.yaml without a network:
every category and requirement of the checklist present, id, description and level
unchanged, status allowed, every MUST Implemented, N/A justified, no metadata
placeholder, k8sConformanceUrl well formed, evidence files inside DIR and present,
and test reports (junit.xml, results.json, e2e.log, file://path#TestName) passing.

The checklist is chosen by metadata.kubernetesVersion. Descriptions are compared
only with --template, the official AIConformance-X.Y.yaml (or a directory holding
them): aiconform does not ship the checklist's text. Evidence URLs and vendorName
are listed as checked online by the program.

One line per problem: FILE: REQUIREMENT: RULE: message. Exit 1 if there is any
problem, 2 if DIR cannot be judged.`,
		Example: `  aiconform submission lint v1.36/acme --template AIConformance-1.36.yaml`,
		Args:    exactlyOneDir,
		RunE: func(_ *cobra.Command, args []string) error {
			o.Dir = args[0]
			return o.Run()
		},
	}
	cmd.Flags().StringVar(&o.Template, "template", "", "the official AIConformance-X.Y.yaml, or a directory of them")
	return cmd
}

// Run lints the directory.
func (o *SubmissionLintOptions) Run() error {
	r, err := submission.LintDir(o.Dir, submission.LintOptions{Template: o.Template})
	if err != nil {
		return usageErrorf("lint %s: %v", o.Dir, err)
	}
	if err := writeLint(o.streams.Out, o.Dir, r); err != nil {
		return err
	}
	if len(r.Problems) > 0 {
		// A submission the program would reject is a finding, like an
		// unmet requirement: exit 1.
		return &notMetError{msg: fmt.Sprintf("%s: %d problem(s)", o.Dir, len(r.Problems))}
	}
	return nil
}

// writeLint renders a lint result: problems first, since they are what a
// vendor must fix, then what only the program can check, then the summary.
func writeLint(w io.Writer, dir string, r *submission.LintResult) error {
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	for _, pr := range r.Problems {
		p("%s\n", pr)
	}
	if len(r.URLs) > 0 {
		p("checked online by the program (not here): %d URL(s) must answer below 400\n", len(r.URLs))
		for _, u := range r.URLs {
			p("  %s: %s\n", u.Requirement, u.URL)
		}
	}
	for _, u := range r.Unchecked {
		p("not checked offline: %s\n", u)
	}
	against := "aiconform's built-in checklist " + r.Version
	if r.Template != "" {
		against = r.Template
	}
	if len(r.Problems) == 0 {
		p("%s: no problems against %s\n", dir, against)
	} else {
		p("%s: %d problem(s) against %s\n", dir, len(r.Problems), against)
	}
	return err
}
