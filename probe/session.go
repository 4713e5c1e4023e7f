// Package probe makes the only writes aiconform does, and only when the user
// asks for them with --probe: server-side dry-run creates, which store
// nothing, and canary objects in a namespace of the run's own (or, for a
// cluster-scoped kind, named after the run). Everything it creates carries
// the run's label, and is deleted however the run ends.
package probe

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// RunLabel marks everything a probe creates with the run's id, so that
// `aiconform cleanup` finds leftovers of a run that was killed.
const RunLabel = "aiconform.io/run"

// NamespacePrefix starts the name of every probe namespace.
const NamespacePrefix = "aiconform-probe-"

// ErrClosed is returned for writes asked for after the session closed: a
// check the runner left behind must not create what cleanup already missed.
var ErrClosed = errors.New("probe session is closed: the run is cleaning up")

// DefaultImage is what a probe's own pods run: a container that does
// nothing until it is stopped, small, and in every Kubernetes registry.
const DefaultImage = "registry.k8s.io/pause:3.10"

// DefaultShellImage is what a probe runs where a pod must print what it
// sees: a POSIX shell and ls, small, on Docker Hub's library.
const DefaultShellImage = "busybox:1.37"

// Namespaces is the core namespace resource.
var Namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// NewRunID names a run: its UTC start to the second, then random hex, so
// that ids sort by time and two runs in the same second differ.
func NewRunID(now time.Time) string {
	b := make([]byte, 2)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail on supported platforms
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// Session is one run's probes. It is safe for concurrent use by checks.
type Session struct {
	// RunID labels everything the session creates.
	RunID string
	// Namespace is the run's own namespace, NamespacePrefix + RunID.
	Namespace string
	// Timeout bounds how long a canary may take to be reconciled, and then
	// collected once deleted.
	Timeout time.Duration
	// Image runs the pods a probe makes itself (the gang probe's members):
	// DefaultImage, or its copy in a registry an air-gapped cluster reaches.
	Image string
	// ShellImage runs the probe pods that print what they see (the device
	// isolation probe's): DefaultShellImage, or its copy in a registry an
	// air-gapped cluster reaches.
	ShellImage string
	// LoadImage, when set, runs the accelerator load probe's pod in place
	// of its vendor's image (the load program at the same path): a copy
	// in a registry an air-gapped cluster reaches.
	LoadImage string
	// ScaleUp allows the probe that makes the cluster autoscaler add a
	// node, which the user opts into apart from the others.
	ScaleUp bool
	// Metric, when set, is the metric (external, or custom) the HPA probe tries first.
	Metric *Metric
	// Raw reads API paths as `kubectl get --raw` does (discovery documents,
	// aggregated APIs such as external.metrics.k8s.io); nil makes GetRaw
	// fail.
	Raw rest.Interface
	// OnStep, when set, is told of each write as it is sent, as kubectl
	// would name it ("create pods/NAME"): a progress line shows the last
	// one while a probe waits on what it wrote. Called concurrently.
	OnStep func(step string)

	dyn    dynamic.Interface
	mapper meta.RESTMapper

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
	nsDone   bool
	// clusterKinds are the cluster-scoped resources the session created
	// objects of: deleting the namespace does not delete those, Close
	// finds them by the run label.
	clusterKinds []schema.GroupVersionResource
}

// NewSession prepares a session; nothing is written until a check asks.
func NewSession(dyn dynamic.Interface, mapper meta.RESTMapper, runID string, timeout time.Duration) *Session {
	return &Session{RunID: runID, Namespace: NamespacePrefix + runID, Timeout: timeout, Image: DefaultImage, ShellImage: DefaultShellImage, dyn: dyn, mapper: mapper}
}

// begin admits one write, unless the session is closing. The caller must
// call the returned func when the write has returned.
func (s *Session) begin() (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	s.inflight.Add(1)
	return s.inflight.Done, nil
}

// Mapping resolves a kind to its resource, as kubectl does through
// discovery.
func (s *Session) Mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", gvk, err)
	}
	return m, nil
}

// Label sets the run label on obj and clears its namespace: objects go to
// the run's namespace, and the YAML shown in evidence is what was sent. A
// cluster-scoped object has no namespace to keep runs apart, so its name
// gets the run id, which two runs never share.
func (s *Session) Label(obj *unstructured.Unstructured, m *meta.RESTMapping) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[RunLabel] = s.RunID
	obj.SetLabels(labels)
	obj.SetNamespace("")
	if !namespaced(m) {
		obj.SetName(obj.GetName() + "-" + s.RunID)
	}
}

// NamespaceOf is where the session writes objects of m: the run's
// namespace, or "" for a cluster-scoped kind.
func (s *Session) NamespaceOf(m *meta.RESTMapping) string {
	if namespaced(m) {
		return s.Namespace
	}
	return ""
}

func namespaced(m *meta.RESTMapping) bool {
	return m.Scope.Name() == meta.RESTScopeNameNamespace
}

