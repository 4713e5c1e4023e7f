package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aiconform/aiconform/audit"
	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/config"
	"github.com/aiconform/aiconform/probe"
	"github.com/aiconform/aiconform/report"
	"github.com/spf13/pflag"
)

// RunFlags are the flags of a run of checks, shared by `check` and
// `submission build`, so that both judge a cluster the same way.
type RunFlags struct {
	ConfigFlags *cluster.Flags
	Operators   []string
	Profiles    []string
	Timeout     time.Duration
	Fixture     string
	Concurrency int
	// Progress shows progress on stderr even where it is not a terminal;
	// Quiet shows none even where it is.
	Progress bool
	Quiet    bool
	// Probe allows writes: dry runs and a canary per operator (--probe).
	Probe        bool
	ProbeTimeout time.Duration
	// ProbeImage runs the pods a probe makes itself (--probe-image).
	ProbeImage string
	// ProbeShellImage runs the probe pods that print what they see
	// (--probe-shell-image).
	ProbeShellImage string
	// ProbeLoadImage runs the accelerator load probe's pod in place of its
	// vendor's image (--probe-load-image).
	ProbeLoadImage string
	// HPAMetric is the metric (external, or custom) the HPA probe scales on first
	// (--hpa-metric).
	HPAMetric string
	// ProbeScaleUp lets the cluster_autoscaling probe make the autoscaler
	// add a node (--probe-scale-up): opted into apart, as it costs money.
	ProbeScaleUp bool
	// Redact replaces identifying values with pseudonyms keyed by the
	// bytes of the RedactKey file (--redact, --redact-key).
	Redact    bool
	RedactKey string
	// ConfigFile is --config; Config is the file read (it, or
	// aiconform.yaml in the working directory), nil when there is none.
	ConfigFile string
	Config     *config.File
	// Data is a directory of data files merged over the built-in ones
	// (--data, or data: in the config).
	Data string
}

func newRunFlags() RunFlags {
	return RunFlags{ConfigFlags: cluster.NewFlags()}
}

// AddFlags registers the flags.
func (f *RunFlags) AddFlags(fs *pflag.FlagSet) {
	f.ConfigFlags.AddFlags(fs)
	fs.StringVar(&f.Data, "data", "", "a directory of data files (exporters.yaml, autoscalers.yaml...) whose "+
		"entries are added to the built-in ones, or replace those of the same name")
	fs.StringVar(&f.ConfigFile, "config", "", "a config file of the run's choices, overridden by flags (default: "+config.DefaultName+" in the working directory, when there is one)")
	fs.StringSliceVar(&f.Operators, "operator", nil, "limit the run to these operator profiles (kserve, kuberay, ...)")
	fs.StringArrayVar(&f.Profiles, "profile", nil, "an operator profile YAML file to add (repeatable)")
	fs.DurationVar(&f.Timeout, "timeout", audit.DefaultTimeout, "time limit of each check")
	fs.StringVar(&f.Fixture, "fixture", "", "run on a recorded cluster: a built-in name (demo) or a file recorded by 'aiconform snapshot'")
	fs.IntVar(&f.Concurrency, "concurrency", audit.DefaultConcurrency, "checks run at once")
	fs.BoolVar(&f.Progress, "progress", false, "show progress on stderr even when it is not a terminal (a line per finished check)")
	fs.BoolVar(&f.Quiet, "quiet", false, "show no progress on stderr, even on a terminal")
	fs.BoolVar(&f.Probe, "probe", false, "prove behaviour by writing to the cluster: dry-run creates against the "+
		"operators' webhooks, and a canary resource per operator in a namespace of "+
		"the run's own, deleted at the end")
	fs.DurationVar(&f.ProbeTimeout, "probe-timeout", 5*time.Minute, "how long a canary may take to be reconciled, and then collected once deleted")
	fs.StringVar(&f.ProbeImage, "probe-image", probe.DefaultImage, "the image of the pods a probe runs itself (the gang probe's); its copy in "+
		"your registry for an air-gapped cluster")
	fs.StringVar(&f.ProbeShellImage, "probe-shell-image", probe.DefaultShellImage, "the image of the probe pods that print what they see (a shell and ls: the "+
		"device isolation probe's); its copy in your registry for an air-gapped cluster")
	fs.StringVar(&f.ProbeLoadImage, "probe-load-image", "", "the image of the accelerator load probe's pod (default: its vendor's, "+
		"nvcr.io/nvidia/cloud-native/dcgm for NVIDIA); its copy in your registry for an air-gapped cluster")
	fs.StringVar(&f.HPAMetric, "hpa-metric", "", "a metric the HPA probe scales on first, NAME or NAME{label=value,...}, with "+
		"a value above zero in the probe's namespace: external, or custom where only "+
		"the custom metrics API is served (default: those the cluster's own HPAs and its adapters serve)")
	fs.BoolVar(&f.ProbeScaleUp, "probe-scale-up", false, "with --probe, also make the cluster autoscaler add an accelerator node for "+
		"pods no node can take, run them on it and watch it go once they are "+
		"deleted: it costs a node for minutes")
	fs.BoolVar(&f.Redact, "redact", false, "replace node names, IP addresses, URL hosts and cloud account ids with "+
		"stable pseudonyms in every output, for a public report")
	fs.StringVar(&f.RedactKey, "redact-key", "", "a file whose bytes key the --redact pseudonyms, so that they stay the same "+
		"across runs (default: a random key of this run only)")
}

