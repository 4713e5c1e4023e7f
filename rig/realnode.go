package rig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// A real node is a kubelet with containerd and runc, from the machine's
// packages and the pinned Kubernetes module, beside the kwok nodes: its
// pods really run, in containers built from the project's own sources
// (images.go), and their logs are read through the API server. See
// nodenet.go for its network.

// binKubelet is the kubelet tools/build builds; binRig is this package's
// command (`rig node-net` holds a real node's namespaces), built by make.
const (
	binKubelet = "kubelet"
	binRig     = "rig"
)

// The machine's packages a real node runs on (tools/host-packages installs
// them).
var hostCommands = []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "unshare", "nsenter", "ip"}

// FakeSandboxHandler is a runtime handler of the real nodes' containerd
// named as gVisor's (runsc) that runs plain runc: a RuntimeClass on it is
// a sandbox in name only.
const FakeSandboxHandler = "runsc"

// cniPluginDir is where Debian's containernetworking-plugins puts them.
const cniPluginDir = "/usr/lib/cni"

// RealNodeLabel marks the real nodes (value "true").
const RealNodeLabel = "aiconform.dev/real-node"

// RealNodeTaint keeps the operators' workloads, whose images no real node
// has, off the real nodes: they are tainted as cloud providers taint their
// GPU nodes, so that only pods that tolerate the accelerator run there
// (the tests', the probes' that take the accelerator nodes' taints).
var RealNodeTaint = corev1.Taint{Key: string(GPUResource), Value: "present", Effect: corev1.TaintEffectNoSchedule}

// realNodeRange holds the real nodes' addresses, inside VirtualRange: node
// i (from 1) is 10.250.200.i, its pods 10.250.(200+i).0/24.
var realNodeRange = netip.MustParsePrefix("10.250.200.0/21")

// RealNodeName is the name of the rig's real node i, counted from 1.
func RealNodeName(i int) string { return fmt.Sprintf("rig-node-%d", i) }

// RealNodeIP is the InternalIP of real node i.
func RealNodeIP(i int) netip.Addr {
	b := realNodeRange.Addr().As4()
	b[3] = byte(i)
	return netip.AddrFrom4(b)
}

// RealNodePodCIDR is the range of real node i's pods.
func RealNodePodCIDR(i int) netip.Prefix {
	b := realNodeRange.Addr().As4()
	b[2] += byte(i)
	return netip.PrefixFrom(netip.AddrFrom4(b), 24)
}

// maxRealNodes keeps every node's pod range inside realNodeRange.
const maxRealNodes = 7

// realNode is what state.json records of a real node, so that a `rig down`
// in another process empties its containerd before stopping it.
type realNode struct {
	Name       string `json:"name"`
	Dir        string `json:"dir"`
	Containerd string `json:"containerd"` // its socket
	// Holder is the PID of `rig node-net`, whose namespaces the node's
	// processes enter (and a component run on the node, such as Traefik);
	// Connect is its CONNECT proxy's socket, the machine's one way to the
	// node's address and its pods.
	Holder  int    `json:"holder"`
	Connect string `json:"connect"`
}

// checkRealNodeHost says what the machine lacks to run real nodes.
func checkRealNodeHost(binDir string) error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (namespaces, mounts and containers need it)")
	}
	for _, c := range hostCommands {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, c)
		}
	}
	if _, err := os.Stat(filepath.Join(cniPluginDir, "bridge")); err != nil {
		missing = append(missing, filepath.Join(cniPluginDir, "bridge"))
	}
	for _, b := range []string{binKubelet, binRig} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			missing = append(missing, filepath.Join(binDir, b))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("a real node needs %s (run `make tools bin/rig rig-images`)", strings.Join(missing, ", "))
	}
	return nil
}

