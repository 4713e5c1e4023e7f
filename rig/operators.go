package rig

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// fieldManager owns every field the rig applies, so a later apply by the
// rig takes back what a test changed (a scaled Deployment, an emptied
// caBundle) and leaves other managers' fields alone.
const fieldManager = "aiconform-rig"

// standInAnnotation marks the controller Deployments the rig creates: their
// pods are kwok's, the controller itself is a local process.
const standInAnnotation = "rig.aiconform.dev/stand-in-for"

// OperatorOptions configure the operators' installs (InstallKServe,
// InstallKubeRay, InstallTrainer...).
type OperatorOptions struct {
	// BinDir holds the operator binaries built by tools/build; empty
	// resolves as Options.BinDir does.
	BinDir string
	// Detached starts the operator process in its own session, as
	// Options.Detached does for the control plane: `rig up` needs it.
	Detached bool
	// Timeout bounds the install (CRDs, process, webhooks, Deployment).
	// Zero means 3 minutes.
	Timeout time.Duration
	// Progress receives one line per install step. Nil discards them.
	Progress io.Writer
	// Namespace installs the operator into this namespace rather than the
	// one its manifests name, as a Helm release goes into its release's
	// namespace: its Deployment, Lease, configuration, certificate Secret
	// and webhooks' namespace selectors follow it. Empty keeps the
	// manifests' own.
	Namespace string
}

// namespaceOr is the namespace to install into: opts.Namespace, or def,
// the manifests' own.
func (opts OperatorOptions) namespaceOr(def string) string {
	if opts.Namespace != "" {
		return opts.Namespace
	}
	return def
}

// Webhook is one admission webhook the rig registered for an operator.
// A webhook is identified by configuration and name together: webhook
// names are not unique across configurations.
type Webhook struct {
	Configuration string
	// Kind is "validating" or "mutating".
	Kind string
	Name string
	URL  string
}

// Operator is a real AI operator, built from its Go module by tools/build,
// running as a local process against a full rig: its CRDs and config come
// from the downloaded module, its admission webhooks are registered by URL
// on 127.0.0.1 with the rig's CA, and a Deployment of its real name shows
// its controller pod Running through kwok, as on a real cluster.
type Operator struct {
	c    *Cluster
	spec operatorSpec
	// id names the install in the rig's folders and state: the profile
	// name, and its namespace too when OperatorOptions.Namespace moved it,
	// so that two installs of one operator keep their folders and their
	// webhook records apart.
	id        string
	opts      OperatorOptions
	moduleDir string
	binary    string
	dir       string // kubeconfig, TMPDIR with the webhook serving cert
	port      int    // webhook server port

	proc    *process
	started time.Time // when proc was started, for WaitLeader
	// netHolder holds the network namespace of an operator whose webhook
	// port is fixed, and serves port, on the machine's loopback, as that
	// port inside (ownNetwork).
	netHolder *process
	// ca is the PEM CA the webhooks' serving certificate chains to: the
	// rig's, or the operator's own for a certSecret.
	ca       []byte
	webhooks []Webhook
	skipped  []string
}

