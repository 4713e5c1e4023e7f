package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Exit codes.
const (
	exitOK          = 0
	exitNotMet      = 1
	exitUsage       = 2
	exitUnreachable = 3
	// exitInterrupted is the shell's code for a run stopped by SIGINT.
	exitInterrupted = 130
)

// usageError is bad input: flags, ids, files.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// clusterError is a cluster that cannot be reached or refuses us.
type clusterError struct{ err error }

func (e *clusterError) Error() string { return e.err.Error() }
func (e *clusterError) Unwrap() error { return e.err }

// interruptedError is a run stopped by a signal, after its cleanup.
type interruptedError struct{ err error }

func (e *interruptedError) Error() string { return e.err.Error() }
func (e *interruptedError) Unwrap() error { return e.err }

// notMetError is a run that completed with a MUST requirement not met.
type notMetError struct{ msg string }

func (e *notMetError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// Run executes the command line and returns the exit code; main's os.Exit
// is the only exit. arg0 is the name the binary was run by: as
// kubectl-aiconform, kubectl runs it as its plugin `kubectl aiconform`, and
// its help says so.
func Run(arg0 string, args []string, streams genericiooptions.IOStreams) int {
	// SIGINT and SIGTERM cancel the run's context, so that probes delete
	// what they made before the process ends; they stay caught until
	// then, so a second Ctrl-C does not cut the cleanup short.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runContext(ctx, isPlugin(arg0), args, streams, time.Now)
}

func runWithClock(args []string, streams genericiooptions.IOStreams, now func() time.Time) int {
	return runContext(context.Background(), false, args, streams, now)
}

// pluginName is the binary's name as a kubectl plugin: kubectl finds
// kubectl-NAME on PATH and runs it for `kubectl NAME`.
const pluginName = "kubectl-aiconform"

func isPlugin(arg0 string) bool {
	return strings.TrimSuffix(filepath.Base(arg0), ".exe") == pluginName
}

// asPlugin makes the help of every command read as kubectl's: usage lines
// and examples say `kubectl aiconform`.
func asPlugin(root *cobra.Command) {
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[cobra.CommandDisplayNameAnnotation] = "kubectl aiconform"
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Example = strings.ReplaceAll(c.Example, "  aiconform ", "  kubectl aiconform ")
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func runContext(ctx context.Context, plugin bool, args []string, streams genericiooptions.IOStreams, now func() time.Time) int {
	root := NewRootCmd(streams, now)
	if plugin {
		asPlugin(root)
	}
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var nm *notMetError
	var ce *clusterError
	var ie *interruptedError
	switch {
	case ctx.Err() != nil && !errors.As(err, &ie):
		// Whatever failed, failed because a signal stopped it (a read cut
		// short is no unreachable cluster).
		fmt.Fprintln(streams.ErrOut, "aiconform: interrupted:", err)
		return exitInterrupted
	case errors.As(err, &ie):
		fmt.Fprintln(streams.ErrOut, "aiconform:", err)
		return exitInterrupted
	case errors.As(err, &nm):
		// The summary already says what failed; say it once more on stderr
		// for logs that keep only stderr.
		fmt.Fprintln(streams.ErrOut, "aiconform:", nm.msg)
		return exitNotMet
	case errors.As(err, &ce):
		fmt.Fprintln(streams.ErrOut, "aiconform:", err)
		return exitUnreachable
	default:
		// Usage errors, and cobra's own flag and argument errors.
		fmt.Fprintln(streams.ErrOut, "aiconform:", err)
		return exitUsage
	}
}

// NewRootCmd builds the command tree.
func NewRootCmd(streams genericiooptions.IOStreams, now func() time.Time) *cobra.Command {
	root := &cobra.Command{
		Use:   "aiconform",
		Short: "Audit a Kubernetes cluster against AI conformance requirements, with re-runnable evidence",
		Long: `aiconform checks that AI operators (KServe, KubeRay, Kubeflow, Kueue) and GPU nodes
of a Kubernetes cluster meet conformance requirements such as CNCF AI Conformance's
robust_controller, and writes the evidence: kubectl commands, what they print, and when.

It only reads the cluster (get, list) unless --probe asks it to prove behaviour with
dry runs and a canary resource in a namespace of its own. Use --fixture to run on a
recorded cluster.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.AddCommand(
		NewCmdCheck(streams, now, nil),
		NewCmdCleanup(streams, nil),
		NewCmdList(streams),
		NewCmdReport(streams),
		NewCmdSnapshot(streams, now),
		NewCmdSubmission(streams),
		NewCmdVersion(streams),
	)
	return root
}
