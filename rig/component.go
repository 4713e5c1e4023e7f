package rig

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// component is what the rig's own processes beside the operators (the
// metrics adapter, Karpenter, Traefik) start from: their binary, a state
// directory, the files of their pinned module, and the one process they
// run.
type component struct {
	c    *Cluster
	opts OperatorOptions
	// name is the process's, in the rig's logs and state.
	name      string
	binary    string
	dir       string
	moduleDir string
	proc      *process
}

// newComponent finds binary in the rig's bin directory and the module's
// files in the module cache; its process will be called name.
func (c *Cluster) newComponent(ctx context.Context, opts OperatorOptions, name, binary, module, version string) (component, error) {
	binDir, err := resolveBinDir(opts.BinDir)
	if err != nil {
		return component{}, err
	}
	k := component{c: c, opts: opts, name: name, binary: filepath.Join(binDir, binary), dir: filepath.Join(c.dir, "operators", binary)}
	if _, err := os.Stat(k.binary); err != nil {
		return component{}, fmt.Errorf("%s missing in %s (run `tools/build %s`): %w", binary, binDir, binary, err)
	}
	if k.moduleDir, err = moduleDir(ctx, module, version); err != nil {
		return component{}, err
	}
	return k, nil
}

// notRunning says so, or that the process already runs.
func (k *component) notRunning() error {
	if k.proc != nil && k.proc.running() {
		return fmt.Errorf("%s already runs (pid %d)", k.name, k.proc.PID)
	}
	return nil
}

// launch starts the process with args and env, its output in the rig's
// logs.
func (k *component) launch(args, env []string) error {
	k.c.mu.Lock()
	p, err := k.c.start(k.name, k.binary, args, filepath.Join(k.c.dir, "logs"), env, k.opts.Detached)
	k.c.mu.Unlock()
	if p != nil {
		k.proc = p
	}
	return err
}

// PID returns the process's PID, 0 while it is stopped.
func (k *component) PID() int {
	if k.proc == nil {
		return 0
	}
	return k.proc.PID
}

// Stop stops the process. What it made in the cluster stays, as on a
// cluster where it crashed; Start runs it again.
func (k *component) Stop() error {
	err := k.c.stopComponent(k.proc)
	k.proc = nil
	return err
}

func (k *component) kubeconfig() string { return filepath.Join(k.dir, "kubeconfig") }

// writeKubeconfig writes the process's kubeconfig, as a member of
// system:masters, as the operators are: the rig tests what a component
// does, not its RBAC. It returns the rig's CA, which the component's own
// certificates chain to.
func (k *component) writeKubeconfig() (*keyPair, error) {
	if err := os.MkdirAll(k.dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := loadCA(filepath.Join(k.c.dir, "pki"))
	if err != nil {
		return nil, fmt.Errorf("load rig CA: %w", err)
	}
	id, err := ca.issue(certSpec{cn: "aiconform-rig:" + k.name, orgs: []string{"system:masters"}, client: true})
	if err != nil {
		return nil, err
	}
	return ca, writeKubeconfig(k.kubeconfig(), k.c.Server(), ca.certPEM, id)
}