// operatorSpec is what differs between operators.
type operatorSpec struct {
	name            string // profile name: kserve, kuberay
	binary          string // in bin/
	module, version string // must match the tools module's pin
	crdDir          string // in the module
	// webhookManifest is in the module; "" for an install that registers
	// no webhook (KubeRay's Helm chart), whose process serves none.
	webhookManifest string

	namespace string
	// namespaceDoc is the module file holding the manifests' Namespace
	// object, "" for a plain namespace; it is renamed to namespace, as
	// kustomize's namespace setting renames it, and keeps its labels.
	namespaceDoc   string
	deployment     string
	serviceAccount string
	container      string
	image          string
	labels         map[string]string // on the Deployment and its pods
	selector       map[string]string

	// lease is the Lease the process elects its leader with, in
	// namespace (its LeaderElectionID); install returns once it leads.
	lease string
	// configNames rename the module manifest's webhook configurations as
	// the release's installer does (a kustomize namePrefix or patch);
	// configurations not named keep the manifest's name.
	configNames map[string]string
	// certSecret, when set, is the Secret in namespace from which the
	// process's own certificate manager (open-policy-agent's
	// cert-controller) serves its webhooks and injects their caBundle. The
	// rig fills it first with a CA and a serving certificate of its own
	// making, valid for 127.0.0.1 and the Service's DNS name, so that the
	// manager keeps them rather than making certificates for the Service
	// alone.
	certSecret *certSecret
	// fixedCertDir: the process's certificate manager writes to the fixed
	// fixedCertDir path, not under TMPDIR; it runs with the rig's folder
	// mounted there, in a mount namespace of its own, so that operators do
	// not share it.
	fixedCertDir bool
	// namespaceSelectors are set on the manifest's webhooks of those names,
	// as the release's installer patches them in.
	namespaceSelectors map[string]*metav1.LabelSelector
	// conversionCRDs are CRDs whose versions the process's webhook server
	// converts (at /convert, as the release's CRD patches say); each start
	// points them at it, with the CA it serves with.
	conversionCRDs []string
	// lateWebhooks: the process registers its webhook handlers only once
	// its certificates are in place, after its server answers, and serves
	// every path of its manifest; a 404 then means "not yet".
	lateWebhooks bool
	// podNamespaceFile: the process has no flag for its leader-election
	// namespace and reads it, as in a pod, from the service account
	// namespace file; the rig provides that file (leader.go).
	podNamespaceFile bool
	// webhookPort is fixed when the binary has no flag for it; 0 picks a
	// free port passed through args.
	webhookPort int
	args        func(webhookPort, metricsPort, probePort int) []string
	// configFile, when set, writes the process's configuration file into
	// dir with those ports (moduleDir holds the release's own), and the
	// process gets --config with its path.
	configFile func(dir, moduleDir string, webhookPort, metricsPort, probePort int) (string, error)
	env        []string
	// beforeStart applies what the process reads at start-up; afterReady
	// what a release install applies once the controller runs (objects
	// its webhooks validate).
	beforeStart func(ctx context.Context, in *installer, moduleDir string) error
	afterReady  func(ctx context.Context, in *installer, moduleDir string) error
}

// operatorRecord is what state.json keeps of an installed operator, so
// that StopDir removes its webhook configurations before it stops the
// processes.
type operatorRecord struct {
	Name                string   `json:"name"`
	Process             string   `json:"process"`
	ValidatingWebhooks  []string `json:"validatingWebhookConfigurations,omitempty"`
	MutatingWebhooks    []string `json:"mutatingWebhookConfigurations,omitempty"`
	SkippedWebhookPaths []string `json:"skippedWebhooks,omitempty"`
}

// install runs the steps common to every operator. On error, whatever
// was started is stopped again and its webhooks removed.
func (c *Cluster) install(ctx context.Context, spec operatorSpec, opts OperatorOptions) (_ *Operator, err error) {
	if c.state.ControlPlaneOnly {
		return nil, fmt.Errorf("%s needs a full rig (kcm, scheduler, kwok), not a ControlPlaneOnly one", spec.name)
	}
	if opts.Timeout == 0 {
		opts.Timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	id := spec.name
	if opts.Namespace != "" {
		id += "@" + spec.namespace
	}
	began := time.Now()
	step := func(format string, args ...any) {
		fmt.Fprintf(progress, "rig: %s: [%5.1fs] %s\n", id, time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}

	binDir, err := resolveBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	o := &Operator{c: c, spec: spec, id: id, opts: opts, binary: filepath.Join(binDir, spec.binary),
		dir: filepath.Join(c.dir, "operators", id)}
	if _, err := os.Stat(o.binary); err != nil {
		return nil, fmt.Errorf("%s missing in %s (run `tools/build %s`): %w", spec.binary, binDir, spec.binary, err)
	}
	if o.moduleDir, err = moduleDir(ctx, spec.module, spec.version); err != nil {
		return nil, err
	}
	in, err := c.newInstaller()
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = o.Stop(context.Background())
		}
	}()

	names, err := in.applyDir(ctx, filepath.Join(o.moduleDir, spec.crdDir), func(u *unstructured.Unstructured) bool {
		return u.GetKind() == "CustomResourceDefinition"
	})
	if err != nil {
		return nil, err
	}
	if err := in.waitCRDsEstablished(ctx, names); err != nil {
		return nil, err
	}
	step("%d CRDs from %s established", len(names), filepath.Join(filepath.Base(o.moduleDir), spec.crdDir))

	if err := in.namespace(ctx, spec, o.moduleDir); err != nil {
		return nil, err
	}
	if err := o.prepare(ctx, in); err != nil {
		return nil, err
	}
	if spec.beforeStart != nil {
		if err := spec.beforeStart(ctx, in, o.moduleDir); err != nil {
			return nil, err
		}
	}
	if err := o.Start(ctx); err != nil {
		return nil, err
	}
	if spec.webhookManifest == "" {
		step("%s (pid %d) started; it serves no webhook and none is registered", spec.binary, o.PID())
	} else {
		step("%s (pid %d) serves webhooks on 127.0.0.1:%d; registered %d, skipped %d not served: %s",
			spec.binary, o.PID(), o.port, len(o.webhooks), len(o.skipped), strings.Join(o.skipped, ", "))
	}

	if err := in.controllerDeployment(ctx, spec); err != nil {
		return nil, err
	}
	host := PodHostname()
	if host == "" {
		host = "none: this machine's hostname cannot be a pod's, so the Lease's holder names no pod"
	}
	step("Deployment %s/%s available; pod hostname %s", spec.namespace, spec.deployment, host)
	if spec.lease != "" {
		holder, err := o.WaitLeader(ctx)
		if err != nil {
			return nil, err
		}
		step("leader: Lease %s/%s held by %s, %.1fs after the process started", spec.namespace, spec.lease, holder, time.Since(o.started).Seconds())
	}
	if spec.afterReady != nil {
		if err := spec.afterReady(ctx, in, o.moduleDir); err != nil {
			return nil, err
		}
	}
	step("installed")
	return o, nil
}

