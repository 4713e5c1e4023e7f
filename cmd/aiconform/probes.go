package main

import (
	"context"
	"fmt"
	"github.com/aiconform/aiconform/cluster"
	"io"
	"time"

	"github.com/aiconform/aiconform/probe"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// cleanupTimeout bounds the deletion of a run's probe namespace after the
// run, interrupted or not.
const cleanupTimeout = time.Minute

// newProbeSession prepares the writes of --probe with the user's
// credentials, as kubectl would make them.
func newProbeSession(flags *cluster.Flags, timeout time.Duration, started time.Time) (*probe.Session, error) {
	dyn, err := dynamicClient(flags)
	if err != nil {
		return nil, err
	}
	mapper, err := flags.ToRESTMapper()
	if err != nil {
		return nil, &clusterError{err}
	}
	s := probe.NewSession(dyn, mapper, probe.NewRunID(started), timeout)
	if s.Raw, err = rawClient(flags); err != nil {
		return nil, err
	}
	return s, nil
}

// rawClient reads API paths as `kubectl get --raw` does.
func rawClient(flags *cluster.Flags) (rest.Interface, error) {
	dc, err := flags.ToDiscoveryClient()
	if err != nil {
		return nil, &usageError{err}
	}
	return dc.RESTClient(), nil
}

func dynamicClient(flags *cluster.Flags) (dynamic.Interface, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, &usageError{err}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "aiconform"
	return dynamic.NewForConfig(cfg)
}

// closeProbes deletes what the run stored, on a context of its own: the
// run's may be the one a Ctrl-C cancelled.
func closeProbes(ctx context.Context, s *probe.Session, errOut io.Writer) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	done, err := s.Close(ctx)
	for _, l := range done {
		fmt.Fprintf(errOut, "probes: %s\n", describeCleanup(l, time.Now()))
	}
	if err != nil {
		fmt.Fprintf(errOut, "probes: cleanup failed: %v\nprobes: run `aiconform cleanup --run %s` to delete what is left\n", err, s.RunID)
	}
}

// describeCleanup says what cleanup did with one object, as kubectl delete
// says it, or what an object already being deleted waits for.
func describeCleanup(l probe.Leftover, now time.Time) string {
	if !l.Terminating {
		return fmt.Sprintf("%s %q deleted", l.Resource, l.Name)
	}
	s := fmt.Sprintf("%s %q is being deleted since %s (%s ago)", l.Resource, l.Name, l.Since.UTC().Format(time.RFC3339), now.Sub(l.Since).Round(time.Second))
	if l.Waiting != "" {
		s += ": " + l.Waiting + " (finalizers are removed by the operator that set them, once it runs)"
	}
	return s
}
