package main

import (
	"fmt"
	"runtime/debug"

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

// NewCmdVersion builds `aiconform version`.
func NewCmdVersion(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print aiconform's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			t := toolInfo()
			_, err := fmt.Fprintf(streams.Out, "%s %s\n", t.Name, t.Version)
			return err
		},
	}
}
