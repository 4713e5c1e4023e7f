package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/config"
	"github.com/aiconform/aiconform/plugin"
	"github.com/spf13/pflag"
)

// loadConfig reads --config, or aiconform.yaml in the working directory,
// and sets from it every run flag the command line did not give: flags
// override the file. A mistake in the file is a usage error at its line.
func (f *RunFlags) loadConfig(fs *pflag.FlagSet) error {
	c, err := readConfig(f.ConfigFile)
	if c == nil {
		return err
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
	setStr("data", &f.Data, c.Data)
	return nil
}

// readConfig reads the file --config names, else aiconform.yaml in the
// working directory; nil when there is none. Its mistakes are usage
// errors.
func readConfig(explicit string) (*config.File, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	path, err := config.Find(explicit, wd)
	if err != nil {
		return nil, &usageError{err}
	}
	if path == "" {
		return nil, nil
	}
	c, err := config.Load(path)
	if err != nil {
		var ce *config.Error
		if errors.As(err, &ce) {
			return nil, &usageError{err}
		}
		return nil, &usageError{fmt.Errorf("--config: %w", err)}
	}
	return c, nil
}

// extensions are what the config adds to the built-in catalog: its
// files of declarative checks, its plugins and its skips. A plugin judges
// the live cluster the flags name, so a run on a recording gets an Error
// for each plugin rather than a verdict on another cluster.
func (f *RunFlags) extensions() (checks.Extensions, error) {
	conn := plugin.Conn{Kubeconfig: f.ConfigFlags.Loading.ExplicitPath, Context: f.ConfigFlags.Overrides.CurrentContext}
	return configExtensions(f.Config, conn, f.Fixture == "", os.Getenv("PATH"))
}

func configExtensions(c *config.File, conn plugin.Conn, live bool, path string) (checks.Extensions, error) {
	if c == nil {
		return checks.Extensions{}, nil
	}
	ext, err := c.Extensions(conn, live, path)
	if err != nil {
		return ext, &usageError{err}
	}
	return ext, nil
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