// prepare writes the process's kubeconfig and webhook serving certificate,
// and for a certSecret the Secret the process serves its webhooks from.
func (o *Operator) prepare(ctx context.Context, in *installer) error {
	certDir := filepath.Join(o.tmpDir(), "k8s-webhook-server", "serving-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	ca, err := loadCA(filepath.Join(o.c.dir, "pki"))
	if err != nil {
		return fmt.Errorf("load rig CA: %w", err)
	}
	// system:masters, like kwok's identity: the rig tests what the
	// operator does, not its RBAC manifests, and a missing rule would
	// only hide the behaviour under test.
	id, err := ca.issue(certSpec{cn: "aiconform-rig:" + o.spec.name, orgs: []string{"system:masters"}, client: true})
	if err != nil {
		return err
	}
	if err := writeKubeconfig(o.kubeconfig(), o.c.Server(), ca.certPEM, id); err != nil {
		return err
	}
	certPEM, keyPEM, err := o.c.ServingCert()
	if err != nil {
		return err
	}
	o.ca = ca.certPEM
	if s := o.spec.certSecret; s != nil {
		secret, err := s.make(o.spec.namespace)
		if err != nil {
			return err
		}
		if err := in.applyTyped(ctx, secret); err != nil {
			return fmt.Errorf("webhook Secret %s/%s: %w", o.spec.namespace, s.name, err)
		}
		o.ca, certPEM, keyPEM = secret.Data["ca.crt"], secret.Data["tls.crt"], secret.Data["tls.key"]
	}
	// controller-runtime's default file names in its default directory,
	// which is where both operators read them: neither has a flag for it.
	if err := os.WriteFile(filepath.Join(certDir, "tls.crt"), certPEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(certDir, "tls.key"), keyPEM, 0o600)
}

func (o *Operator) kubeconfig() string { return filepath.Join(o.dir, "kubeconfig") }

// tmpDir is the process's TMPDIR: controller-runtime reads webhook certs
// from $TMPDIR/k8s-webhook-server/serving-certs unless told otherwise.
func (o *Operator) tmpDir() string { return filepath.Join(o.dir, "tmp") }

// Name returns the operator's profile name (kserve, kuberay).
func (o *Operator) Name() string { return o.spec.name }

// PID returns the operator process's PID, 0 while it is stopped.
func (o *Operator) PID() int {
	if o.proc == nil {
		return 0
	}
	return o.proc.PID
}

// Log returns the path of the operator process's log.
func (o *Operator) Log() string { return filepath.Join(o.c.dir, "logs", o.spec.binary+".log") }

// ModuleDir returns the downloaded module the CRDs and config came from.
func (o *Operator) ModuleDir() string { return o.moduleDir }

// Namespace and Deployment name the controller Deployment.
func (o *Operator) Namespace() string { return o.spec.namespace }

// Deployment returns the controller Deployment's name.
func (o *Operator) Deployment() string { return o.spec.deployment }

// Webhooks returns the webhooks registered while the process runs.
func (o *Operator) Webhooks() []Webhook { return slices.Clone(o.webhooks) }

// SkippedWebhooks returns the webhooks of the module's manifest whose path
// the process does not serve ("configuration/webhook path"); registering
// them would make the API server refuse every request they cover.
func (o *Operator) SkippedWebhooks() []string { return slices.Clone(o.skipped) }

// Start runs the operator process (again) and registers its webhooks once
// its webhook server answers, each only if its path is served.
func (o *Operator) Start(ctx context.Context) error {
	if o.proc != nil && o.proc.running() {
		return fmt.Errorf("%s already runs (pid %d)", o.spec.binary, o.proc.PID)
	}
	port := o.spec.webhookPort
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	var enter []string
	if port == 0 {
		port = ports[2]
		o.port = port
	} else if enter, err = o.ownNetwork(ctx, port); err != nil {
		return err
	}
	env := append(childEnv(), "KUBECONFIG="+o.kubeconfig(), "TMPDIR="+o.tmpDir())
	env = append(env, o.spec.env...)
	args := o.spec.args(port, ports[0], ports[1])
	if o.spec.configFile != nil {
		path, err := o.spec.configFile(o.dir, o.moduleDir, port, ports[0], ports[1])
		if err != nil {
			return err
		}
		args = append(args, "--config", path)
	}
	if err := o.convertCRDs(ctx); err != nil {
		return err
	}
	exe, runArgs := o.binary, args
	if o.spec.podNamespaceFile || o.spec.fixedCertDir {
		if exe, runArgs, err = o.podNamespaceLauncher(args); err != nil {
			return err
		}
	}
	if enter != nil {
		exe, runArgs = "nsenter", append(append(enter, exe), runArgs...)
	}

	o.c.mu.Lock()
	o.started = time.Now()
	p, err := o.c.start(o.spec.binary, exe, runArgs, filepath.Join(o.c.dir, "logs"), env, o.opts.Detached)
	if err == nil && exe != o.binary {
		// The launcher execs the binary in place: the recorded PID runs
		// the binary, which is what stopping it checks for.
		p.Exe, p.Args = o.binary, args
		err = o.c.saveState()
	}
	o.c.mu.Unlock()
	if p != nil {
		o.proc = p
	}
	if err != nil {
		return err
	}
	if o.spec.webhookManifest == "" {
		// No server to wait for: the Lease it takes shows it runs. The
		// record says so, with nothing to remove.
		return o.register(ctx, nil)
	}
	hooks, err := o.webhookConfigs()
	if err != nil {
		return err
	}
	if err := o.waitServing(ctx); err != nil {
		return err
	}
	return o.register(ctx, hooks)
}

// convertCRDs points the conversion webhook of each of the spec's
// conversionCRDs at this start's server. A merge patch, not an apply: it
// must leave the rest of the CRD, applied whole at install, as it is.
func (o *Operator) convertCRDs(ctx context.Context) error {
	if len(o.spec.conversionCRDs) == 0 {
		return nil
	}
	in, err := o.c.newInstaller()
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": map[string]any{
		"strategy": "Webhook",
		"webhook": map[string]any{
			"clientConfig":             map[string]any{"url": fmt.Sprintf("https://127.0.0.1:%d/convert", o.port), "caBundle": o.ca},
			"conversionReviewVersions": []string{"v1"},
		},
	}}})
	if err != nil {
		return err
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, name := range o.spec.conversionCRDs {
		if _, err := in.dyn.Resource(crds).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
			return fmt.Errorf("conversion webhook of CRD %s: %w", name, err)
		}
	}
	return nil
}

