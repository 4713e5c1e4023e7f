package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"
)

// pageSize is kubectl's default chunk size: large lists come in pages so
// neither side holds a whole 50,000-pod answer in one response.
const pageSize = 500

// Live reads an API server. Built-in kinds are read in protobuf, masked on
// the wire (pageReader); custom resources through the dynamic client;
// Tables through a plain REST client with kubectl's Accept header.
type Live struct {
	Kube          kubernetes.Interface
	APIExtensions apiextensionsclient.Interface
	Dynamic       dynamic.Interface
	// Tables fetches the server's Table rendering of a query. Nil where
	// the clients are fakes, which cannot render Tables.
	Tables func(ctx context.Context, q Query) (*metav1.Table, error)
	// Get fetches a path of the API server as `kubectl get --raw` does.
	// Nil where the clients are fakes.
	Get func(ctx context.Context, path string) ([]byte, error)
	// Context and Server say which cluster this is, for the report header.
	Context string
	Server  string
	Now     func() time.Time
	// pages reads LISTs of built-in kinds, masked on the wire. Nil where
	// the clients are fakes, whose typed clients are read instead.
	pages *pageReader
}

// NewLiveFor is NewLive for a kubeconfig file's current context, as user
// as when as is set (as --as does): what tools and tests that start their
// own API server need.
func NewLiveFor(kubeconfig, as string, now func() time.Time) (*Live, error) {
	return NewLive(FlagsFor(kubeconfig, as), now)
}

// NewLive builds the clients from kubectl's flags (kubeconfig, context,
// impersonation, timeouts).
func NewLive(flags *Flags, now func() time.Time) (*Live, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	contextName, err := flags.ContextName()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	// No client-side rate limit: the reads are already bounded (each query
	// once, a few checks at a time, a few per-node LISTs at a time), and a
	// token bucket only made a 500-GPU-node cluster wait 8 s for nothing.
	// The server's priority and fairness still protects it.
	cfg.QPS = -1
	cfg.UserAgent = "aiconform"

	proto := rest.CopyConfig(cfg)
	proto.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	proto.ContentType = "application/vnd.kubernetes.protobuf"
	kube, err := kubernetes.NewForConfig(proto)
	if err != nil {
		return nil, err
	}
	ext, err := apiextensionsclient.NewForConfig(proto)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	tables := &tableClient{cfg: cfg, clients: map[schema.GroupVersion]*rest.RESTClient{}}
	plain, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	get := func(ctx context.Context, path string) ([]byte, error) {
		// kubectl's Accept: a proxied exporter then answers in its text
		// format, as it does for kubectl.
		res := plain.Discovery().RESTClient().Get().RequestURI(path).SetHeader("Accept", "application/json, */*").Do(ctx)
		body, err := res.Raw()
		if err != nil {
			// Error, not Raw's error: it reads the server's Status from
			// the body, as kubectl get --raw does, so that a failed
			// proxy says why ("error trying to reach service: ...")
			// rather than its status code's generic sentence.
			err = res.Error()
		}
		return body, err
	}
	return &Live{
		Kube: kube, APIExtensions: ext, Dynamic: dyn, Tables: tables.get, Get: get, pages: &pageReader{client: kube.CoreV1().RESTClient()},
		Context: contextName, Server: cfg.Host, Now: now,
	}, nil
}

// Info implements Source: one GET of the server version and one of
// namespace kube-system, whose UID is the cluster's identity.
func (l *Live) Info(ctx context.Context) (Info, error) {
	info := Info{Live: true, Context: l.Context, Server: l.Server}
	v, err := l.Kube.Discovery().ServerVersion()
	if err != nil {
		return info, fmt.Errorf("server version: %w", err)
	}
	info.ServerVersion = v.GitVersion
	ns, err := l.Kube.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		return info, fmt.Errorf("get namespace kube-system: %w", err)
	}
	info.ClusterID = string(ns.UID)
	return info, nil
}

