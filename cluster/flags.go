package cluster

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Flags are kubectl's flags for reaching a cluster (--kubeconfig,
// --context, --as, --request-timeout, ...), read the way kubectl reads
// them: the kubeconfig files of KUBECONFIG or ~/.kube/config, the flags
// overriding their fields. They are bound with client-go's clientcmd, not
// with kubectl's own genericclioptions: that package brings kubectl's
// resource builder and kustomize into the binary, about 27 MiB of every
// run's memory before anything is read.
type Flags struct {
	Loading   *clientcmd.ClientConfigLoadingRules
	Overrides clientcmd.ConfigOverrides
	// UserExtra are --as-user-extra's KEY=VALUE pairs, which clientcmd
	// has no flag for.
	UserExtra []string
	// WrapConfigFn, when set, changes every client configuration the
	// flags make, as kubectl's own flags let a program do: one that runs
	// the checks in its own process can see their requests (bench/live
	// records them so).
	WrapConfigFn func(*rest.Config) *rest.Config
}

// NewFlags are the flags at their defaults: no file named, nothing
// overridden, and http://localhost:8080 when no kubeconfig is found at
// all, as kubectl falls back to.
func NewFlags() *Flags {
	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	loading.DefaultClientConfig = &clientcmd.DefaultClientConfig
	return &Flags{Loading: loading, Overrides: clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults}}
}

// FlagsFor are the flags of one kubeconfig file, as user as when as is
// set (as --as does): what tools and tests that start their own API server
// need.
func FlagsFor(kubeconfig, as string) *Flags {
	f := NewFlags()
	f.Loading.ExplicitPath = kubeconfig
	f.Overrides.AuthInfo.Impersonate = as
	return f
}

// AddFlags registers kubectl's names for them.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Loading.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "", "Path to the kubeconfig file to use for CLI requests.")
	names := clientcmd.RecommendedConfigOverrideFlags("")
	// kubectl's -s; and no basic authentication, which kubectl no longer
	// offers either.
	names.ClusterOverrideFlags.APIServer.ShortName = "s"
	names.AuthOverrideFlags.Username.LongName, names.AuthOverrideFlags.Password.LongName = "", ""
	clientcmd.BindOverrideFlags(&f.Overrides, fs, names)
	fs.StringArrayVar(&f.UserExtra, "as-user-extra", nil, "User extras to impersonate for the operation, this flag can be repeated to "+
		"specify multiple values for the same key.")
}

// ForContext is a copy of f for the kubeconfig context name, as --context
// name would make it.
func (f *Flags) ForContext(name string) *Flags {
	c := *f
	loading := *f.Loading
	c.Loading = &loading
	c.Overrides.CurrentContext = name
	return &c
}

// ClientConfig is the kubeconfig the flags make, read when first asked.
func (f *Flags) ClientConfig() clientcmd.ClientConfig {
	overrides := f.Overrides
	var extra map[string][]string
	for _, kv := range f.UserExtra {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			// kubectl passes over a pair without "=" too.
			continue
		}
		if extra == nil {
			// A map of this call's own: f.Overrides is left as it was.
			extra = map[string][]string{}
			for key, vs := range overrides.AuthInfo.ImpersonateUserExtra {
				extra[key] = slices.Clone(vs)
			}
			overrides.AuthInfo.ImpersonateUserExtra = extra
		}
		extra[k] = append(extra[k], v)
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(f.Loading, &overrides)
}

// ToRESTConfig is the client configuration of the flags' context.
func (f *Flags) ToRESTConfig() (*rest.Config, error) {
	cfg, err := f.ClientConfig().ClientConfig()
	if err != nil || f.WrapConfigFn == nil {
		return cfg, err
	}
	return f.WrapConfigFn(cfg), nil
}

// RawConfig is the kubeconfig as merged from its files, before the flags'
// overrides: its contexts, and the current one.
func (f *Flags) RawConfig() (clientcmdapi.Config, error) {
	return f.ClientConfig().RawConfig()
}

// ContextName is the context the flags select: --context, else the
// kubeconfig's current context.
func (f *Flags) ContextName() (string, error) {
	if f.Overrides.CurrentContext != "" {
		return f.Overrides.CurrentContext, nil
	}
	raw, err := f.RawConfig()
	if err != nil {
		return "", err
	}
	return raw.CurrentContext, nil
}

// ToDiscoveryClient is a discovery client of the flags' cluster that keeps
// what it learns in memory for the run. kubectl also keeps it on disk
// between runs; a run of aiconform discovers once, and only to write.
func (f *Flags) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return memory.NewMemCacheClient(dc), nil
}

// ToRESTMapper maps kinds to the resources the cluster serves them as,
// discovering them when first asked.
func (f *Flags) ToRESTMapper() (meta.RESTMapper, error) {
	dc, err := f.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(dc), nil
}
