package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/report"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// CheckOptions holds every flag of `aiconform check`.
type CheckOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags
	IDs         []string
	Operators   []string
	Profiles    []string
	OutDir      string
	Output      string
	Timeout     time.Duration
	Fixture     string
	FailOn      string
	Concurrency int
	Progress    bool

	streams genericiooptions.IOStreams
	now     func() time.Time
}

// NewCmdCheck builds `aiconform check`. runF replaces Run in tests of flag
// parsing.
func NewCmdCheck(streams genericiooptions.IOStreams, now func() time.Time, runF func(*CheckOptions) error) *cobra.Command {
	o := &CheckOptions{ConfigFlags: genericclioptions.NewConfigFlags(true), streams: streams, now: now}
	cmd := &cobra.Command{
		Use:   "check all | ID...",
		Short: "Run the checks of requirements (robust_controller) or single checks (webhooks-served)",
		Example: `  # every requirement, report files in r/
  aiconform check all --out r/
  # the demo, on a recorded cluster
  aiconform check all --fixture demo
  # one requirement, KServe only, JSON on stdout
  aiconform check robust_controller --operator kserve -o json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("name what to check: `all`, a requirement id or a check id (`aiconform list` shows them)")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			o.IDs = args
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return o.Run(context.Background())
		},
	}
	f := cmd.Flags()
	o.ConfigFlags.AddFlags(f)
	f.StringSliceVar(&o.Operators, "operator", nil, "limit the run to these operator profiles (kserve, kuberay, ...)")
	f.StringArrayVar(&o.Profiles, "profile", nil, "an operator profile YAML file to add (repeatable)")
	f.StringVar(&o.OutDir, "out", "", "directory to write report.md, report.json and junit.xml to")
	f.StringVarP(&o.Output, "output", "o", "table", "what to print on stdout: table, json, markdown or junit")
	f.DurationVar(&o.Timeout, "timeout", 60*time.Second, "time limit of each check")
	f.StringVar(&o.Fixture, "fixture", "", "run on a recorded cluster: a built-in name (demo) or a file recorded by 'aiconform snapshot'")
	f.StringVar(&o.FailOn, "fail-on", "must", "lowest requirement level that fails the run: must or should")
	f.IntVar(&o.Concurrency, "concurrency", 4, "checks run at once")
	f.BoolVar(&o.Progress, "progress", false, "show progress on stderr even when it is not a terminal")
	return cmd
}

// Validate rejects bad flag values before anything is read.
func (o *CheckOptions) Validate() error {
	if _, ok := renderers[o.Output]; !ok {
		return usageErrorf("--output %q: want table, json, markdown or junit", o.Output)
	}
	if o.FailOn != "must" && o.FailOn != "should" {
		return usageErrorf("--fail-on %q: want must or should", o.FailOn)
	}
	if o.Timeout <= 0 {
		return usageErrorf("--timeout must be positive")
	}
	if o.Concurrency < 1 {
		return usageErrorf("--concurrency must be at least 1")
	}
	return nil
}

// Run runs the checks and writes the report.
func (o *CheckOptions) Run(ctx context.Context) error {
	registry := checks.Registry()
	catalog, err := checks.Catalog(registry)
	if err != nil {
		return err
	}
	sel, err := checks.Select(o.IDs, catalog, registry)
	if err != nil {
		return &usageError{err}
	}
	profiles, err := loadProfiles(o.Profiles, o.Operators)
	if err != nil {
		return err
	}
	src, err := openSource(o.ConfigFlags, o.Fixture, o.now)
	if err != nil {
		return err
	}
	cache := cluster.NewCache(src)
	started := o.now()
	info, err := clusterInfo(ctx, cache)
	if err != nil {
		return err
	}
	opts := checks.RunOptions{Concurrency: o.Concurrency, Timeout: o.Timeout}
	if !info.Live && !info.RecordedAt.IsZero() {
		opts.JudgeAt = func() time.Time { return info.RecordedAt }
	}
	if o.Progress || isTerminal(o.streams.ErrOut) {
		opts.Progress = func(done, total int, r checks.Result) {
			fmt.Fprintf(o.streams.ErrOut, "\r[%d/%d] %-22s %-18s %-5s", done, total, r.Check.ID, r.Operator, r.Status)
			if done == total {
				fmt.Fprintln(o.streams.ErrOut)
			}
		}
	}
	out := checks.Run(ctx, cache, profiles, sel.Checks, opts, o.now)
	verdicts := checks.Evaluate(sel.Requirements, out)
	tool := toolInfo()
	if tool.CatalogDigest, err = checks.CatalogDigest(registry, profiles); err != nil {
		return err
	}
	rep := report.Build(tool, info, started, o.now(), out, verdicts)
	failOn := checks.Must
	if o.FailOn == "should" {
		failOn = checks.Should
	}
	if err := rep.Seal(failOn); err != nil {
		return err
	}
	if o.OutDir != "" {
		if err := writeReports(o.OutDir, rep); err != nil {
			return err
		}
	}
	if err := renderers[o.Output](o.streams.Out, rep); err != nil {
		return err
	}
	if o.OutDir != "" {
		var paths []string
		for _, f := range reportFiles {
			paths = append(paths, filepath.Join(o.OutDir, f.name))
		}
		fmt.Fprintf(o.streams.ErrOut, "wrote %s\n", strings.Join(paths, ", "))
	}
	if !rep.Summary.Passed {
		return &notMetError{msg: fmt.Sprintf("a %s requirement is not met", o.FailOn)}
	}
	return nil
}

// renderers are the outputs of -o.
var renderers = map[string]func(io.Writer, *report.Report) error{
	"table": report.Summary, "json": report.JSON, "markdown": report.Markdown, "junit": report.JUnit,
}

// reportFiles are what --out writes, in this order. junit.xml is named as
// the CNCF validator expects to find it.
var reportFiles = []struct{ name, format string }{
	{"report.md", "markdown"}, {"report.json", "json"}, {"junit.xml", "junit"},
}

// writeReports writes every report file, each whole or not at all.
func writeReports(dir string, rep *report.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return usageErrorf("--out: %v", err)
	}
	for _, f := range reportFiles {
		var buf bytes.Buffer
		if err := renderers[f.format](&buf, rep); err != nil {
			return fmt.Errorf("render %s: %w", f.name, err)
		}
		path := filepath.Join(dir, f.name)
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
			return usageErrorf("--out: %v", err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return usageErrorf("--out: %v", err)
		}
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
