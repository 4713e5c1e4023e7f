package rig

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// launch starts the process with args and env on the machine, its output
// in the rig's logs.
func (k *component) launch(args, env []string) error { return k.launchIn(nil, args, env) }

// launchIn is launch inside a real node's namespaces when enter, nsenter's
// arguments up to "--" (nodeEnter), is not empty. Unlike startIn it keeps
// env, which a component needs (its KUBECONFIG). nsenter execs the binary:
// the PID recorded is the component's, and so must be the executable the
// state names, or a `rig down` in another process would not recognise it.
func (k *component) launchIn(enter, args, env []string) error {
	exe, argv := k.binary, args
	if len(enter) > 0 {
		exe, argv = "nsenter", append(append(slices.Clone(enter), k.binary), args...)
	}
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	p, err := k.c.start(k.name, exe, argv, filepath.Join(k.c.dir, "logs"), env, k.opts.Detached)
	if p == nil {
		return err
	}
	k.proc = p
	if err == nil && p.Exe != k.binary {
		p.Exe = k.binary
		err = k.c.saveState()
	}
	return err
}

// nodeEnter is what a component needs to run in real node i (counted from
// 1): nsenter's arguments naming the namespaces of the node's holder, and
// the socket of the node's CONNECT proxy, through which the machine
// reaches the node's address. It refuses a holder that no longer runs: its
// PID could name another process's namespaces by now.
func (c *Cluster) nodeEnter(i int) (enter []string, connect string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := RealNodeName(i)
	for _, n := range c.state.RealNodes {
		if n.Name != name {
			continue
		}
		for _, p := range c.procs {
			if p.PID == n.Holder && p.running() {
				return []string{fmt.Sprintf("--net=/proc/%d/ns/net", n.Holder), fmt.Sprintf("--mount=/proc/%d/ns/mnt", n.Holder), "--"}, n.Connect, nil
			}
		}
		return nil, "", fmt.Errorf("%s: the holder of its namespaces (pid %d) no longer runs", name, n.Holder)
	}
	return nil, "", fmt.Errorf("no real node %s: the rig has %d (Options.RealNodes)", name, len(c.state.RealNodes))
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
