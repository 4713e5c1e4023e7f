package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/config"
	"github.com/spf13/pflag"
)

// loadConfig reads --config, or aiconform.yaml in the working directory,
// and sets from it every run flag the command line did not give: flags
// override the file. A mistake in the file is a usage error at its line.
func (f *RunFlags) loadConfig(fs *pflag.FlagSet) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	path, err := config.Find(f.ConfigFile, wd)
	if err != nil {
		return &usageError{err}
	}
	if path == "" {
		return nil
	}
	c, err := config.Load(path)
	if err != nil {
		var ce *config.Error
		if errors.As(err, &ce) {
			return &usageError{err}
		}
		return &usageError{fmt.Errorf("--config: %w", err)}
	}
	f.Config = c
	unset := func(name string) bool { return !fs.Changed(name) }
	setList := func(name string, dst *[]string, v []string) {
		if len(v) > 0 && unset(name) {
			*dst = v
		}
	}
	setStr := func(name string, dst *string, v string) {
		if v != "" && unset(name) {
			*dst = v
		}
	}
	setBool := func(name string, dst *bool, v *bool) {
		if v != nil && unset(name) {
			*dst = *v
		}
	}
	setList("operator", &f.Operators, c.Operators)
	// Profiles add up: the file's, then those of the command line.
	f.Profiles = append(append([]string(nil), c.Profiles...), f.Profiles...)
	if c.Timeout > 0 && unset("timeout") {
		f.Timeout = c.Timeout
	}
	if c.Concurrency > 0 && unset("concurrency") {
		f.Concurrency = c.Concurrency
	}
	setBool("probe", &f.Probe, c.Probe.Enabled)
	if c.Probe.Timeout > 0 && unset("probe-timeout") {
		f.ProbeTimeout = c.Probe.Timeout
	}
	setStr("probe-image", &f.ProbeImage, c.Probe.Image)
	setStr("probe-shell-image", &f.ProbeShellImage, c.Probe.ShellImage)
	setStr("probe-load-image", &f.ProbeLoadImage, c.Probe.LoadImage)
	setStr("hpa-metric", &f.HPAMetric, c.Probe.HPAMetric)
	setBool("probe-scale-up", &f.ProbeScaleUp, c.Probe.ScaleUp)
	setBool("redact", &f.Redact, c.Redact.Enabled)
	setStr("redact-key", &f.RedactKey, c.Redact.Key)
	return nil
}

// extensions are what the config adds to the built-in catalog.
func (f *RunFlags) extensions() checks.Extensions {
	var ext checks.Extensions
	if f.Config == nil {
		return ext
	}
	for _, s := range f.Config.Skip {
		ext.Skips = append(ext.Skips, checks.Exclusion{ID: s.ID, Reason: s.Reason, Source: s.Source})
	}
	return ext
}

// skipsOfChecklist are the config's skips of anything but the user's own
// requirements and checks: a submission cannot leave out a requirement of
// the checklist, nor judge one without a check of aiconform's.
func skipsOfChecklist(ext checks.Extensions) string {
	own := map[string]bool{}
	for _, r := range ext.Requirements {
		own[r.ID] = true
	}
	for _, c := range ext.Checks {
		own[c.Meta().ID] = true
	}
	var ids []string
	for _, s := range ext.Skips {
		if !own[s.ID] {
			ids = append(ids, s.ID+" ("+s.Source+")")
		}
	}
	return strings.Join(ids, ", ")
}