// Stop removes the operator's webhook configurations, then stops its
// process. The order matters: the webhooks fail closed (failurePolicy
// Fail), so with the server gone first every request they cover would be
// refused. The controller Deployment stays: a stopped process is a
// controller that does not reconcile, which is what tests fault in.
func (o *Operator) Stop(ctx context.Context) error {
	var errs []error
	if err := o.c.removeWebhooks(ctx, o.id); err != nil {
		errs = append(errs, err)
	}
	o.webhooks = nil
	if err := o.stopProcess(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Uninstall stops the operator (Stop), and the holder of its network
// namespace if it has one, then deletes its namespace and waits until it
// is gone: what removing a release with its namespace leaves. Its CRDs,
// custom resources and cluster-scoped objects stay, as Helm keeps CRDs;
// the operator can be installed again, anywhere. Two operators installed
// into one namespace (Trainer and JobSet) lose it together.
func (o *Operator) Uninstall(ctx context.Context) error {
	if err := o.Stop(ctx); err != nil {
		return err
	}
	if err := o.c.stopComponent(o.netHolder); err != nil {
		return err
	}
	o.netHolder = nil
	o.c.mu.Lock()
	o.c.state.Operators = slices.DeleteFunc(o.c.state.Operators, func(r *operatorRecord) bool { return r.Name == o.id })
	err := o.c.saveState()
	o.c.mu.Unlock()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(o.c.RESTConfig())
	if err != nil {
		return err
	}
	ns := o.spec.namespace
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", ns, err)
	}
	// The namespace controller deletes what it holds; kwok ends the pods.
	last := "not yet read"
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = string(n.Status.Phase)
		for _, c := range n.Status.Conditions {
			if c.Status == corev1.ConditionTrue {
				last += "; " + string(c.Type) + ": " + c.Message
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s gone: %w (last: %s)", ns, err, last)
	}
	return nil
}

// stopProcess stops the operator's process and forgets it.
func (o *Operator) stopProcess() error {
	err := o.c.stopComponent(o.proc)
	o.proc = nil
	return err
}

// stopComponent stops a process started after the control plane (an
// operator, the metrics adapter) and forgets it; nil is a no-op.
func (c *Cluster) stopComponent(p *process) error {
	if p == nil {
		return nil
	}
	var errs []error
	if err := p.stop(10 * time.Second); err != nil {
		errs = append(errs, err)
	}
	c.mu.Lock()
	c.procs = slices.DeleteFunc(c.procs, func(q *process) bool { return q == p })
	c.state.Processes = c.procs
	if err := c.saveState(); err != nil {
		errs = append(errs, err)
	}
	c.mu.Unlock()
	return errors.Join(errs...)
}

// ownNetwork gives an operator whose webhook port is fixed a network
// namespace of its own (nodenet.go), held by `rig node-net` from the
// first start on: the port is the operator's there, whatever holds it on
// the machine, and a loopback listener of the rig's on a free port leads
// to it, which is what its webhooks name (o.port). It returns nsenter's
// arguments to run the operator inside.
func (o *Operator) ownNetwork(ctx context.Context, inside int) ([]string, error) {
	if o.netHolder == nil || !o.netHolder.running() {
		rigBin := filepath.Join(filepath.Dir(o.binary), binRig)
		if _, err := os.Stat(rigBin); err != nil {
			return nil, fmt.Errorf("%s listens on the fixed port %d, which the rig gives it in a network "+
				"namespace of its own, held by %s (run `make bin/rig`): %w", o.spec.binary, inside, rigBin, err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		f, err := ln.(*net.TCPListener).File()
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close() // the holder serves its copy
		if err != nil {
			return nil, err
		}
		defer f.Close()
		p, _, err := o.c.startNetHolder(ctx, o.spec.binary+"-net", rigBin, o.dir, filepath.Join(o.c.dir, "logs"), o.opts.Detached,
			[]string{"--publish", fmt.Sprintf("3=127.0.0.1:%d", inside)}, f)
		if err != nil {
			return nil, err
		}
		o.netHolder, o.port = p, port
	}
	return []string{fmt.Sprintf("--net=/proc/%d/ns/net", o.netHolder.PID), "--"}, nil
}

// portFree fails when something already listens on port, on loopback or
// on every address.
func portFree(port int) error {
	for _, host := range []string{"127.0.0.1", ""} {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		_ = ln.Close()
	}
	return nil
}

// webhookConfigs reads the module's webhook manifest and rewrites every
// webhook from its in-cluster Service to a URL on 127.0.0.1 with the rig's
// CA. The Services' cluster addresses are fake here and never dialled.
func (o *Operator) webhookConfigs() ([]rewritten, error) {
	data, err := os.ReadFile(filepath.Join(o.moduleDir, o.spec.webhookManifest))
	if err != nil {
		return nil, err
	}
	ca := o.ca
	docs, err := splitYAML(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.spec.webhookManifest, err)
	}
	var out []rewritten
	rewrite := func(config, kind, name string, cc *admissionregistrationv1.WebhookClientConfig) (rewritten, error) {
		if cc.Service == nil || cc.Service.Path == nil {
			return rewritten{}, fmt.Errorf("webhook %s in %s has no service path", name, config)
		}
		u := fmt.Sprintf("https://127.0.0.1:%d%s", o.port, *cc.Service.Path)
		cc.Service, cc.URL, cc.CABundle = nil, &u, ca
		return rewritten{Webhook: Webhook{Configuration: config, Kind: kind, Name: name, URL: u}}, nil
	}
	for _, doc := range docs {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, err
		}
		switch tm.Kind {
		case "ValidatingWebhookConfiguration":
			var cfg admissionregistrationv1.ValidatingWebhookConfiguration
			if err := yaml.UnmarshalStrict(doc, &cfg); err != nil {
				return nil, fmt.Errorf("%s: %w", o.spec.webhookManifest, err)
			}
			if name, ok := o.spec.configNames[cfg.Name]; ok {
				cfg.Name = name
			}
			for i := range cfg.Webhooks {
				if sel := o.spec.namespaceSelectors[cfg.Webhooks[i].Name]; sel != nil {
					cfg.Webhooks[i].NamespaceSelector = sel.DeepCopy()
				}
				h, err := rewrite(cfg.Name, "validating", cfg.Webhooks[i].Name, &cfg.Webhooks[i].ClientConfig)
				if err != nil {
					return nil, err
				}
				keep := cfg.DeepCopy()
				keep.Webhooks = []admissionregistrationv1.ValidatingWebhook{cfg.Webhooks[i]}
				h.obj = keep
				out = append(out, h)
			}
		case "MutatingWebhookConfiguration":
			var cfg admissionregistrationv1.MutatingWebhookConfiguration
			if err := yaml.UnmarshalStrict(doc, &cfg); err != nil {
				return nil, fmt.Errorf("%s: %w", o.spec.webhookManifest, err)
			}
			if name, ok := o.spec.configNames[cfg.Name]; ok {
				cfg.Name = name
			}
			for i := range cfg.Webhooks {
				if sel := o.spec.namespaceSelectors[cfg.Webhooks[i].Name]; sel != nil {
					cfg.Webhooks[i].NamespaceSelector = sel.DeepCopy()
				}
				h, err := rewrite(cfg.Name, "mutating", cfg.Webhooks[i].Name, &cfg.Webhooks[i].ClientConfig)
				if err != nil {
					return nil, err
				}
				keep := cfg.DeepCopy()
				keep.Webhooks = []admissionregistrationv1.MutatingWebhook{cfg.Webhooks[i]}
				h.obj = keep
				out = append(out, h)
			}
		}
	}
	return out, nil
}

// rewritten is one webhook pointed at 127.0.0.1, in a configuration of
// its own until register merges those that are served.
type rewritten struct {
	Webhook
	obj runtime.Object
}

// waitServing waits until the webhook server completes a TLS handshake
// with the rig's serving certificate and answers HTTP. Both operators
// register every webhook path before their manager starts the server, so
// from then on a 404 means a path that is not served at all.
func (o *Operator) waitServing(ctx context.Context) error {
	hc, err := o.httpClient()
	if err != nil {
		return err
	}
	return waitAnswers(ctx, hc, fmt.Sprintf("https://127.0.0.1:%d/", o.port), o.proc, o.spec.binary)
}

// waitAnswers waits until url answers at all (any status: a webhook
// server's root is a 404), while proc runs.
func waitAnswers(ctx context.Context, hc *http.Client, url string, proc *process, what string) error {
	return waitStatus(ctx, hc, url, proc, what, 0)
}

// waitStatus waits until url answers with status want (any, when 0),
// while proc runs.
func waitStatus(ctx context.Context, hc *http.Client, url string, proc *process, what string, want int) error {
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if want == 0 || resp.StatusCode == want {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if err := pause(ctx, 200*time.Millisecond, proc); err != nil {
			return fmt.Errorf("%s on %s: %w (last: %s)", what, url, err, last)
		}
	}
}

func (o *Operator) httpClient() (*http.Client, error) { return loopbackClient(o.spec.name, o.ca) }

// loopbackClient is an HTTPS client trusting only ca, for servers of the
// rig on 127.0.0.1.
func loopbackClient(name string, ca []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s's CA: no certificate", name)
	}
	return &http.Client{
		Timeout: 2 * time.Second,
		// Only ever 127.0.0.1, and no proxy from the environment.
		Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}, nil
}

// served asks the webhook server whether it handles path: an empty
// AdmissionReview gets an answer (an "errored" review) from a registered
// handler and 404 from the server's mux otherwise.
func (o *Operator) served(ctx context.Context, hc *http.Client, url string) (bool, error) {
	body := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode != http.StatusNotFound, nil
}

// register applies one configuration per manifest configuration holding
// only its served webhooks, and records them in the state file before
// applying, so that a crash in between still removes them.
func (o *Operator) register(ctx context.Context, hooks []rewritten) error {
	hc, err := o.httpClient()
	if err != nil {
		return err
	}
	var served []rewritten
	o.skipped = nil
	for _, h := range hooks {
		ok, err := o.served(ctx, hc, h.URL)
		for !ok && err == nil && o.spec.lateWebhooks {
			if err = pause(ctx, 200*time.Millisecond, o.proc); err == nil {
				ok, err = o.served(ctx, hc, h.URL)
			}
		}
		if err != nil {
			return fmt.Errorf("probe %s webhook %s: %w", h.Kind, h.Name, err)
		}
		if ok {
			served = append(served, h)
		} else {
			o.skipped = append(o.skipped, h.Configuration+"/"+h.Name+" ("+h.URL[strings.LastIndex(h.URL, "/"):]+" answers 404)")
		}
	}
	rec := operatorRecord{Name: o.id, Process: o.spec.binary, SkippedWebhookPaths: o.skipped}
	var objs []runtime.Object
	merged := map[string]runtime.Object{}
	for _, h := range served {
		key := h.Kind + "/" + h.Configuration
		switch obj := h.obj.(type) {
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			if m, ok := merged[key].(*admissionregistrationv1.ValidatingWebhookConfiguration); ok {
				m.Webhooks = append(m.Webhooks, obj.Webhooks...)
				continue
			}
			rec.ValidatingWebhooks = append(rec.ValidatingWebhooks, h.Configuration)
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			if m, ok := merged[key].(*admissionregistrationv1.MutatingWebhookConfiguration); ok {
				m.Webhooks = append(m.Webhooks, obj.Webhooks...)
				continue
			}
			rec.MutatingWebhooks = append(rec.MutatingWebhooks, h.Configuration)
		}
		obj := h.obj.DeepCopyObject()
		merged[key] = obj
		objs = append(objs, obj)
	}
	if err := o.c.recordOperator(rec); err != nil {
		return err
	}
	in, err := o.c.newInstaller()
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := in.applyTyped(ctx, obj); err != nil {
			return err
		}
	}
	o.webhooks = nil
	for _, h := range served {
		o.webhooks = append(o.webhooks, h.Webhook)
	}
	return nil
}

