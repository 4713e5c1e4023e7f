package rig

import (
	"crypto/tls"
	"crypto/x509"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPKI(t *testing.T) {
	p, err := newPKI()
	require.NoError(t, err)
	dir := t.TempDir()
	files, err := p.write(dir)
	require.NoError(t, err)

	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(p.ca.certPEM))

	t.Run("apiserver serves 127.0.0.1 and localhost", func(t *testing.T) {
		pair, err := tls.LoadX509KeyPair(files.apiserverCert, files.apiserverKey)
		require.NoError(t, err)
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		require.NoError(t, err)
		for _, name := range []string{"127.0.0.1", "localhost", "kubernetes.default.svc"} {
			_, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots})
			assert.NoError(t, err, name)
		}
	})

	t.Run("client identities", func(t *testing.T) {
		for _, tt := range []struct {
			kp     *keyPair
			user   string
			groups []string
		}{
			{p.admin, "aiconform-rig-admin", []string{"system:masters"}},
			{p.kcm, "system:kube-controller-manager", nil},
			{p.scheduler, "system:kube-scheduler", nil},
		} {
			_, err := tt.kp.cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
			assert.NoError(t, err, tt.user)
			assert.Equal(t, tt.user, tt.kp.cert.Subject.CommonName)
			assert.Equal(t, tt.groups, tt.kp.cert.Subject.Organization)
		}
	})

	t.Run("serving certs from the CA on disk", func(t *testing.T) {
		c := &Cluster{dir: dir}
		certPEM, keyPEM, err := c.ServingCert("webhook.example")
		require.NoError(t, err)
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		require.NoError(t, err)
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		require.NoError(t, err)
		for _, name := range []string{"127.0.0.1", "webhook.example"} {
			_, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots})
			assert.NoError(t, err, name)
		}
	})
}
