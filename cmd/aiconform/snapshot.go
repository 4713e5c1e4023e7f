package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aiconform/aiconform/audit"
	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/config"
	"github.com/aiconform/aiconform/plugin"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// SnapshotOptions holds the flags of `aiconform snapshot`.
type SnapshotOptions struct {
	ConfigFlags *cluster.Flags
	Out         string
	Profiles    []string
	Timeout     time.Duration
	// ConfigFile and Data add the reads of the user's declarative checks
	// and data files to the recording.
	ConfigFile string
	Data       string

	streams genericiooptions.IOStreams
	now     func() time.Time
}

// NewCmdSnapshot builds `aiconform snapshot`.
func NewCmdSnapshot(streams genericiooptions.IOStreams, now func() time.Time) *cobra.Command {
	o := &SnapshotOptions{ConfigFlags: cluster.NewFlags(), streams: streams, now: now}
	cmd := &cobra.Command{
		Use:   "snapshot --out FILE",
		Short: "Record what the checks read from a live cluster, to replay it with --fixture",
		Long: `snapshot runs every check against the live cluster and records every answer the
checks got (objects and the server's Table renderings), so that
'aiconform check all --fixture FILE' replays the same run without the cluster.
Secrets are never read. Managed fields are left out.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if o.Out == "" {
				return usageErrorf("--out FILE is required")
			}
			return o.Run(context.Background())
		},
	}
	f := cmd.Flags()
	o.ConfigFlags.AddFlags(f)
	f.StringVar(&o.Out, "out", "", "file to write the recording to: YAML, or JSON when it ends in .json (much faster for large clusters)")
	f.StringArrayVar(&o.Profiles, "profile", nil, "an operator profile YAML file to add (repeatable)")
	f.DurationVar(&o.Timeout, "timeout", 60*time.Second, "time limit of each check")
	f.StringVar(&o.ConfigFile, "config", "", "record what the declarative checks and the data of this config file read too (default: "+config.DefaultName+" in the working directory, when there is one)")
	f.StringVar(&o.Data, "data", "", "a directory of data files merged over the built-in ones, as check's --data")
	return cmd
}

// Run records the cluster.
func (o *SnapshotOptions) Run(ctx context.Context) error {
	profiles, err := loadProfiles(o.Profiles, nil)
	if err != nil {
		return err
	}
	src, err := openSource(o.ConfigFlags, "", o.now)
	if err != nil {
		return err
	}
	cache := cluster.NewCache(src)
	info, err := clusterInfo(ctx, cache)
	if err != nil {
		return err
	}
	c, err := readConfig(o.ConfigFile)
	if err != nil {
		return err
	}
	if c != nil && o.Data == "" {
		o.Data = c.Data
	}
	if _, err := checks.SetDataOverlay(o.Data); err != nil {
		return usageErrorf("--data: %v", err)
	}
	// Plugins read the cluster by themselves, not through the recording:
	// the recording holds what the declarative checks read.
	ext, err := configExtensions(c, plugin.Conn{}, false, os.Getenv("PATH"))
	if err != nil {
		return err
	}
	_, registry, err := audit.Catalog(checks.Extensions{Checks: ext.Checks, Requirements: ext.Requirements, Origin: ext.Origin})
	if err != nil {
		return &usageError{err}
	}
	rec, err := checks.Record(ctx, cache, info, profiles, registry, o.Timeout, o.now)
	if err != nil {
		return err
	}
	marshal := rec.Marshal
	if strings.HasSuffix(o.Out, ".json") {
		marshal = rec.MarshalCompact
	}
	data, err := marshal()
	if err != nil {
		return err
	}
	if err := os.WriteFile(o.Out, data, 0o644); err != nil {
		return usageErrorf("--out: %v", err)
	}
	fmt.Fprintf(o.streams.ErrOut, "recorded %d lists and %d tables to %s\n", len(rec.Lists), len(rec.Tables), o.Out)
	return nil
}
