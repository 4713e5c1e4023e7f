package rig

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// Leader election on the rig. Both operators elect a leader through a Lease
// in their namespace, as their releases do, with controller-runtime's
// identity `<hostname>_<uuid>`. The process runs on this machine, so its
// hostname is the machine's; the rig gives the stand-in controller pod the
// same hostname (spec.hostname), and the Lease's holder names a controller
// pod exactly as on a real cluster, where the process runs in that pod.

// serviceAccountNamespaceFile is where controller-runtime, out of flags,
// finds the namespace to elect a leader in: the file the kubelet mounts
// into every pod.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// PodHostname is the hostname the rig gives its controller pods: this
// machine's, which is what the operators' processes put in their Lease's
// holder identity. Empty when the machine's hostname cannot be a pod's (not
// a DNS-1123 label), and the Lease's holder then names no pod.
func PodHostname() string {
	h, err := os.Hostname()
	if err != nil || len(validation.IsDNS1123Label(h)) > 0 {
		return ""
	}
	return h
}

// podNamespaceLauncher returns the command that runs the binary with args
// in a private mount namespace where the service account namespace file
// holds ns, as a kubelet would mount it. /run (which /var/run points to)
// is overlaid, so the process still sees everything else there; nothing
// outside the process changes, and the namespace goes with it. The shell
// execs the binary, so the process keeps the PID the rig records.
func (o *Operator) podNamespaceLauncher(args []string) (string, []string, error) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return "", nil, fmt.Errorf("%s finds its leader-election namespace only in %s, which the rig provides in a mount namespace of its own: %w",
			o.spec.binary, serviceAccountNamespaceFile, err)
	}
	// The file lives under /var/run, which is /run on the systems the rig
	// runs on; /run is what is overlaid.
	if run, err := filepath.EvalSymlinks("/var/run"); err != nil || run != "/run" {
		return "", nil, fmt.Errorf("%s needs %s, and the rig provides it by overlaying /run, but /var/run is not /run here", o.spec.binary, serviceAccountNamespaceFile)
	}
	root := filepath.Join(o.dir, "pod-run")
	if err := os.RemoveAll(root); err != nil {
		return "", nil, err
	}
	upper, work := filepath.Join(root, "upper"), filepath.Join(root, "work")
	saDir := filepath.Join(upper, strings.TrimPrefix(filepath.Dir(serviceAccountNamespaceFile), "/var/run/"))
	if err := os.MkdirAll(saDir, 0o755); err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(saDir, "namespace"), []byte(o.spec.namespace), 0o644); err != nil {
		return "", nil, err
	}
	// Without root, a user namespace grants the mount; the process is the
	// same user throughout.
	var launcher []string
	if os.Geteuid() != 0 {
		launcher = append(launcher, "--user", "--map-root-user")
	}
	// A fixed certificate folder, where the process has one, is the rig's
	// folder under its TMPDIR, mounted over that path for this process
	// alone. Only that folder: the rest of /tmp, where the rig and its
	// binaries may live, stays in view. The mount point itself must exist
	// on the machine: an empty folder, created once and left for others.
	certs := "-"
	if o.spec.fixedCertDir {
		certs = filepath.Join(o.tmpDir(), strings.TrimPrefix(fixedCertDir, "/tmp/"))
		if err := os.MkdirAll(certs, 0o700); err != nil {
			return "", nil, err
		}
	}
	launcher = append(launcher, "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
		`mount -t overlay overlay -o "lowerdir=/run,upperdir=$1,workdir=$2" /run && `+
			`{ [ "$3" = - ] || { mkdir -p "$4" && mount --bind "$3" "$4"; }; } && shift 4 && exec "$@"`,
		"launch", upper, work, certs, fixedCertDir, o.binary)
	return unshare, append(launcher, args...), nil
}

// fixedCertDir is where cert-controller users (Kubeflow Trainer, JobSet,
// the Training Operator) keep their webhook certificates, whatever TMPDIR
// says.
const fixedCertDir = "/tmp/k8s-webhook-server/serving-certs"

// Lease returns the name of the Lease the operator elects its leader with.
func (o *Operator) Lease() string { return o.spec.lease }

// WaitLeader waits until this run of the process holds its Lease: the
// holder is this machine's `<hostname>_...` and the renewal is newer than
// the process. A Lease left by an earlier run costs a whole lease duration
// (15 s) even when long expired: client-go times a foreign holder from when
// it first observes it, not from its renewTime. It returns the holder
// identity.
func (o *Operator) WaitLeader(ctx context.Context) (string, error) {
	if o.proc == nil {
		return "", fmt.Errorf("%s is not running", o.spec.binary)
	}
	cs, err := kubernetes.NewForConfig(o.c.RESTConfig())
	if err != nil {
		return "", err
	}
	return waitLeader(ctx, cs, o.spec.namespace, o.spec.lease, o.started)
}

// waitLeader waits for a holder renewing the Lease since started, from this
// machine.
func waitLeader(ctx context.Context, cs kubernetes.Interface, ns, name string, started time.Time) (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", err
	}
	var holder, last string
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		holder, last = leaseState(l)
		// MicroTime keeps microseconds; the process started before it
		// could renew.
		return strings.HasPrefix(holder, host+"_") && l.Spec.RenewTime != nil && !l.Spec.RenewTime.Time.Before(started.Truncate(time.Microsecond)), nil
	})
	if err != nil {
		return "", fmt.Errorf("Lease %s/%s held by this run: %w (last: %s)", ns, name, err, last)
	}
	return holder, nil
}

func leaseState(l *coordinationv1.Lease) (holder, state string) {
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	renewed := "never"
	if l.Spec.RenewTime != nil {
		renewed = l.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
	}
	return holder, fmt.Sprintf("holder %q renewed %s", holder, renewed)
}