// Raw implements Source: one GET of path.
func (l *Live) Raw(ctx context.Context, path string) ([]byte, time.Time, error) {
	if l.Get == nil {
		return nil, l.Now(), fmt.Errorf("GET %s: this client cannot make raw requests", path)
	}
	body, err := l.Get(ctx, path)
	return body, l.Now(), err
}

// List implements Source, page by page.
func (l *Live) List(ctx context.Context, q Query) ([]runtime.Object, time.Time, error) {
	page := l.pageFunc(q)
	var objs []runtime.Object
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return page(ctx, opts)
	})
	p.PageSize = pageSize
	opts := metav1.ListOptions{LabelSelector: q.LabelSelector, FieldSelector: q.FieldSelector}
	err := p.EachListItem(ctx, opts, func(o runtime.Object) error {
		settle(q, o)
		objs = append(objs, o)
		return nil
	})
	if err != nil {
		return nil, l.Now(), fmt.Errorf("list %s: %w", q, err)
	}
	return objs, l.Now(), nil
}

// packList reads a list as the cache keeps it (packedList), masked on the
// wire and never decoded: the Cache asks for it so when its source can
// (packer). Only a Live reading protobuf can, and only what packedKind
// says is kept packed.
func (l *Live) packList(ctx context.Context, q Query) (*packedList, time.Time, error) {
	newObject := packedKind(q)
	if l.pages == nil || newObject == nil {
		return nil, l.Now(), errNotPacked
	}
	pk := &packedList{newObject: newObject}
	opts := metav1.ListOptions{LabelSelector: q.LabelSelector, FieldSelector: q.FieldSelector, Limit: pageSize}
	for {
		cont, err := l.pages.packPage(ctx, q, opts, pk)
		if err != nil {
			return nil, l.Now(), fmt.Errorf("list %s: %w", q, err)
		}
		if cont == "" {
			return pk, l.Now(), nil
		}
		opts.Continue = cont
	}
}

// settle drops of an object listed by q what no check reads of it, as
// each item arrives, as a recording drops them: on a large cluster managed
// fields, CRD schemas and the specs of pods and pod templates are much of
// what a run would otherwise hold. A page read in protobuf comes masked
// (maskFor), so that there is little left to drop.
func settle(q Query, o runtime.Object) {
	if q.Whole {
		trimMeta(o)
		return
	}
	trim(o)
	switch {
	case q.nodePods():
		slimPod(o)
	case q.acrossCluster() && (q.Resource.GVR == Deployments.GVR || q.Resource.GVR == StatefulSets.GVR):
		slimWorkload(o)
	}
}

// pageFunc reads built-in kinds in protobuf, masked (pageReader), or by
// their typed clients where those are fakes; anything else is a custom
// resource.
func (l *Live) pageFunc(q Query) func(context.Context, metav1.ListOptions) (runtime.Object, error) {
	if l.pages != nil && newTypedList(q) != nil {
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list := newTypedList(q)
			return list, l.pages.page(ctx, q, list, o)
		}
	}
	ns := q.Namespace
	switch q.Resource.GVR {
	case Nodes.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.CoreV1().Nodes().List(ctx, o)
		}
	case Namespaces.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.CoreV1().Namespaces().List(ctx, o)
		}
	case Pods.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.CoreV1().Pods(ns).List(ctx, o)
		}
	case ConfigMaps.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.CoreV1().ConfigMaps(ns).List(ctx, o)
		}
	case Services.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.CoreV1().Services(ns).List(ctx, o)
		}
	case Deployments.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.AppsV1().Deployments(ns).List(ctx, o)
		}
	case StatefulSets.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.AppsV1().StatefulSets(ns).List(ctx, o)
		}
	case HorizontalPodAutoscalers.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, o)
		}
	case ReplicaSets.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.AppsV1().ReplicaSets(ns).List(ctx, o)
		}
	case Jobs.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.BatchV1().Jobs(ns).List(ctx, o)
		}
	case EndpointSlices.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.DiscoveryV1().EndpointSlices(ns).List(ctx, o)
		}
	case DaemonSets.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.AppsV1().DaemonSets(ns).List(ctx, o)
		}
	case Leases.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.CoordinationV1().Leases(ns).List(ctx, o)
		}
	case Events.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.CoreV1().Events(ns).List(ctx, o)
		}
	case DeviceClasses.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.ResourceV1().DeviceClasses().List(ctx, o)
		}
	case ResourceSlices.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.ResourceV1().ResourceSlices().List(ctx, o)
		}
	case ResourceClaims.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.ResourceV1().ResourceClaims(ns).List(ctx, o)
		}
	case ResourceClaimTemplates.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.ResourceV1().ResourceClaimTemplates(ns).List(ctx, o)
		}
	case RuntimeClasses.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.NodeV1().RuntimeClasses().List(ctx, o)
		}
	case CRDs.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.APIExtensions.ApiextensionsV1().CustomResourceDefinitions().List(ctx, o)
		}
	case ValidatingWebhookConfigurations.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, o)
		}
	case MutatingWebhookConfigurations.GVR:
		return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return l.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, o)
		}
	}
	return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return l.Dynamic.Resource(q.Resource.GVR).Namespace(ns).List(ctx, o)
	}
}

