package main

import (
	"context"
	"fmt"
	"time"

	"github.com/aiconform/aiconform/submission"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// SubmissionLintOptions holds the flags of `aiconform submission lint`.
type SubmissionLintOptions struct {
	Dir      string
	Template string
	// Online requests the URLs the program requests (--online), each
	// within OnlineTimeout.
	Online        bool
	OnlineTimeout time.Duration

	streams genericiooptions.IOStreams
}

// newCmdSubmissionLint builds `aiconform submission lint`.
func newCmdSubmissionLint(streams genericiooptions.IOStreams) *cobra.Command {
	o := &SubmissionLintOptions{streams: streams}
	cmd := &cobra.Command{
		Use:   "lint DIR [--template FILE] [--online]",
		Short: "Check DIR/PRODUCT.yaml against the CNCF AI Conformance validator's rules",
		Long: `lint applies the program's validator rules to DIR/PRODUCT.yaml, offline unless --online:
every category and requirement of the checklist present, id, description and level
unchanged, status allowed, every MUST Implemented, N/A justified, no metadata
placeholder, k8sConformanceUrl well formed, evidence files inside DIR and present,
and test reports (junit.xml, results.json, e2e.log, file://path#TestName) passing.

The checklist is chosen by metadata.kubernetesVersion. Descriptions are compared
only with --template, the official AIConformance-X.Y.yaml (or a directory holding
them): aiconform does not ship the checklist's text.

Evidence URLs and the metadata URLs (websiteUrl, repoUrl, documentationUrl,
productLogoUrl, k8sConformanceUrl) must answer below 400: without --online they
are listed as checked online by the program; with --online each is requested
(HEAD, then GET if HEAD is not allowed; up to 10 redirects; --online-timeout
each), and one that answers 400 or above, or not at all, is a problem.
vendorName, which must be a CNCF member's exact name, is left to the program.

One line per problem: FILE: REQUIREMENT: RULE: message. Exit 1 if there is any
problem, 2 if DIR cannot be judged.`,
		Example: `  aiconform submission lint v1.36/acme --template AIConformance-1.36.yaml
  # and request every URL, as the program will
  aiconform submission lint v1.36/acme --template AIConformance-1.36.yaml --online`,
		Args: exactlyOneDir,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			if o.OnlineTimeout <= 0 {
				return usageErrorf("--online-timeout must be positive")
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.Template, "template", "", "the official AIConformance-X.Y.yaml, or a directory of them")
	cmd.Flags().BoolVar(&o.Online, "online", false, "request every evidence and metadata URL, as the program does: each must answer below 400")
	cmd.Flags().DurationVar(&o.OnlineTimeout, "online-timeout", submission.DefaultOnlineTimeout, "time limit of each URL with --online, redirects included")
	return cmd
}

// Run lints the directory.
func (o *SubmissionLintOptions) Run(ctx context.Context) error {
	r, err := submission.LintDir(o.Dir, submission.LintOptions{Template: o.Template})
	if err != nil {
		return usageErrorf("lint %s: %v", o.Dir, err)
	}
	var online []submission.URLTarget
	if o.Online {
		if online, err = submission.LintOnline(ctx, o.Dir, r, submission.OnlineOptions{Timeout: o.OnlineTimeout}); err != nil {
			return usageErrorf("lint %s: %v", o.Dir, err)
		}
	}
	if err := r.Write(o.streams.Out, o.Dir, o.Online, online); err != nil {
		return err
	}
	if len(r.Problems) > 0 {
		// A submission the program would reject is a finding, like an
		// unmet requirement: exit 1.
		return &notMetError{msg: fmt.Sprintf("%s: %d problem(s)", o.Dir, len(r.Problems))}
	}
	return nil
}
