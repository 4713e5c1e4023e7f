package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"text/tabwriter"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/report"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// version is set at release time with -ldflags "-X main.version=v1.2.3".
var version = ""

func toolInfo() report.Tool {
	v := version
	if v == "" {
		v = "dev"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	return report.Tool{Name: "aiconform", Version: v}
}

// versionInfo is what `aiconform version` prints: enough to tell which
// build judged a report and by which catalog, without the report.
type versionInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Commit is the VCS revision Go stamped into the binary, with
	// Modified when the tree had uncommitted changes; empty where Go
	// stamped none (go run, a build outside a git checkout).
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	// CatalogDigest is the digest a report of this build carries when run
	// with the built-in profiles only (checks.CatalogDigest).
	CatalogDigest string `json:"catalogDigest"`
}

func buildVersionInfo() (versionInfo, error) {
	t := toolInfo()
	v := versionInfo{Name: t.Name, Version: t.Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	profiles, err := checks.BuiltinProfiles()
	if err != nil {
		return v, err
	}
	if v.CatalogDigest, err = checks.CatalogDigest(builtin.Registry(), profiles); err != nil {
		return v, err
	}
	return v, nil
}

// NewCmdVersion builds `aiconform version`.
func NewCmdVersion(streams genericiooptions.IOStreams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print aiconform's version, commit, Go version and catalog digest",
		Long: `Print aiconform's version, the commit it was built from, the Go version and
platform, and the digest of its built-in catalog (requirements, checks and
operator profiles): a report whose catalogDigest matches was judged by the
same rules.`,
		Example: `  aiconform version
  aiconform version -o json | jq -r .catalogDigest`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if output != "" && output != "json" {
				return usageErrorf("--output must be json, not %q", output)
			}
			v, err := buildVersionInfo()
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(streams.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			}
			commit := v.Commit
			switch {
			case commit == "":
				commit = "unknown: not stamped into this build (go run, or built outside a git checkout)"
			case v.Modified:
				commit += " (modified)"
			}
			w := tabwriter.NewWriter(streams.Out, 0, 0, 1, ' ', 0)
			fmt.Fprintf(w, "%s %s\n", v.Name, v.Version)
			fmt.Fprintf(w, "commit:\t%s\n", commit)
			fmt.Fprintf(w, "go:\t%s %s\n", v.GoVersion, v.Platform)
			fmt.Fprintf(w, "catalog:\t%s\n", v.CatalogDigest)
			return w.Flush()
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json (default: text)")
	return cmd
}
