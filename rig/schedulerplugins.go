package rig

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"
)

// The scheduler-plugins release the rig runs; tools/scheduler-plugins/go.mod
// pins the same (a test keeps them equal).
const (
	SchedulerPluginsModule  = "sigs.k8s.io/scheduler-plugins"
	SchedulerPluginsVersion = "v0.34.7"
)

// SchedulerPluginsScheduler is the schedulerName the rig's second scheduler
// answers to: the name scheduler-plugins' chart gives it when it runs
// beside the cluster's own scheduler, and the one aiconform's coscheduling
// profile sends its probe's gangs to.
const SchedulerPluginsScheduler = "scheduler-plugins-scheduler"

// schedulerPluginsNamespace is where its all-in-one manifest installs the
// controller.
const schedulerPluginsNamespace = "scheduler-plugins"

// SchedulerPlugins is scheduler-plugins on a full rig: its controller
// (which writes each PodGroup's status) as an Operator, and its scheduler
// (kube-scheduler with the Coscheduling plugin) as a second scheduler, a
// process of the rig's on loopback.
type SchedulerPlugins struct {
	*Operator
	scheduler *process
}

// InstallSchedulerPlugins installs scheduler-plugins' Coscheduling as a
// second scheduler: the module's CRDs (PodGroup, ElasticQuota), the
// scheduler-plugins namespace (or opts.Namespace), the controller process
// and its Deployment, then the scheduler process, whose only profile is
// SchedulerPluginsScheduler with Coscheduling enabled at every extension
// point it implements and as the queue sort (the plugin's documented
// configuration). Pods that name another scheduler are not its concern.
func (c *Cluster) InstallSchedulerPlugins(ctx context.Context, opts OperatorOptions) (_ *SchedulerPlugins, err error) {
	binDir, err := resolveBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	schedBin := filepath.Join(binDir, "scheduler-plugins-scheduler")
	if _, err := os.Stat(schedBin); err != nil {
		return nil, fmt.Errorf("scheduler-plugins-scheduler missing in %s (run `tools/build scheduler-plugins-scheduler`): %w", binDir, err)
	}
	ctrl, err := c.install(ctx, schedulerPluginsSpec(opts.namespaceOr(schedulerPluginsNamespace)), opts)
	if err != nil {
		return nil, err
	}
	sp := &SchedulerPlugins{Operator: ctrl}
	defer func() {
		if err != nil {
			_ = sp.Stop(context.Background())
		}
	}()
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(ctrl.dir, "scheduler")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	config, err := writeCoschedulingConfig(dir, ctrl.kubeconfig())
	if err != nil {
		return nil, err
	}
	args := []string{
		"--config", config,
		"--bind-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(ports[0]),
		"--cert-dir", dir,
		"--profiling=false",
	}
	c.mu.Lock()
	p, err := c.start("scheduler-plugins-scheduler", schedBin, args, filepath.Join(c.dir, "logs"), childEnv(), opts.Detached)
	c.mu.Unlock()
	if p != nil {
		sp.scheduler = p
	}
	if err != nil {
		return nil, err
	}
	if err := waitHealthzTLS(ctx, p, fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[0])); err != nil {
		return nil, fmt.Errorf("scheduler-plugins-scheduler: %w (log: %s)", err, filepath.Join(c.dir, "logs", "scheduler-plugins-scheduler.log"))
	}
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "rig: %s: scheduler-plugins-scheduler (pid %d) schedules for %s on 127.0.0.1:%d\n", ctrl.id, p.PID, SchedulerPluginsScheduler, ports[0])
	}
	return sp, nil
}

// SchedulerPID is the second scheduler's PID, 0 once stopped.
func (s *SchedulerPlugins) SchedulerPID() int {
	if s.scheduler == nil {
		return 0
	}
	return s.scheduler.PID
}

// Stop stops the scheduler, then the controller.
func (s *SchedulerPlugins) Stop(ctx context.Context) error {
	err := s.c.stopComponent(s.scheduler)
	s.scheduler = nil
	return errors.Join(err, s.Operator.Stop(ctx))
}

// Uninstall stops the scheduler, then uninstalls the controller
// (Operator.Uninstall: its namespace goes, its CRDs stay), so that it can
// be installed again elsewhere.
func (s *SchedulerPlugins) Uninstall(ctx context.Context) error {
	err := s.c.stopComponent(s.scheduler)
	s.scheduler = nil
	return errors.Join(err, s.Operator.Uninstall(ctx))
}

func schedulerPluginsSpec(ns string) operatorSpec {
	labels := map[string]string{"app": "scheduler-plugins-controller"}
	return operatorSpec{
		name:           "coscheduling",
		binary:         "scheduler-plugins-controller",
		module:         SchedulerPluginsModule,
		version:        SchedulerPluginsVersion,
		crdDir:         "config/crd/bases",
		namespace:      ns,
		deployment:     "scheduler-plugins-controller",
		serviceAccount: "scheduler-plugins-controller",
		container:      "scheduler-plugins-controller",
		image:          "registry.k8s.io/scheduler-plugins/controller:" + SchedulerPluginsVersion,
		labels:         labels,
		selector:       labels,
		// It elects no leader unless told (--enableLeaderElection), as
		// its chart runs it.
		args: func(_, metrics, probe int) []string {
			return []string{
				fmt.Sprintf("--metricsAddr=127.0.0.1:%d", metrics),
				fmt.Sprintf("--probeAddr=127.0.0.1:%d", probe),
			}
		},
	}
}

// writeCoschedulingConfig writes the scheduler's KubeSchedulerConfiguration:
// one profile, the second scheduler's, with Coscheduling enabled at every
// point it implements (multiPoint) and as the only queue sort, no leader
// election, and the given kubeconfig.
func writeCoschedulingConfig(dir, kubeconfig string) (string, error) {
	cfg := map[string]any{
		"apiVersion":       "kubescheduler.config.k8s.io/v1",
		"kind":             "KubeSchedulerConfiguration",
		"leaderElection":   map[string]any{"leaderElect": false},
		"clientConnection": map[string]any{"kubeconfig": kubeconfig},
		"profiles": []any{map[string]any{
			"schedulerName": SchedulerPluginsScheduler,
			"plugins": map[string]any{
				"multiPoint": map[string]any{"enabled": []any{map[string]any{"name": "Coscheduling"}}},
				"queueSort": map[string]any{
					"enabled":  []any{map[string]any{"name": "Coscheduling"}},
					"disabled": []any{map[string]any{"name": "*"}},
				},
			},
			// How long a permitted pod waits for the rest of its gang.
			"pluginConfig": []any{map[string]any{"name": "Coscheduling", "args": map[string]any{"permitWaitingTimeSeconds": 30}}},
		}},
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "scheduler-config.yaml")
	return path, os.WriteFile(path, out, 0o644)
}

// waitHealthzTLS polls a loopback HTTPS health URL until it answers 200.
// The server's certificate is one it made itself at start-up: nothing to
// verify it against, and the address is the machine's own.
func waitHealthzTLS(ctx context.Context, p *process, url string) error {
	return waitOK(ctx, p, url, &http.Client{Timeout: time.Second, Transport: &http.Transport{
		Proxy:           nil,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback, self-signed at start
	}})
}