// startRealNode starts real node i and waits until it is Ready.
func (c *Cluster) startRealNode(ctx context.Context, i int, binDir string, detached bool, step func(string, ...any)) error {
	name := RealNodeName(i)
	dir := filepath.Join(c.dir, "nodes", name)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("%s: a previous run's folder: %w", name, err)
	}
	for _, d := range []string{"containerd", "kubelet", "cni", "cni-ipam", "pod-logs", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	logDir := filepath.Join(dir, "logs")
	nodeIP, podCIDR := RealNodeIP(i), RealNodePodCIDR(i)
	// The namespaces' holder, whose PID names the namespaces the others
	// enter.
	holder, sock, err := c.startNetHolder(ctx, name+"-net", filepath.Join(binDir, binRig), dir, logDir, detached, []string{
		"--node-ip", nodeIP.String(), "--pod-cidr", podCIDR.String(), "--kubelet-dir", filepath.Join(dir, "kubelet")})
	if err != nil {
		return fmt.Errorf("%s: its namespaces: %w", name, err)
	}
	for _, p := range []netip.Prefix{netip.PrefixFrom(nodeIP, 32), podCIDR} {
		if err := c.registerVirtualNet(p, sock); err != nil {
			return err
		}
	}
	enter := []string{fmt.Sprintf("--net=/proc/%d/ns/net", holder.PID), fmt.Sprintf("--mount=/proc/%d/ns/mnt", holder.PID), "--"}

	ctrdSock, err := shortSocket(filepath.Join(dir, "containerd"), "containerd.sock")
	if err != nil {
		return err
	}
	ctrdConfig := filepath.Join(dir, "containerd", "config.toml")
	if err := os.WriteFile(ctrdConfig, containerdConfig(dir, ctrdSock), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "cni", "10-rig.conflist"), cniConfig(dir, podCIDR), 0o644); err != nil {
		return err
	}
	c.state.RealNodes = append(c.state.RealNodes, &realNode{Name: name, Dir: dir, Containerd: ctrdSock, Holder: holder.PID, Connect: sock})
	ctrd, err := c.startIn(enter, name+"-containerd", "containerd", []string{"--config", ctrdConfig}, logDir, detached)
	if err != nil {
		return err
	}
	if err := waitSocket(ctx, ctrd, ctrdSock); err != nil {
		return fmt.Errorf("%s: containerd: %w", name, err)
	}
	step("%s: containerd up in its own namespaces (node %s, pods %s)", name, nodeIP, podCIDR)
	if err := importImages(ctx, binDir, ctrdSock, filepath.Join(dir, "images.tar")); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	step("%s: the rig's images imported: %s", name, strings.Join(ImageNames(), ", "))

	id, err := c.clientCert("system:node:"+name, "system:nodes")
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubelet.kubeconfig")
	if err := writeKubeconfig(kubeconfig, c.state.Server, c.caCert, id); err != nil {
		return err
	}
	kubeletConfig := filepath.Join(dir, "kubelet.yaml")
	if err := os.WriteFile(kubeletConfig, kubeletConfigYAML(dir, nodeIP, ctrdSock, filepath.Join(c.dir, "pki", "ca.crt")), 0o644); err != nil {
		return err
	}
	kubelet, err := c.startIn(enter, name+"-kubelet", filepath.Join(binDir, binKubelet), []string{
		"--config", kubeletConfig,
		"--kubeconfig", kubeconfig,
		// Its default root, /var/lib/kubelet, is the node's kubelet folder
		// in the node's mount namespace.
		"--root-dir", kubeletRoot,
		"--hostname-override", name,
		"--node-ip", nodeIP.String(),
		"--node-labels", RealNodeLabel + "=true",
		"--register-with-taints", fmt.Sprintf("%s=%s:%s", RealNodeTaint.Key, RealNodeTaint.Value, RealNodeTaint.Effect),
	}, logDir, detached)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	if err := waitNodesReady(ctx, cs, []*process{holder, ctrd, kubelet}, name); err != nil {
		return err
	}
	step("%s Ready", name)
	// Made from here, where the node's kubelet folder is not mounted: the
	// same files are under kubeletRoot in the node's namespace.
	if err := makeGPUDevices(filepath.Join(dir, "kubelet", gpuDevicesDir)); err != nil {
		return err
	}
	if err := startGPUPlugin(ctx, cs, filepath.Join(kubeletRoot, gpuDevicesDir), name, []*process{holder, ctrd, kubelet}); err != nil {
		return err
	}
	step("%s: %d %s advertised by the stand-in device plugin", name, RealNodeGPUs, GPUResource)
	return nil
}

// startIn runs exe inside a real node's namespaces (nsenter's enter
// arguments). nsenter execs exe, so the PID recorded is exe's.
func (c *Cluster) startIn(enter []string, name, exe string, args []string, logDir string, detached bool) (*process, error) {
	path, err := exec.LookPath(exe)
	if err != nil {
		return nil, err
	}
	p, err := c.start(name, "nsenter", append(append(append([]string{}, enter...), path), args...), logDir, childEnv(), detached)
	if err != nil {
		return nil, err
	}
	p.Exe = path
	return p, c.saveState()
}