// recordOperator stores (or replaces) an operator's record in state.json.
func (c *Cluster) recordOperator(rec operatorRecord) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state.Operators = slices.DeleteFunc(c.state.Operators, func(r *operatorRecord) bool { return r.Name == rec.Name })
	c.state.Operators = append(c.state.Operators, &rec)
	return c.saveState()
}

// removeWebhooks deletes the webhook configurations recorded for the named
// operator, or for every operator when name is empty, and waits a moment
// for the API server to stop calling them: it learns of deletions through
// an informer, not synchronously.
func (c *Cluster) removeWebhooks(ctx context.Context, name string) error {
	c.mu.Lock()
	var recs []*operatorRecord
	for _, r := range c.state.Operators {
		if name == "" || r.Name == name {
			recs = append(recs, r)
		}
	}
	c.mu.Unlock()
	if len(recs) == 0 {
		return nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.state.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var errs []error
	deleted := 0
	for _, r := range recs {
		for _, n := range r.ValidatingWebhooks {
			err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, n, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete ValidatingWebhookConfiguration %s: %w", n, err))
			}
			deleted++
		}
		for _, n := range r.MutatingWebhooks {
			err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, n, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete MutatingWebhookConfiguration %s: %w", n, err))
			}
			deleted++
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c.mu.Lock()
	for _, r := range recs {
		r.ValidatingWebhooks, r.MutatingWebhooks = nil, nil
	}
	err = c.saveState()
	c.mu.Unlock()
	if deleted > 0 {
		// The server keeps answering meanwhile, so a request the API
		// server still routes to it succeeds.
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	return err
}

// moduleDir returns the module's directory in the module cache,
// downloading it through the Go module proxy if needed. It runs outside
// any module so that the caller's go.mod and go.work play no part.
func moduleDir(ctx context.Context, module, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w: %s", module, version, err, strings.TrimSpace(stderr.String()))
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	if m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", module, version, m.Error)
	}
	return m.Dir, nil
}

// installer applies manifests with server-side apply: the largest CRDs
// (InferenceService ~1 MB, RayJob ~1.3 MB) exceed the 256 KiB
// last-applied annotation a client-side apply would write.
type installer struct {
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func (c *Cluster) newInstaller() (*installer, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.state.Kubeconfig)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &installer{kube: kube, dyn: dyn,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))}, nil
}

