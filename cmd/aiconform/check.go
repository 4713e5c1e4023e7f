package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/config"
	"github.com/aiconform/aiconform/report"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// CheckOptions holds every flag of `aiconform check`.
type CheckOptions struct {
	RunFlags
	IDs    []string
	OutDir string
	Output string
	FailOn string
	// AllContexts runs against every context of the kubeconfig, as
	// --context a,b does against those it names.
	AllContexts bool

	streams genericiooptions.IOStreams
	now     func() time.Time
}

// NewCmdCheck builds `aiconform check`. runF replaces Run in tests of flag
// parsing.
func NewCmdCheck(streams genericiooptions.IOStreams, now func() time.Time, runF func(*CheckOptions) error) *cobra.Command {
	o := &CheckOptions{RunFlags: newRunFlags(), streams: streams, now: now}
	cmd := &cobra.Command{
		Use:   "check all | ID...",
		Short: "Run the checks of requirements (robust_controller) or single checks (webhooks-served)",
		Example: `  # every requirement, report files in r/
  aiconform check all --out r/
  # the demo, on a recorded cluster
  aiconform check all --fixture demo
  # one requirement, KServe only, JSON on stdout
  aiconform check robust_controller --operator kserve -o json
  # two clusters, a report each in r/prod and r/staging, a matrix on stdout
  aiconform check all --context prod,staging --out r/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.loadConfig(cmd.Flags()); err != nil {
				return err
			}
			o.IDs = args
			if c := o.Config; c != nil {
				if len(args) == 0 {
					o.IDs = c.Run
				}
				if c.FailOn != "" && !cmd.Flags().Changed("fail-on") {
					o.FailOn = c.FailOn
				}
			}
			if len(o.IDs) == 0 {
				return usageErrorf("name what to check: `all`, a requirement id or a check id (`aiconform list` shows them), or `run:` in %s", config.DefaultName)
			}
			if err := o.Validate(); err != nil {
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
	f.StringVar(&o.OutDir, "out", "", "directory to write report.md, report.json, junit.xml and report.html to")
	f.StringVarP(&o.Output, "output", "o", "table", "what to print on stdout: table, json, markdown, junit or html")
	f.StringVar(&o.FailOn, "fail-on", "must", "lowest requirement level that fails the run: must or should")
	f.BoolVar(&o.AllContexts, "all-contexts", false, "run against every context of the kubeconfig, as --context a,b does against "+
		"those it names: a report per context in --out DIR/CONTEXT, and a matrix of "+
		"requirement by cluster on stdout")
	return cmd
}

// Validate rejects bad flag values before anything is read.
func (o *CheckOptions) Validate() error {
	if _, ok := renderers[o.Output]; !ok {
		return usageErrorf("--output %q: want table, json, markdown, junit or html", o.Output)
	}
	if o.FailOn != "must" && o.FailOn != "should" {
		return usageErrorf("--fail-on %q: want must or should", o.FailOn)
	}
	return o.RunFlags.Validate()
}

// Run runs the checks and writes the report.
func (o *CheckOptions) Run(ctx context.Context) error {
	failOn := checks.Must
	if o.FailOn == "should" {
		failOn = checks.Should
	}
	names, err := o.contexts()
	if err != nil {
		return err
	}
	if names != nil {
		return o.runContexts(ctx, names, failOn)
	}
	rep, err := o.RunFlags.Report(ctx, o.IDs, failOn, o.streams.ErrOut, o.now)
	if err != nil {
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
	"html": report.HTML,
}

// reportFiles are what --out writes, in this order. junit.xml is named as
// the CNCF validator expects to find it; report.html comes last, as the
// page a reader opens rather than a file a program reads.
var reportFiles = []struct{ name, format string }{
	{"report.md", "markdown"}, {"report.json", "json"}, {"junit.xml", "junit"}, {"report.html", "html"},
}

// writeReports writes every report file, each whole or not at all: it is
// rendered into a file beside it, renamed into place once complete.
// Rendered straight into the file, not into memory first: on bench/live's
// cluster the four reports are 8 MB, whose buffers, grown as they filled,
// came while the memory the cache held was not yet returned, and were a
// tenth of the run's page faults.
func writeReports(dir string, rep *report.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return usageErrorf("--out: %v", err)
	}
	for _, f := range reportFiles {
		path := filepath.Join(dir, f.name)
		if err := writeReport(path, f.format, rep); err != nil {
			return err
		}
	}
	return nil
}

// writeReport renders rep as format into path, through path.tmp.
func writeReport(path, format string, rep *report.Report) (err error) {
	tmp := path + ".tmp"
	file, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return usageErrorf("--out: %v", err)
	}
	defer func() {
		if err != nil {
			_ = file.Close()
			_ = os.Remove(tmp)
		}
	}()
	w := bufio.NewWriterSize(file, 64<<10)
	if err := renderers[format](w, rep); err != nil {
		// A write the file refused is --out's error, not the renderer's.
		if perr := (*fs.PathError)(nil); errors.As(err, &perr) {
			return usageErrorf("--out: %v", err)
		}
		return fmt.Errorf("render %s: %w", filepath.Base(path), err)
	}
	if err := w.Flush(); err != nil {
		return usageErrorf("--out: %v", err)
	}
	if err := file.Close(); err != nil {
		return usageErrorf("--out: %v", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return usageErrorf("--out: %v", err)
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
