package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aiconform/aiconform/audit"
	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/config"
	"github.com/aiconform/aiconform/plugin"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// NewCmdList builds `aiconform list`.
func NewCmdList(streams genericiooptions.IOStreams) *cobra.Command {
	var output, configFile, data string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List requirements, checks and operator profiles",
		Long: "List the checklist's requirements, the checks that judge them and the operator profiles.\n\n" +
			"The tables fit a terminal; -o wide adds each requirement's check IDs, each profile's API groups and " +
			"where its manifests put its controller.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "wide" {
				return usageErrorf("--output must be wide or empty, not %q", output)
			}
			wide := output == "wide"
			c, err := readConfig(configFile)
			if err != nil {
				return err
			}
			if c != nil && c.Data != "" && !cmd.Flags().Changed("data") {
				data = c.Data
			}
			origins, err := checks.SetDataOverlay(data)
			if err != nil {
				return usageErrorf("--data: %v", err)
			}
			ext, err := configExtensions(c, plugin.Conn{}, true, os.Getenv("PATH"))
			if err != nil {
				return err
			}
			catalog, registry, err := audit.Catalog(ext)
			if err != nil {
				var sel *audit.SelectionError
				if errors.As(err, &sel) {
					return &usageError{err}
				}
				return err
			}
			profiles, err := checks.BuiltinProfiles()
			if err != nil {
				return err
			}
			w := printers.GetNewTabWriter(streams.Out)
			fmt.Fprintln(w, "REQUIREMENT\tLEVEL\tCATEGORY\tCHECKS\tTITLE")
			for _, r := range catalog {
				checkIDs := fmt.Sprint(len(r.Checks))
				if wide {
					checkIDs = strings.Join(r.Checks, ",")
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Level, r.Category, checkIDs, r.Title)
			}
			// Each table is aligned on its own.
			if err := w.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(streams.Out)
			w = printers.GetNewTabWriter(streams.Out)
			if wide {
				fmt.Fprintln(w, "CHECK\tREQUIREMENT\tPER OPERATOR\tRUNS\tTITLE")
			} else {
				fmt.Fprintln(w, "CHECK\tREQUIREMENT\tRUNS\tTITLE")
			}
			for _, c := range registry {
				m := c.Meta()
				runs := "reads"
				if m.Probe {
					runs = strings.TrimSpace("--probe " + m.OptIn)
				}
				if wide {
					fmt.Fprintf(w, "%s\t%s\t%t\t%s\t%s\n", m.ID, m.Requirement, m.PerOperator, runs, m.Title)
				} else {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", m.ID, m.Requirement, runs, m.Title)
				}
			}
			if err := w.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(streams.Out)
			w = printers.GetNewTabWriter(streams.Out)
			// The controller is found in any namespace: this is where the
			// operator's own manifests put it, a hint.
			if wide {
				fmt.Fprintln(w, "OPERATOR\tGROUPS\tUSUALLY AT\tCARRIES\tPROBES\tTITLE")
			} else {
				fmt.Fprintln(w, "OPERATOR\tCARRIES\tPROBES\tTITLE")
			}
			for _, p := range profiles {
				var what []string
				if p.Probe != nil && p.Probe.Invalid != "" {
					what = append(what, "webhook")
				}
				if p.Probe != nil && p.Probe.Canary != "" {
					what = append(what, "canary")
				}
				if p.Gang != nil && p.Gang.Probe != nil {
					what = append(what, "gang")
				}
				probes := "none"
				if len(what) > 0 {
					probes = strings.Join(what, ",")
				}
				var carries []string
				for _, r := range catalog {
					if r.PerOperator && p.CandidateFor(r.ID) {
						carries = append(carries, r.ID)
					}
				}
				if wide {
					fmt.Fprintf(w, "%s\t%s\t%s/%s\t%s\t%s\t%s\n", p.Name, strings.Join(p.Groups, ","), p.Controller.Namespace, p.Controller.Deployment,
						strings.Join(carries, ","), probes, p.Title)
				} else {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", p.Name, strings.Join(carries, ","), probes, p.Title)
				}
			}
			if err := w.Flush(); err != nil {
				return err
			}
			found, shadowed := plugin.Discover(os.Getenv("PATH"))
			return listExtensions(streams, ext, origins, unnamed(found, c), shadowed)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "wide: add check IDs, API groups and where each controller usually runs")
	cmd.Flags().StringVar(&configFile, "config", "", "list with the user's checks, requirements and data of this config file (default: "+config.DefaultName+" in the working directory, when there is one)")
	cmd.Flags().StringVar(&data, "data", "", "list with the data files of this directory merged over the built-in ones")
	return cmd
}

// listExtensions says what the user added: where each of their checks
// and requirements was declared, what they skip, and the data entries
// their overlay adds or replaces (every other entry is built in).
func listExtensions(streams genericiooptions.IOStreams, ext checks.Extensions, origins []checks.DataOrigin, idle, shadowed []plugin.Spec) error {
	if ext.Empty() && len(origins) == 0 && len(idle) == 0 && len(shadowed) == 0 {
		return nil
	}
	fmt.Fprintln(streams.Out)
	w := printers.GetNewTabWriter(streams.Out)
	fmt.Fprintln(w, "THE USER'S\tID\tFROM")
	for _, r := range ext.Requirements {
		fmt.Fprintf(w, "requirement\t%s\t%s\n", r.ID, ext.Origin[r.ID])
	}
	for _, c := range ext.Checks {
		fmt.Fprintf(w, "check\t%s\t%s\n", c.Meta().ID, ext.Origin[c.Meta().ID])
	}
	for _, s := range ext.Skips {
		fmt.Fprintf(w, "skip\t%s\t%s: %s\n", s.ID, s.Source, s.Reason)
	}
	for _, o := range origins {
		how := "added"
		if o.Replaced {
			how = "replaced"
		}
		fmt.Fprintf(w, "%s entry\t%s\t%s (%s)\n", o.File, o.Entry, o.Source, how)
	}
	for _, p := range idle {
		fmt.Fprintf(w, "plugin, not run\t%s\t%s (name it under plugins: in %s, with its requirement)\n", p.Name, p.Path, config.DefaultName)
	}
	for _, p := range shadowed {
		fmt.Fprintf(w, "plugin, shadowed\t%s\t%s (an earlier directory of PATH has one of that name)\n", p.Name, p.Path)
	}
	return w.Flush()
}

// unnamed are the plugins found on PATH that the config does not name:
// they never run on their own.
func unnamed(found []plugin.Spec, c *config.File) []plugin.Spec {
	var out []plugin.Spec
	for _, p := range found {
		named := false
		if c != nil {
			for _, q := range c.Plugins {
				named = named || q.Name == p.Name
			}
		}
		if !named {
			out = append(out, p)
		}
	}
	return out
}