// apply server-side applies one object, forcing conflicts: the rig owns
// what it installs.
func (in *installer) apply(ctx context.Context, u *unstructured.Unstructured) error {
	gvk := u.GroupVersionKind()
	m, err := in.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		// A kind whose CRD was applied after discovery was cached.
		in.mapper.Reset()
		m, err = in.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return fmt.Errorf("apply %s %s: %w", gvk.Kind, u.GetName(), err)
	}
	// Typed objects converted to maps carry creationTimestamp: null and
	// an empty status; neither is the rig's to apply.
	u.SetManagedFields(nil)
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	data, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = in.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = in.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	force := true
	if _, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
		return fmt.Errorf("apply %s %s: %w", gvk.Kind, objectKey(u), err)
	}
	return nil
}

func objectKey(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

// applyTyped applies a typed object (TypeMeta filled in).
func (in *installer) applyTyped(ctx context.Context, obj runtime.Object) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	return in.apply(ctx, &unstructured.Unstructured{Object: m})
}

// applyFile applies the documents of a file that keep returns true for,
// after edit (which may be nil) has changed them, and returns their names.
func (in *installer) applyFile(ctx context.Context, path string, keep func(*unstructured.Unstructured) bool, edit func(*unstructured.Unstructured) error) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	docs, err := splitYAML(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var names []string
	for _, doc := range docs {
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(bytes.TrimSpace(js)) == 0 || string(js) == "null" {
			continue
		}
		// UnmarshalJSON keeps integers int64, as the API machinery expects.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if keep != nil && !keep(u) {
			continue
		}
		if edit != nil {
			if err := edit(u); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		if err := in.apply(ctx, u); err != nil {
			return nil, err
		}
		names = append(names, u.GetName())
	}
	return names, nil
}