// Validate rejects bad values before anything is read.
func (f *RunFlags) Validate() error {
	switch {
	case f.Timeout <= 0:
		return usageErrorf("--timeout must be positive")
	case f.Concurrency < 1:
		return usageErrorf("--concurrency must be at least 1")
	case f.Progress && f.Quiet:
		return usageErrorf("--progress and --quiet contradict each other; give one")
	case f.RedactKey != "" && !f.Redact:
		return usageErrorf("--redact-key is the key of --redact; add --redact")
	case f.Probe && f.Fixture != "":
		return usageErrorf("--probe writes to a live cluster; a --fixture is a recording and cannot answer")
	case f.ProbeTimeout <= 0:
		return usageErrorf("--probe-timeout must be positive")
	case f.ProbeScaleUp && !f.Probe:
		return usageErrorf("--probe-scale-up is a probe; add --probe")
	case f.ProbeImage == "":
		return usageErrorf("--probe-image must name an image")
	case f.ProbeShellImage == "":
		return usageErrorf("--probe-shell-image must name an image")
	}
	if f.HPAMetric != "" {
		if _, err := probe.ParseMetric(f.HPAMetric); err != nil {
			return usageErrorf("--hpa-metric: %v", err)
		}
	}
	return nil
}

// Report runs the checks of ids ("all", requirements, checks) and returns
// the sealed report. Probes, when asked for, are cleaned up before it
// returns; an interrupted run returns an interruptedError and no report.
func (f *RunFlags) Report(ctx context.Context, ids []string, failOn checks.Level, errOut io.Writer, now func() time.Time) (*report.Report, error) {
	profiles, err := loadProfiles(f.Profiles, f.Operators)
	if err != nil {
		return nil, err
	}
	// Set, or cleared, on every run: the data is the process's.
	if _, err := checks.SetDataOverlay(f.Data); err != nil {
		return nil, usageErrorf("--data: %v", err)
	}
	ext, err := f.extensions()
	if err != nil {
		return nil, err
	}
	plan, err := audit.NewPlan(ids, profiles, ext)
	if err != nil {
		var sel *audit.SelectionError
		if errors.As(err, &sel) {
			return nil, &usageError{err}
		}
		return nil, err
	}
	redactor, err := newRedactor(f.Redact, f.RedactKey)
	if err != nil {
		return nil, err
	}
	src, err := openSource(f.ConfigFlags, f.Fixture, now)
	if err != nil {
		return nil, err
	}
	a, err := audit.Open(ctx, src, now)
	if ie := (*audit.InfoError)(nil); errors.As(err, &ie) {
		return nil, infoError(ie.Info, ie.Err)
	} else if err != nil {
		return nil, err
	}
	o := audit.Options{Run: checks.RunOptions{Concurrency: f.Concurrency, Timeout: f.Timeout}, Tool: toolInfo(), FailOn: failOn}
	if redactor != nil {
		o.Redact = redactor.Report
	}
	var prog *progress
	if !f.Quiet && (f.Progress || isTerminal(errOut)) {
		prog = newProgress(errOut, now)
		defer prog.Close()
		o.Run.Started, o.Run.Progress = prog.Started, prog.Finished
	}
	if f.Probe {
		sess, err := newProbeSession(f.ConfigFlags, f.ProbeTimeout, a.Started)
		if err != nil {
			return nil, err
		}
		sess.Image = f.ProbeImage
		sess.ShellImage = f.ProbeShellImage
		sess.LoadImage = f.ProbeLoadImage
		sess.ScaleUp = f.ProbeScaleUp
		if f.HPAMetric != "" {
			m, _ := probe.ParseMetric(f.HPAMetric) // checked by Validate
			sess.Metric = &m
		}
		if prog != nil {
			sess.OnStep = prog.Step
		}
		o.Run.Probe = sess
		fmt.Fprintf(errOut, "probes: run %s, namespace %s\n", sess.RunID, sess.Namespace)
		defer closeProbes(ctx, sess, errOut)
	}
	res, err := a.Run(ctx, plan, o)
	if prog != nil {
		// Before the probes' cleanup and the summary print their lines.
		prog.Close()
	}
	if errors.Is(err, audit.ErrInterrupted) {
		// A run that did not finish makes no report; the deferred cleanup
		// still runs.
		return nil, &interruptedError{err}
	}
	if err != nil {
		return nil, err
	}
	return res.Report, nil
}
