package main

import (
	"context"
	"fmt"
	"time"

	"github.com/aiconform/aiconform/probe"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
)

// CleanupOptions holds the flags of `aiconform cleanup`.
type CleanupOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags
	RunID       string

	streams genericiooptions.IOStreams
	now     func() time.Time
	// dynamic replaces the client built from ConfigFlags in tests.
	dynamic dynamic.Interface
}

// NewCmdCleanup builds `aiconform cleanup`.
func NewCmdCleanup(streams genericiooptions.IOStreams, runF func(*CleanupOptions) error) *cobra.Command {
	o := &CleanupOptions{ConfigFlags: genericclioptions.NewConfigFlags(true), streams: streams, now: time.Now}
	cmd := &cobra.Command{
		Use:   "cleanup [--run ID]",
		Short: "Delete what --probe runs left behind (namespaces labelled " + probe.RunLabel + ")",
		Long: `A run with --probe deletes its namespace when it ends, interrupted or not. A run that
was killed (SIGKILL, a lost connection) cannot: cleanup deletes every probe namespace,
found by the label ` + probe.RunLabel + `, with everything in it.`,
		Example: `  # every run's leftovers
  aiconform cleanup
  # one run's, by the id --probe printed
  aiconform cleanup --run 20261130-011500-3fa2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(o)
			}
			return o.Run(cmd.Context())
		},
	}
	o.ConfigFlags.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.RunID, "run", "", "only the leftovers of this run id")
	return cmd
}

// Run deletes the leftovers and says what it deleted, as kubectl delete does.
func (o *CleanupOptions) Run(ctx context.Context) error {
	dyn := o.dynamic
	if dyn == nil {
		var err error
		if dyn, err = dynamicClient(o.ConfigFlags); err != nil {
			return err
		}
	}
	done, err := probe.Cleanup(ctx, dyn, o.RunID)
	for _, ns := range done {
		fmt.Fprintln(o.streams.Out, describeCleanup(ns, o.now()))
	}
	if err != nil {
		return &clusterError{err}
	}
	if len(done) == 0 {
		fmt.Fprintf(o.streams.ErrOut, "No probe namespaces found (label %s).\n", o.selector())
	}
	return nil
}

func (o *CleanupOptions) selector() string {
	if o.RunID != "" {
		return probe.RunLabel + "=" + o.RunID
	}
	return probe.RunLabel
}