// EnsureNamespace creates the run's namespace the first time it is asked
// for; created is true for that call only.
func (s *Session) EnsureNamespace(ctx context.Context) (created bool, err error) {
	done, err := s.begin()
	if err != nil {
		return false, err
	}
	defer done()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nsDone {
		return false, nil
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(s.Namespace)
	ns.SetLabels(map[string]string{RunLabel: s.RunID})
	if _, err := s.dyn.Resource(Namespaces).Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("create namespace %s: %w", s.Namespace, err)
	}
	s.nsDone = true
	return true, nil
}

// resource is the client of a mapping in the run's namespace.
func (s *Session) resource(m *meta.RESTMapping) dynamic.ResourceInterface {
	r := s.dyn.Resource(m.Resource)
	if namespaced(m) {
		return r.Namespace(s.Namespace)
	}
	return r
}

// DryRun sends obj as a server-side dry-run create into the run's
// namespace: admission runs, webhooks included, and nothing is stored.
func (s *Session) DryRun(ctx context.Context, m *meta.RESTMapping, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	done, err := s.begin()
	if err != nil {
		return nil, err
	}
	defer done()
	s.step("create --dry-run=server", m, obj.GetName())
	return s.resource(m).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
}

// step reports a write to OnStep.
func (s *Session) step(verb string, m *meta.RESTMapping, name string) {
	if s.OnStep == nil {
		return
	}
	if name == "" {
		name = "(generated name)"
	}
	s.OnStep(verb + " " + m.Resource.Resource + "/" + name)
}

// Create stores obj in the run's namespace. A cluster-scoped object's kind
// is remembered before it is sent, so that Close looks for it even when the
// answer is lost.
func (s *Session) Create(ctx context.Context, m *meta.RESTMapping, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	done, err := s.begin()
	if err != nil {
		return nil, err
	}
	defer done()
	if !namespaced(m) {
		s.mu.Lock()
		if !slices.Contains(s.clusterKinds, m.Resource) {
			s.clusterKinds = append(s.clusterKinds, m.Resource)
		}
		s.mu.Unlock()
	}
	s.step("create", m, obj.GetName())
	return s.resource(m).Create(ctx, obj, metav1.CreateOptions{})
}

// Patch merges patch into one object of the run's namespace, as `kubectl
// patch --type merge` does.
func (s *Session) Patch(ctx context.Context, m *meta.RESTMapping, name string, patch []byte) (*unstructured.Unstructured, error) {
	done, err := s.begin()
	if err != nil {
		return nil, err
	}
	defer done()
	s.step("patch", m, name)
	return s.resource(m).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
}

// GetRaw reads an API path (with its query, if any) and returns the body
// as the server sent it, which is what `kubectl get --raw` prints.
func (s *Session) GetRaw(ctx context.Context, uri string) ([]byte, error) {
	if s.Raw == nil {
		return nil, errors.New("this session cannot read raw API paths")
	}
	return s.Raw.Get().RequestURI(uri).DoRaw(ctx)
}

// Logs reads what a container of a pod of the run's namespace printed, as
// `kubectl logs` does, through the API server (which asks the node's
// kubelet): at most limit bytes.
func (s *Session) Logs(ctx context.Context, pod, container string, limit int) (string, error) {
	uri := fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/log?container=%s&limitBytes=%d", s.Namespace, pod, container, limit)
	b, err := s.GetRaw(ctx, uri)
	return string(b), err
}

// Delete deletes one object of the run's namespace. The default
// propagation leaves its children to the garbage collector, which is what a
// canary's deletion is meant to show.
func (s *Session) Delete(ctx context.Context, m *meta.RESTMapping, name string) error {
	s.step("delete", m, name)
	return s.resource(m).Delete(ctx, name, metav1.DeleteOptions{})
}

// Watch follows a resource of the run's namespace (all of it for a
// cluster-scoped one) from resourceVersion on, re-establishing the watch
// when the server closes it, so that no event is missed and none is seen
// twice.
func (s *Session) Watch(ctx context.Context, gvr schema.GroupVersionResource, namespaced bool, resourceVersion string, opts metav1.ListOptions) (watch.Interface, error) {
	var r dynamic.ResourceInterface = s.dyn.Resource(gvr)
	if namespaced {
		r = s.dyn.Resource(gvr).Namespace(s.Namespace)
	}
	lw := &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector, o.FieldSelector = opts.LabelSelector, opts.FieldSelector
			o.AllowWatchBookmarks = true
			return r.Watch(ctx, o)
		},
	}
	return watchtools.NewRetryWatcherWithContext(ctx, resourceVersion, lw)
}

// Close refuses further writes, waits for writes in flight, and deletes
// what the run stored: its cluster-scoped objects, and its namespace with
// everything in it. It returns what it dealt with. It is safe to call more
// than once and from a deferred call after an interrupt: give it a context
// that is not the cancelled one.
func (s *Session) Close(ctx context.Context) ([]Leftover, error) {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	waited := make(chan struct{})
	go func() { s.inflight.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
		// Delete anyway: a create still in flight lands in a namespace that
		// is being deleted, or is refused by it; a cluster-scoped one that
		// lands after this is left for `aiconform cleanup`.
	}
	s.mu.Lock()
	kinds := slices.Clone(s.clusterKinds)
	s.mu.Unlock()
	return Cleanup(ctx, s.dyn, s.RunID, kinds)
}