// Table implements Source.
func (l *Live) Table(ctx context.Context, q Query) (*metav1.Table, time.Time, error) {
	if l.Tables == nil {
		return nil, l.Now(), fmt.Errorf("table of %s: this client cannot render server-side Tables", q)
	}
	t, err := l.Tables(ctx, q)
	if err != nil {
		return nil, l.Now(), fmt.Errorf("list %s as a table: %w", q, err)
	}
	return t, l.Now(), nil
}

// tableClient keeps one REST client per API group version.
type tableClient struct {
	cfg     *rest.Config
	mu      sync.Mutex
	clients map[schema.GroupVersion]*rest.RESTClient
}

func (tc *tableClient) client(gv schema.GroupVersion) (*rest.RESTClient, error) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if c, ok := tc.clients[gv]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(tc.cfg)
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	if gv.Group == "" {
		cfg.APIPath = "/api"
	}
	cfg.NegotiatedSerializer = codecs.WithoutConversion()
	c, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, err
	}
	tc.clients[gv] = c
	return c, nil
}

// get lists q as a Table, following continue tokens as kubectl does, and
// joins the pages' rows.
func (tc *tableClient) get(ctx context.Context, q Query) (*metav1.Table, error) {
	c, err := tc.client(q.Resource.GVR.GroupVersion())
	if err != nil {
		return nil, err
	}
	var all *metav1.Table
	cont := ""
	for {
		req := c.Get().Resource(q.Resource.GVR.Resource).SetHeader("Accept", tableAccept).
			Param("limit", fmt.Sprint(pageSize))
		if q.Resource.Namespaced && q.Namespace != "" {
			req = req.Namespace(q.Namespace)
		}
		if q.LabelSelector != "" {
			req = req.Param("labelSelector", q.LabelSelector)
		}
		if q.FieldSelector != "" {
			req = req.Param("fieldSelector", q.FieldSelector)
		}
		if cont != "" {
			req = req.Param("continue", cont)
		}
		body, err := req.Do(ctx).Raw()
		if err != nil {
			return nil, statusError(body, err)
		}
		// Each page's rows are decoded (and their managed fields
		// dropped) as the page arrives, so that a 2,000-node Table is
		// never held as raw JSON whole.
		t, err := parseTable(body)
		if err != nil {
			return nil, err
		}
		if all == nil {
			all = t
		} else {
			all.Rows = append(all.Rows, t.Rows...)
		}
		cont = t.Continue
		if cont == "" {
			break
		}
	}
	all.Continue = ""
	return all, nil
}

// statusError prefers the Status the server sent to the generic error the
// REST client makes of a failed raw request ("unknown (get nodes)"): its
// message names the user, verb and resource that were refused.
func statusError(body []byte, err error) error {
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Message != "" {
		return &apierrors.StatusError{ErrStatus: st}
	}
	return err
}