// applyDir applies applyFile to every YAML file of dir but kustomize's.
func (in *installer) applyDir(ctx context.Context, dir string, keep func(*unstructured.Unstructured) bool) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		n, err := in.applyFile(ctx, f, keep, nil)
		if err != nil {
			return nil, err
		}
		names = append(names, n...)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no manifest in %s", dir)
	}
	return names, nil
}

func splitYAML(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}

func (in *installer) waitCRDsEstablished(ctx context.Context, names []string) error {
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	return wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			u, err := in.dyn.Resource(gvr).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			ok := false
			for _, c := range conds {
				m, _ := c.(map[string]any)
				ok = ok || (m["type"] == "Established" && m["status"] == "True")
			}
			if !ok {
				return false, nil
			}
		}
		in.mapper.Reset()
		return true, nil
	})
}

// namespace creates the operator's namespace, from the module's own
// Namespace object when it ships one (KServe's carries labels its pod
// webhook selects on), renamed to the namespace chosen.
func (in *installer) namespace(ctx context.Context, spec operatorSpec, moduleDir string) error {
	if spec.namespaceDoc != "" {
		names, err := in.applyFile(ctx, filepath.Join(moduleDir, spec.namespaceDoc), func(u *unstructured.Unstructured) bool {
			return u.GetKind() == "Namespace"
		}, func(u *unstructured.Unstructured) error {
			u.SetName(spec.namespace)
			return nil
		})
		if err != nil {
			return err
		}
		if len(names) == 1 {
			return nil
		}
	}
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: spec.namespace}}
	return in.applyTyped(ctx, ns)
}