// Leftover is an object cleanup dealt with: a probe namespace, or a
// cluster-scoped probe object.
type Leftover struct {
	// Resource is how kubectl names the kind: namespace,
	// clusterqueue.kueue.x-k8s.io.
	Resource string
	Name     string
	// Terminating is set when it was already being deleted: cleanup had
	// nothing to ask, and Waiting says what holds it.
	Terminating bool
	Since       time.Time
	// Waiting is what is left before it goes: a namespace controller's
	// word on its content and finalizers, or an object's finalizers, which
	// only the operator that set them removes.
	Waiting string
}

// Cleanup deletes the probe objects of a run (of every run when runID is
// empty), found by label: the objects of the cluster-scoped resources
// given, then the probe namespaces. Deleting a namespace deletes what is in
// it, which is where probes put every namespaced object they store. What is
// already being deleted is reported with what it waits for.
func Cleanup(ctx context.Context, dyn dynamic.Interface, runID string, clusterScoped []schema.GroupVersionResource) ([]Leftover, error) {
	sel := RunLabel
	if runID != "" {
		sel = RunLabel + "=" + runID
	}
	var done []Leftover
	var errs []error
	for _, gvr := range append(slices.Clone(clusterScoped), Namespaces) {
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			errs = append(errs, fmt.Errorf("list %s -l %s: %w", resourceString(gvr), sel, err))
			continue
		}
		for _, obj := range list.Items {
			if gvr == Namespaces && !strings.HasPrefix(obj.GetName(), NamespacePrefix) {
				continue // labelled by hand, not made by a probe
			}
			l := Leftover{Resource: KindString(obj.GroupVersionKind()), Name: obj.GetName()}
			if ts := obj.GetDeletionTimestamp(); ts != nil {
				l.Terminating, l.Since, l.Waiting = true, ts.UTC(), waitingFor(&obj)
				done = append(done, l)
				continue
			}
			err := dyn.Resource(gvr).Delete(ctx, obj.GetName(), metav1.DeleteOptions{})
			switch {
			case err == nil, apierrors.IsNotFound(err):
				done = append(done, l)
			default:
				errs = append(errs, fmt.Errorf("delete %s %s: %w", l.Resource, l.Name, err))
			}
		}
	}
	return done, errors.Join(errs...)
}

// waitingFor reads what a terminating object waits for: a namespace's
// conditions on what is left in it, or the finalizers still set.
func waitingFor(obj *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var msgs []string
	for _, c := range conds {
		m, _ := c.(map[string]any)
		switch m["type"] {
		case "NamespaceFinalizersRemaining", "NamespaceContentRemaining":
			if m["status"] == "True" {
				if msg, _ := m["message"].(string); msg != "" {
					msgs = append(msgs, msg)
				}
			}
		}
	}
	if len(msgs) == 0 && len(obj.GetFinalizers()) > 0 {
		msgs = append(msgs, "finalizers "+strings.Join(obj.GetFinalizers(), ", "))
	}
	return strings.Join(msgs, "; ")
}

// Source is one resource a probe follows.
type Source struct {
	// Tag names the source in each Event.
	Tag string
	GVR schema.GroupVersionResource
	// Namespaced follows the run's namespace; otherwise the whole
	// cluster-scoped resource.
	Namespaced bool
	// Options carry the label and field selectors.
	Options metav1.ListOptions
}

// Event is one watch event and the source it came from.
type Event struct {
	Tag string
	watch.Event
}

// WatchAll follows every source from resourceVersion on, into one channel,
// until stop is called or ctx ends: a probe applies the events of all it
// created in the order it receives them, on one goroutine.
func (s *Session) WatchAll(ctx context.Context, resourceVersion string, sources []Source) (events <-chan Event, stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan Event)
	for _, src := range sources {
		wi, err := s.Watch(ctx, src.GVR, src.Namespaced, resourceVersion, src.Options)
		if err != nil {
			cancel()
			return nil, nil, fmt.Errorf("watch %s: %w", src.GVR.Resource, err)
		}
		go func() {
			defer wi.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-wi.ResultChan():
					if !ok {
						return
					}
					select {
					case out <- Event{src.Tag, ev}:
					case <-ctx.Done():
						return
					}
				}
			}
		}()
	}
	return out, cancel, nil
}

// Phase is one step of a probe: Until, within the session's Timeout. It
// says whether done came to hold in time, and returns the run's own
// context error when that ended it.
func (s *Session) Phase(ctx context.Context, events <-chan Event, apply func(Event), done func() bool) (bool, error) {
	pctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	ok := Until(pctx, events, apply, done)
	return ok, ctx.Err()
}

// Until hands events to apply, one at a time, until done holds (true) or
// ctx ends (false).
func Until(ctx context.Context, events <-chan Event, apply func(Event), done func() bool) bool {
	for !done() {
		select {
		case <-ctx.Done():
			return false
		case e := <-events:
			apply(e)
		}
	}
	return true
}
