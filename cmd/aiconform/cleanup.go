package main

import (
	"context"
	"fmt"
	"github.com/aiconform/aiconform/cluster"
	"slices"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/probe"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
)

// CleanupOptions holds the flags of `aiconform cleanup`.
type CleanupOptions struct {
	ConfigFlags *cluster.Flags
	RunID       string

	streams genericiooptions.IOStreams
	now     func() time.Time
	// dynamic and mapper replace the clients built from ConfigFlags in
	// tests.
	dynamic dynamic.Interface
	mapper  meta.RESTMapper
}

// NewCmdCleanup builds `aiconform cleanup`.
func NewCmdCleanup(streams genericiooptions.IOStreams, runF func(*CleanupOptions) error) *cobra.Command {
	o := &CleanupOptions{ConfigFlags: cluster.NewFlags(), streams: streams, now: time.Now}
	cmd := &cobra.Command{
		Use:   "cleanup [--run ID]",
		Short: "Delete what --probe runs left behind (objects labelled " + probe.RunLabel + ")",
		Long: `A run with --probe deletes what it made when it ends, interrupted or not. A run that
was killed (SIGKILL, a lost connection) cannot: cleanup deletes every probe namespace,
found by the label ` + probe.RunLabel + `, with everything in it, and the cluster-scoped
objects of the built-in probes' kinds (a Kueue ClusterQueue) that carry the label.`,
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
	dyn, mapper := o.dynamic, o.mapper
	if dyn == nil {
		var err error
		if dyn, err = dynamicClient(o.ConfigFlags); err != nil {
			return err
		}
	}
	if mapper == nil {
		var err error
		if mapper, err = o.ConfigFlags.ToRESTMapper(); err != nil {
			return &clusterError{err}
		}
	}
	kinds, unresolved, err := clusterScopedProbeKinds(mapper)
	if err != nil {
		return err
	}
	// A kind discovery could not resolve is said, not fatal: the probe
	// namespaces are deleted all the same.
	for _, u := range unresolved {
		fmt.Fprintf(o.streams.ErrOut, "Warning: not looked for leftovers of %s\n", u)
	}
	done, err := probe.Cleanup(ctx, dyn, o.RunID, kinds)
	for _, l := range done {
		fmt.Fprintln(o.streams.Out, describeCleanup(l, o.now()))
	}
	if err != nil {
		return &clusterError{err}
	}
	if len(done) == 0 {
		fmt.Fprintf(o.streams.ErrOut, "No probe leftovers found (label %s).\n", o.selector())
	}
	return nil
}

// clusterScopedProbeKinds resolves the built-in probes' kinds that the
// cluster serves cluster-scoped; a kind it does not serve has nothing left.
// unresolved says which kinds discovery failed for, and why.
func clusterScopedProbeKinds(mapper meta.RESTMapper) (kinds []schema.GroupVersionResource, unresolved []string, err error) {
	ps, err := checks.BuiltinProfiles()
	if err != nil {
		return nil, nil, err
	}
	for _, gvk := range checks.ProbeKinds(ps) {
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		switch {
		case meta.IsNoMatchError(err):
			continue
		case err != nil:
			unresolved = append(unresolved, fmt.Sprintf("%s: %v", gvk.GroupKind(), err))
		case m.Scope.Name() == meta.RESTScopeNameRoot && !slices.Contains(kinds, m.Resource):
			kinds = append(kinds, m.Resource)
		}
	}
	return kinds, unresolved, nil
}

func (o *CleanupOptions) selector() string {
	if o.RunID != "" {
		return probe.RunLabel + "=" + o.RunID
	}
	return probe.RunLabel
}