// controllerDeployment creates the operator's Deployment under its real
// name, namespace and labels, so the cluster shows the controller pod
// Running as on a real install; kwok runs the pod, the rig the process.
func (in *installer) controllerDeployment(ctx context.Context, spec operatorSpec) error {
	sa := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: spec.serviceAccount, Namespace: spec.namespace}}
	if err := in.applyTyped(ctx, sa); err != nil {
		return err
	}
	one := int32(1)
	note := map[string]string{standInAnnotation: "the aiconform rig runs this controller as a local process (" + spec.binary + "); kwok runs this pod"}
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: spec.deployment, Namespace: spec.namespace, Labels: spec.labels, Annotations: note},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: spec.selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: spec.labels, Annotations: note},
				Spec: corev1.PodSpec{
					ServiceAccountName: spec.serviceAccount,
					// The process runs on this machine: its leader identity
					// starts with this hostname, as a process in the pod
					// would start it with the pod's.
					Hostname:   PodHostname(),
					Containers: []corev1.Container{{Name: spec.container, Image: spec.image}},
				},
			},
		},
	}
	if err := in.applyTyped(ctx, d); err != nil {
		return err
	}
	return WaitDeploymentAvailable(ctx, in.kube, spec.namespace, spec.deployment)
}

// WaitDeploymentAvailable waits until a Deployment reports Available=True
// for its current generation.
func WaitDeploymentAvailable(ctx context.Context, cs kubernetes.Interface, namespace, name string) error {
	var last string
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		if d.Status.ObservedGeneration < d.Generation {
			last = "generation not yet observed"
			return false, nil
		}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable {
				last = fmt.Sprintf("Available=%s %s", c.Status, c.Message)
				return c.Status == corev1.ConditionTrue && d.Status.ReadyReplicas >= *d.Spec.Replicas, nil
			}
		}
		last = "no Available condition"
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("Deployment %s/%s available: %w (last: %s)", namespace, name, err, last)
	}
	return nil
}

// apiserverRunning reports whether this rig's kube-apiserver still runs:
// without it there are no webhook configurations left to remove.
func (c *Cluster) apiserverRunning() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		if p.Name == "kube-apiserver" {
			return p.running()
		}
	}
	return false
}
