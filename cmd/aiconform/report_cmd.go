package main

import (
	"github.com/aiconform/aiconform/report"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// NewCmdReport builds `aiconform report`, the commands that read report.json
// files of earlier runs rather than a cluster.
func NewCmdReport(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Work with report.json files of earlier runs",
		// Without RunE cobra would print help and exit 0 on a mistyped
		// subcommand, which a script would take for success.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q for \"aiconform report\" (known: diff)", args[0])
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(NewCmdReportDiff(streams, nil))
	return cmd
}

// ReportDiffOptions holds every flag and argument of `aiconform report diff`.
type ReportDiffOptions struct {
	OldPath string
	NewPath string
	Output  string

	streams genericiooptions.IOStreams
}

// NewCmdReportDiff builds `aiconform report diff`. runF replaces Run in tests
// of argument parsing.
func NewCmdReportDiff(streams genericiooptions.IOStreams, runF func(*ReportDiffOptions) error) *cobra.Command {
	o := &ReportDiffOptions{streams: streams}
	cmd := &cobra.Command{
		Use:   "diff OLD.json NEW.json",
		Short: "Show what changed between two runs, and fail when a requirement got worse",
		Long: `Compare two report.json files: the run (cluster, versions, live or recording),
requirement verdicts, operators and their images, check results, and the output of
each evidence command (ignoring the AGE column and column widths).

Exits 1 when a requirement got worse: its status went down (Implemented, then
Partially Implemented, then Not Implemented; N/A is neither), a MUST result went
from pass or warn to fail or error, or an Implemented requirement is no longer
judged. A release can be gated on it.`,
		Example: `  # what changed since the last release
  aiconform report diff v1.2/report.json v1.3/report.json
  # the same, for a machine
  aiconform report diff old.json new.json -o json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf("report diff takes two report.json files, OLD and NEW; got %d", len(args))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			o.Complete(args)
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return o.Run()
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "text", "what to print on stdout: text or json")
	return cmd
}

// Complete takes the two paths from the arguments.
func (o *ReportDiffOptions) Complete(args []string) {
	o.OldPath, o.NewPath = args[0], args[1]
}

// Validate rejects bad flag values before any file is read.
func (o *ReportDiffOptions) Validate() error {
	switch o.Output {
	case "text", "json":
		return nil
	}
	return usageErrorf("--output %q: want text or json", o.Output)
}

// Run reads both reports, prints their differences and returns a
// notMetError when a requirement regressed.
func (o *ReportDiffOptions) Run() error {
	// report.ReadFile is strict (schema version, unknown fields, digest)
	// and names the file in every error.
	old, err := report.ReadFile(o.OldPath)
	if err != nil {
		return &usageError{err}
	}
	new, err := report.ReadFile(o.NewPath)
	if err != nil {
		return &usageError{err}
	}
	changes := report.Diff(old, new)
	render := report.DiffText
	if o.Output == "json" {
		render = report.DiffJSON
	}
	if err := render(o.streams.Out, changes); err != nil {
		return err
	}
	if changes.Regressed {
		return &notMetError{msg: report.DiffVerdict(changes)}
	}
	return nil
}
