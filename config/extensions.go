package config

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/declarative"
	"github.com/aiconform/aiconform/plugin"
)

// Extensions are what the file adds to the built-in catalog: its files of
// declarative checks, its plugins (found on path, a PATH-like list, when
// named only) and its skips. Its mistakes are the user's: a command
// reports them as usage errors. A plugin judges the live cluster conn
// names, so when live is false (a run on a recording) each plugin is a
// check that gives Error rather than a verdict on another cluster.
func (c *File) Extensions(conn plugin.Conn, live bool, path string) (checks.Extensions, error) {
	ext := checks.Extensions{Origin: map[string]string{}}
	for _, name := range c.Checks {
		data, err := os.ReadFile(name)
		if err != nil {
			return ext, fmt.Errorf("%s: checks: %w", c.Path, err)
		}
		file, err := declarative.Load(relative(name), data, nil)
		if err != nil {
			return ext, err
		}
		e := file.Extensions()
		ext.Checks = append(ext.Checks, e.Checks...)
		ext.Requirements = append(ext.Requirements, e.Requirements...)
		maps.Copy(ext.Origin, e.Origin)
	}
	var found []plugin.Spec
	for _, p := range c.Plugins {
		spec := plugin.Spec{Name: p.Name, Path: p.Path, Args: p.Args, ID: p.ID, Title: p.Title,
			Requirement: p.Requirement, Timeout: p.Timeout, Source: p.Source, Probe: p.Probe}
		if !plugin.ValidName(p.Name) {
			return ext, fmt.Errorf("%s: plugin name %q: lowercase letters, digits and inner dashes", p.Source, p.Name)
		}
		if spec.Path == "" {
			// Named only: the plugin of that name on PATH, as kubectl
			// finds its own.
			if found == nil {
				found, _ = plugin.Discover(path)
			}
			i := slices.IndexFunc(found, func(s plugin.Spec) bool { return s.Name == p.Name })
			if i < 0 {
				return ext, fmt.Errorf("%s: plugin %s: no %s%s on PATH; give its path", p.Source, p.Name, plugin.Prefix, p.Name)
			}
			spec.Path = found[i].Path
		}
		var ck checks.Check = plugin.New(spec, conn)
		if !live {
			ck = recordedRun{ck.Meta()}
		}
		ext.Checks = append(ext.Checks, ck)
		ext.Origin[spec.CheckID()] = p.Source
	}
	for _, s := range c.Skip {
		ext.Skips = append(ext.Skips, checks.Exclusion{ID: s.ID, Reason: s.Reason, Source: s.Source})
	}
	return ext, nil
}

// relative is path as the user would write it: relative to the working
// directory when under it, for errors and origins that read well.
func relative(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if r, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// recordedRun stands for a plugin in a run on a recording: the plugin
// would judge whatever cluster the kubeconfig names, not the recorded one.
type recordedRun struct{ meta checks.Meta }

func (r recordedRun) Meta() checks.Meta { return r.meta }

func (r recordedRun) Run(context.Context, *checks.Env) (checks.Result, error) {
	return checks.Result{}, errors.New("a plugin judges a live cluster, and this run reads a recording")
}
