package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/report"
	"github.com/aiconform/aiconform/submission"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// SubmissionBuildOptions holds every flag of `aiconform submission build`.
type SubmissionBuildOptions struct {
	// RunFlags are those of `check`: the results come from a run on the
	// live cluster or on a fixture, with probes and redaction as asked,
	// unless From names the report.json of an earlier run.
	RunFlags
	Template string
	Metadata string
	OutDir   string
	Force    bool
	From     string
	// WithJUnit are the JUnit XML files of other suites whose passing
	// testcases are evidence; JUnitMap maps their testcases explicitly.
	WithJUnit []string
	JUnitMap  string

	streams genericiooptions.IOStreams
	now     func() time.Time
}

// NewCmdSubmissionBuild builds `aiconform submission build`. now is the
// clock of a run (nil: the system's); runF replaces Run in tests of flag
// parsing.
func NewCmdSubmissionBuild(streams genericiooptions.IOStreams, now func() time.Time, runF func(*SubmissionBuildOptions) error) *cobra.Command {
	if now == nil {
		now = time.Now
	}
	o := &SubmissionBuildOptions{RunFlags: newRunFlags(), streams: streams, now: now}
	cmd := &cobra.Command{
		Use:   "build --template AIConformance-X.Y.yaml --metadata metadata.yaml --out DIR",
		Short: "Write a CNCF AI Conformance submission directory: PRODUCT.yaml filled from a run, with its evidence",
		Long: `build runs the checks the checklist can use (on the cluster, on --fixture, or takes them
from --from report.json) and writes DIR:

  PRODUCT.yaml      the template, with metadata.yaml's values, and each requirement's
                    status, evidence and notes: set from the report where aiconform judges
                    it, kept where the template already has them, otherwise left empty with
                    a note saying what the vendor must add. Nothing else in the template
                    changes: ids, descriptions, levels, order and comments stay as they are.
  evidence/ID.md    the report's section for each requirement PRODUCT.yaml cites
  report.md, report.json, junit.xml   the report, as 'check --out' writes it
  evidence/NAME/junit.xml   each --with-junit file, copied as it is

--with-junit (checklist 1.37 on) takes the JUnit XML of another suite. A testcase whose
name or classname holds a requirement id as a whole word maps to it; --junit-map maps
explicitly and wins. Where all of a requirement's testcases passed, their
file://evidence/NAME/junit.xml#TestName links are added beside aiconform's own evidence
(its status stays aiconform's) or, where aiconform does not judge it, make it Implemented.
A testcase that failed, errored or was skipped is never cited and is named on stderr.

The junit.xml of a submission is parsed by the program and fails it if any test in it
fails. So this one holds only the requirements PRODUCT.yaml cites, and when one operator
carries a requirement, the failing checks of the other operators are skipped there, each
with its real status in the message; report.md and report.json show them as they are. A
requirement that is not met keeps every failure. Use --operator to leave the others out.

metadata.yaml is a flat mapping of the template's metadata keys (and k8sConformanceUrl
from checklist 1.35 on). Placeholders, empty values and unknown keys are refused.

After writing, build lints DIR as 'submission lint' does and exits 1 while the program
would reject it, which it will until the vendor adds what aiconform cannot judge.`,
		Example: `  # from the cluster of the current context
  aiconform submission build --template AIConformance-1.36.yaml --metadata metadata.yaml --out v1.36/acme
  # from an earlier run
  aiconform submission build --from run/report.json --template AIConformance-1.36.yaml --metadata metadata.yaml --out v1.36/acme
  # again, on the PRODUCT.yaml the vendor has since worked on: their entries are kept
  aiconform submission build --template v1.36/acme/PRODUCT.yaml --metadata metadata.yaml --out v1.36/acme --force`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("build takes no arguments (got %q): name files with --template, --metadata and --out", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.loadConfig(cmd.Flags()); err != nil {
				return err
			}
			ext, err := o.extensions()
			if err != nil {
				return err
			}
			if ids := skipsOfChecklist(ext); ids != "" {
				return usageErrorf("a submission states every requirement of its checklist, and the config skips %s: build with a config without them (--config)", ids)
			}
			if err := o.Validate(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	o.RunFlags.AddFlags(f)
	f.StringVar(&o.Template, "template", "", "the official AIConformance-X.Y.yaml, or a PRODUCT.yaml being worked on")
	f.StringVar(&o.Metadata, "metadata", "", "a YAML file of the template's metadata keys and their values")
	f.StringVar(&o.OutDir, "out", "", "the submission directory to write (vX.Y/<product> in the program's repository)")
	f.BoolVar(&o.Force, "force", false, "write into a directory that is not empty; files build does not make are left alone")
	f.StringVar(&o.From, "from", "", "take the results from this report.json of an earlier run instead of running the checks")
	f.StringArrayVar(&o.WithJUnit, "with-junit", nil, "the JUnit XML of another test suite, copied in and cited where its "+
		"testcases map to a requirement and all passed (repeatable; checklist 1.37 on)")
	f.StringVar(&o.JUnitMap, "junit-map", "", "a YAML file mapping requirement ids to lists of testcase names or regular "+
		"expressions of the --with-junit suites; it wins over mapping by name")
	return cmd
}

// Validate rejects missing and contradictory flags before anything is read.
func (o *SubmissionBuildOptions) Validate(cmd *cobra.Command) error {
	for _, req := range []struct{ flag, value, what string }{
		{"--template", o.Template, "the AIConformance-X.Y.yaml to fill in"},
		{"--metadata", o.Metadata, "a metadata.yaml with the platform's name, vendor, URLs and contact"},
		{"--out", o.OutDir, "the directory to write the submission to"},
	} {
		if req.value == "" {
			return usageErrorf("%s is required: %s", req.flag, req.what)
		}
	}
	if o.From != "" {
		if o.Fixture != "" {
			return usageErrorf("--from and --fixture both name where the results come from; give one")
		}
		for _, name := range []string{"operator", "profile", "timeout", "kubeconfig", "context", "cluster", "server", "probe", "probe-timeout", "probe-image", "probe-shell-image", "hpa-metric", "probe-scale-up", "concurrency"} {
			if cmd != nil && cmd.Flags().Changed(name) {
				return usageErrorf("--%s applies to a run, and --from uses the report of one as it was made; drop one of them", name)
			}
		}
	}
	if o.JUnitMap != "" && len(o.WithJUnit) == 0 {
		return usageErrorf("--junit-map maps the testcases of --with-junit files, and none is given")
	}
	return o.RunFlags.Validate()
}

// Run builds the submission, writes it, prints the summary and the lint.
func (o *SubmissionBuildOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	tpl, err := submission.ReadTemplate(o.Template)
	if err != nil {
		return usageErrorf("--template: %v", err)
	}
	md, err := tpl.ReadMetadata(o.Metadata)
	if err != nil {
		return usageErrorf("--metadata: %v", err)
	}
	suites, jmap, err := o.readSuites(tpl)
	if err != nil {
		return err
	}
	if err := submission.CheckOutDir(o.OutDir, o.Force); err != nil {
		return o.outDirError(err)
	}

	var rep *report.Report
	var source string
	if o.From != "" {
		if rep, err = report.ReadFile(o.From); err != nil {
			return &usageError{fmt.Errorf("--from: %w", err)}
		}
		source = fmt.Sprintf("%s (%s, digest %s)", o.From, describeSource(rep.Run.Cluster), rep.Digest)
		if err := o.redactReport(rep); err != nil {
			return err
		}
	} else {
		if rep, err = o.runChecks(ctx, tpl.Checklist); err != nil {
			return err
		}
		source = describeSource(rep.Run.Cluster)
	}
	pkg, err := submission.Build(submission.BuildInput{Template: tpl, Metadata: md, Report: rep, Suites: suites, JUnitMap: jmap})
	if err != nil {
		return err
	}
	if err := pkg.Write(o.OutDir, o.Force); err != nil {
		return o.outDirError(err)
	}
	out := o.streams.Out
	fmt.Fprintf(out, "%s for checklist %s, from %s, with results from %s\n\n",
		filepath.Join(o.OutDir, submission.ProductName), tpl.Checklist.Version, o.Template, source)
	if err := pkg.WriteSummary(out); err != nil {
		return err
	}
	if len(pkg.Changed) == 0 {
		fmt.Fprintf(o.streams.ErrOut, "%s: every file build makes was already there, unchanged\n", o.OutDir)
	} else {
		fmt.Fprintf(o.streams.ErrOut, "wrote %s: %s\n", o.OutDir, strings.Join(pkg.Changed, ", "))
	}
	if err := pkg.WriteSuiteSummary(o.streams.ErrOut); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(o.OutDir, submission.ManifestName)); err == nil && len(pkg.Changed) > 0 {
		fmt.Fprintf(out, "%s was signed before this build changed %s: sign the directory again\n", filepath.Join(o.OutDir, submission.ManifestName), strings.Join(pkg.Changed, ", "))
	}

	lint, err := submission.LintDir(o.OutDir, submission.LintOptions{Template: o.Template})
	if err != nil {
		return fmt.Errorf("lint %s: %w", o.OutDir, err)
	}
	if err := writeBuildLint(out, o.OutDir, lint); err != nil {
		return err
	}
	if pkg.TemplateWorkedOn {
		fmt.Fprintf(out, "note: %s is a PRODUCT.yaml, not the official template, so its descriptions "+
			"prove nothing: before you submit, run aiconform submission lint %s "+
			"--template AIConformance-%s.yaml\n",
			o.Template, o.OutDir, tpl.Checklist.Version)
	}
	if len(lint.Problems) > 0 {
		vendorMust := 0
		for _, it := range pkg.Items {
			if it.Action == submission.ActionVendor && it.Level == submission.LevelMust {
				vendorMust++
			}
		}
		return &notMetError{msg: fmt.Sprintf("%s is not ready to submit: %d problem(s), %d MUST requirement(s) waiting "+
			"for the vendor's evidence", o.OutDir, len(lint.Problems), vendorMust)}
	}
	return nil
}

// readSuites reads --with-junit and --junit-map before anything is run or
// written: a wrong file or an id the template lacks is a usage error.
func (o *SubmissionBuildOptions) readSuites(tpl *submission.Template) ([]*submission.Suite, *submission.JUnitMap, error) {
	if len(o.WithJUnit) == 0 {
		return nil, nil, nil
	}
	if !tpl.Checklist.FileEvidence {
		return nil, nil, usageErrorf("--with-junit: checklist %s does not accept test reports as evidence "+
			"(file://FILE#TestName); the program accepts them from checklist 1.37", tpl.Checklist.Version)
	}
	var suites []*submission.Suite
	for _, f := range o.WithJUnit {
		s, err := submission.ReadSuite(f)
		if err != nil {
			return nil, nil, usageErrorf("--with-junit: %v", err)
		}
		suites = append(suites, s)
	}
	if o.JUnitMap == "" {
		return suites, nil, nil
	}
	m, err := tpl.ReadJUnitMap(o.JUnitMap)
	if err != nil {
		return nil, nil, usageErrorf("--junit-map: %v", err)
	}
	return suites, m, nil
}

func (o *SubmissionBuildOptions) outDirError(err error) error {
	if errors.Is(err, submission.ErrDirNotEmpty) {
		return usageErrorf("--out %s is not empty: build does not mix a new submission with other "+
			"files; pass --force to write over the files build makes (others are left as they are)", o.OutDir)
	}
	return usageErrorf("--out: %v", err)
}

// runChecks runs the requirements the checklist maps to aiconform's, as
// `check` runs them, and returns the sealed report.
func (o *SubmissionBuildOptions) runChecks(ctx context.Context, c submission.Checklist) (*report.Report, error) {
	var ids []string
	for _, it := range c.Items {
		for _, id := range it.Aiconform {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return nil, usageErrorf("aiconform judges no requirement of checklist %s", c.Version)
	}
	return o.RunFlags.Report(ctx, ids, checks.Must, o.streams.ErrOut, o.now)
}

// redactReport applies --redact to a report read with --from, whose run
// could not redact it, and seals it again over what it now says.
func (o *SubmissionBuildOptions) redactReport(rep *report.Report) error {
	redactor, err := newRedactor(o.Redact, o.RedactKey)
	if err != nil || redactor == nil {
		return err
	}
	redactor.Report(rep)
	return rep.Seal(checks.Level(rep.Run.FailOn))
}

// describeSource says where a report's results were observed.
func describeSource(info cluster.Info) string {
	if info.Live {
		s := "a live cluster"
		if info.Context != "" {
			s += ", context " + info.Context
		}
		return s
	}
	if info.Source != "" {
		return "fixture " + info.Source + ", a recording, not a live cluster"
	}
	return "a recording, not a live cluster"
}

// writeBuildLint prints what lint found in the built directory: each
// problem as `submission lint` prints it, then one line for what only the
// program can check, then the verdict.
func writeBuildLint(w io.Writer, dir string, r *submission.LintResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nlint (the program's rules, offline):\n")
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "%s\n", p)
	}
	if len(r.URLs) > 0 {
		fmt.Fprintf(&b, "checked online by the program (not here): %d evidence URL(s) must answer below 400\n", len(r.URLs))
	}
	for _, u := range r.Unchecked {
		fmt.Fprintf(&b, "not checked offline: %s\n", u)
	}
	if len(r.Problems) == 0 {
		fmt.Fprintf(&b, "%s: no problems against %s\n", dir, r.Template)
	} else {
		fmt.Fprintf(&b, "%s: %d problem(s) against %s\n", dir, len(r.Problems), r.Template)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
