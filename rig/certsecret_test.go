package rig

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Secret must pass the checks an operator's cert-controller makes
// before it keeps it (CA valid for its CA name, serving certificate for the
// Service's DNS name, 90 days ahead), and serve the rig on 127.0.0.1;
// the CA key must parse as PKCS #1, or the CA is never injected.
func TestCertSecretIsKept(t *testing.T) {
	s := &certSecret{name: "w-cert", caName: "w-ca", service: "w-svc"}
	secret, err := s.make("w-system")
	require.NoError(t, err)
	assert.Equal(t, "w-system", secret.Namespace)
	assert.Equal(t, "w-cert", secret.Name)

	parse := func(key string) *x509.Certificate {
		b, _ := pem.Decode(secret.Data[key])
		require.NotNil(t, b, key)
		c, err := x509.ParseCertificate(b.Bytes)
		require.NoError(t, err, key)
		return c
	}
	ca, srv := parse("ca.crt"), parse("tls.crt")
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	ahead := time.Now().Add(90 * 24 * time.Hour)
	_, err = ca.Verify(x509.VerifyOptions{DNSName: "w-ca", Roots: roots, CurrentTime: ahead})
	assert.NoError(t, err, "the CA, checked by its name")
	for _, host := range []string{"w-svc.w-system.svc", "127.0.0.1"} {
		_, err = srv.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: ahead})
		assert.NoError(t, err, "the serving certificate for %s", host)
	}
	_, err = tls.X509KeyPair(secret.Data["tls.crt"], secret.Data["tls.key"])
	assert.NoError(t, err)
	_, err = tls.X509KeyPair(secret.Data["ca.crt"], secret.Data["ca.key"])
	assert.NoError(t, err)
	kb, _ := pem.Decode(secret.Data["ca.key"])
	require.NotNil(t, kb)
	_, err = x509.ParsePKCS1PrivateKey(kb.Bytes)
	assert.NoError(t, err, "the CA key in PKCS #1")
}
