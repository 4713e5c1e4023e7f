package cluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

const twoContexts = `apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster: {server: "https://127.0.0.1:6443"}
- name: prod
  cluster: {server: "https://127.0.0.1:7443"}
users:
- name: admin
  user: {token: not-a-secret}
contexts:
- name: dev
  context: {cluster: dev, user: admin, namespace: team-a}
- name: prod
  context: {cluster: prod, user: admin}
`

func kubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(p, []byte(twoContexts), 0o600))
	return p
}

func parsed(t *testing.T, args ...string) *Flags {
	t.Helper()
	f := NewFlags()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f.AddFlags(fs)
	require.NoError(t, fs.Parse(args))
	return f
}

func TestFlagsReadTheKubeconfigAsKubectl(t *testing.T) {
	path := kubeconfig(t)

	f := parsed(t, "--kubeconfig", path)
	cfg, err := f.ToRESTConfig()
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:6443", cfg.Host, "the current context")
	name, err := f.ContextName()
	require.NoError(t, err)
	assert.Equal(t, "dev", name)

	f = parsed(t, "--kubeconfig", path, "--context", "prod", "--as", "auditor", "--as-group", "g1", "--as-group", "g2",
		"--as-user-extra", "scope=a", "--as-user-extra", "scope=b", "--as-user-extra", "malformed", "--request-timeout", "5s", "-n", "ns1")
	cfg, err = f.ToRESTConfig()
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:7443", cfg.Host)
	assert.Equal(t, "auditor", cfg.Impersonate.UserName)
	assert.Equal(t, []string{"g1", "g2"}, cfg.Impersonate.Groups)
	assert.Equal(t, map[string][]string{"scope": {"a", "b"}}, cfg.Impersonate.Extra)
	assert.Equal(t, "5s", cfg.Timeout.String())
	assert.Equal(t, "ns1", f.Overrides.Context.Namespace)
	name, err = f.ContextName()
	require.NoError(t, err)
	assert.Equal(t, "prod", name)
	assert.Nil(t, f.Overrides.AuthInfo.ImpersonateUserExtra, "the extras are the config's, not written back into the flags")

	f = parsed(t, "--kubeconfig", path, "-s", "https://127.0.0.1:9443")
	cfg, err = f.ToRESTConfig()
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:9443", cfg.Host, "-s is --server, as in kubectl")
}

func TestFlagsForContextLeavesTheOriginal(t *testing.T) {
	f := parsed(t, "--kubeconfig", kubeconfig(t), "--as", "auditor")
	prod := f.ForContext("prod")
	cfg, err := prod.ToRESTConfig()
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:7443", cfg.Host)
	assert.Equal(t, "auditor", cfg.Impersonate.UserName, "the other flags are kept")
	cfg, err = f.ToRESTConfig()
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:6443", cfg.Host)
}

func TestFlagsWithoutKubeconfigFallBackAsKubectl(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent"))
	t.Setenv("HOME", t.TempDir())
	cfg, err := NewFlags().ToRESTConfig()
	require.NoError(t, err)
	assert.Equal(t, "http://localhost:8080", cfg.Host)
}

func TestFlagsUnknownContext(t *testing.T) {
	_, err := parsed(t, "--kubeconfig", kubeconfig(t), "--context", "nope").ToRESTConfig()
	assert.ErrorContains(t, err, `context "nope" does not exist`)
}

func TestFlagsWrapConfigFn(t *testing.T) {
	f := parsed(t, "--kubeconfig", kubeconfig(t))
	f.WrapConfigFn = func(c *rest.Config) *rest.Config {
		c.UserAgent = "wrapped " + c.Host
		return c
	}
	cfg, err := f.ToRESTConfig()
	require.NoError(t, err)
	assert.Equal(t, "wrapped https://127.0.0.1:6443", cfg.UserAgent)
	cfg, err = f.ForContext("prod").ToRESTConfig()
	require.NoError(t, err)
	assert.Equal(t, "wrapped https://127.0.0.1:7443", cfg.UserAgent, "a context's flags keep it")
	nope := parsed(t, "--kubeconfig", kubeconfig(t), "--context", "nope")
	nope.WrapConfigFn = func(c *rest.Config) *rest.Config {
		t.Error("a config that did not load was wrapped")
		return c
	}
	_, err = nope.ToRESTConfig()
	assert.Error(t, err)
}