// stopRealNodes stops each real node's kubelet, then every container its
// containerd runs: their shims would outlive containerd otherwise. The
// processes themselves stop with the rest.
func (c *Cluster) stopRealNodes() error {
	var errs []error
	for _, n := range c.state.RealNodes {
		for _, p := range c.procs {
			if p.Name == n.Name+"-kubelet" {
				if err := p.stop(10 * time.Second); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if err := removeContainers(n.Containerd); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
		}
		// A shim ends on its own once its pod's tasks are gone.
		deadline := time.Now().Add(10 * time.Second)
		for len(shimsOf(n.Containerd)) > 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if left := shimsOf(n.Containerd); len(left) > 0 {
			errs = append(errs, fmt.Errorf("%s: containerd shims %v still run", n.Name, left))
		}
	}
	return errors.Join(errs...)
}

// removeContainers kills and deletes every task of the CRI's namespace of
// the containerd at sock, and with them their shims.
func removeContainers(sock string) error {
	if _, err := os.Stat(sock); err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctr := func(args ...string) ([]byte, error) {
		return exec.CommandContext(ctx, "ctr", append([]string{"--address", sock, "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	}
	out, err := ctr("tasks", "list", "--quiet")
	if err != nil {
		return fmt.Errorf("ctr tasks list: %v: %s", err, out)
	}
	sandboxes, err := ctr("containers", "list", "--quiet", `labels."io.cri-containerd.kind"==sandbox`)
	if err != nil {
		return fmt.Errorf("ctr containers list: %v: %s", err, sandboxes)
	}
	// A pod's containers first, its sandbox last: the sandbox's shim is the
	// pod's, and ends with it.
	tasks := strings.Fields(string(out))
	last := strings.Fields(string(sandboxes))
	sort.SliceStable(tasks, func(i, j int) bool { return !slices.Contains(last, tasks[i]) && slices.Contains(last, tasks[j]) })
	var failed []string
	for _, id := range tasks {
		if out, err := ctr("tasks", "delete", "--force", id); err != nil {
			failed = append(failed, fmt.Sprintf("ctr tasks delete %s: %v: %s", id, err, out))
		}
	}
	// A delete can fail and the task still be gone: one whose process had
	// ended, or a sandbox whose shim ended before answering. What counts
	// is that none is left.
	out, err = ctr("tasks", "list", "--quiet")
	if err != nil {
		return fmt.Errorf("ctr tasks list: %v: %s", err, out)
	}
	if left := strings.Fields(string(out)); len(left) > 0 {
		return fmt.Errorf("tasks %v left running: %s", left, strings.Join(failed, "; "))
	}
	return nil
}

// shimsOf are the PIDs of the shims of the containerd at sock: processes
// of containerd-shim whose command line names that socket.
func shimsOf(sock string) []int {
	var pids []int
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		cmdline, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(cmdline, []byte("containerd-shim")) || !bytes.Contains(cmdline, []byte(sock)) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// clientCert issues a client certificate from the rig's CA.
func (c *Cluster) clientCert(cn string, groups ...string) (*keyPair, error) {
	ca, err := loadCA(filepath.Join(c.dir, "pki"))
	if err != nil {
		return nil, fmt.Errorf("load rig CA: %w", err)
	}
	return ca.issue(certSpec{cn: cn, orgs: groups, client: true})
}

// containerdConfig keeps every path of containerd's in the node's folder.
// Two settings are this machine's: the sandbox image is the rig's own
// pause, and oom_score_adj is left as it is, because lowering it is
// refused here even to root and runc then fails every sandbox.
func containerdConfig(dir, sock string) []byte {
	q := strconv.Quote
	return fmt.Appendf(nil, `version = 2
root = %s
state = %s

[grpc]
  address = %s

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %s
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # Naming one runtime replaces the default set: runc is named again.
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
  # A handler named as gVisor's, that is plain runc: a cluster that
  # claims a sandbox it does not have, which workload_sandboxing's probe
  # must see through.
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s]
    runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %s
    conf_dir = %s
`, q(filepath.Join(dir, "containerd", "root")), q(filepath.Join(dir, "containerd", "state")), q(sock),
		q(PauseImage), FakeSandboxHandler, q(cniPluginDir), q(filepath.Join(dir, "cni")))
}

// cniConfig is a bridge in the node's namespace: the pods' gateway is the
// bridge's first address, and nothing is masqueraded or routed beyond it.
func cniConfig(dir string, pods netip.Prefix) []byte {
	return fmt.Appendf(nil, `{
  "cniVersion": "0.4.0",
  "name": "rig",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q}]],
        "dataDir": %q
      }
    }
  ]
}
`, pods.String(), filepath.Join(dir, "cni-ipam"))
}

// kubeletConfigYAML is the KubeletConfiguration that works on this
// machine's cgroup v1 (see ../shared/RIG.md): cgroupfs, no QoS cgroups, no
// node allocatable enforced. The API server is admitted by the rig's CA,
// and anything so admitted is allowed: nothing else reaches the node.
func kubeletConfigYAML(dir string, nodeIP netip.Addr, ctrdSock, caFile string) []byte {
	return fmt.Appendf(nil, `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: 10250
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: %s
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: unix://%s
cgroupDriver: cgroupfs
failCgroupV1: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
podLogsDir: %s
resolvConf: ""
serializeImagePulls: false
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%%"
  imagefs.available: "1%%"
# A device plugin's resources reach the node's status within a second, not
# ten.
nodeStatusUpdateFrequency: 1s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, nodeIP, caFile, ctrdSock, filepath.Join(dir, "pod-logs"))
}
