package submission

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKeysRoundTrip(t *testing.T) {
	pub, priv := newKey(t)
	privPEM, err := MarshalPrivateKey(priv)
	require.NoError(t, err)
	pubPEM, err := MarshalPublicKey(pub)
	require.NoError(t, err)
	assert.Contains(t, string(privPEM), "-----BEGIN PRIVATE KEY-----")
	assert.Contains(t, string(pubPEM), "-----BEGIN PUBLIC KEY-----")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "k.pem"), privPEM, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "k.pub.pem"), pubPEM, 0o644))
	gotPriv, err := ReadPrivateKey(filepath.Join(dir, "k.pem"))
	require.NoError(t, err)
	assert.True(t, priv.Equal(gotPriv))
	gotPub, err := ReadPublicKey(filepath.Join(dir, "k.pub.pem"))
	require.NoError(t, err)
	assert.True(t, pub.Equal(gotPub))

	_, err = ReadPrivateKey(filepath.Join(dir, "absent.pem"))
	assert.ErrorContains(t, err, "absent.pem")
}

func pemOf(t *testing.T, typ string, der []byte) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func TestKeysRefused(t *testing.T) {
	pub, priv := newKey(t)
	privPEM, err := MarshalPrivateKey(priv)
	require.NoError(t, err)
	pubPEM, err := MarshalPublicKey(pub)
	require.NoError(t, err)

	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	rsaPKCS8, err := x509.MarshalPKCS8PrivateKey(rsaKey)
	require.NoError(t, err)
	rsaPKIX, err := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	require.NoError(t, err)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ecPKCS8, err := x509.MarshalPKCS8PrivateKey(ecKey)
	require.NoError(t, err)
	ecSEC1, err := x509.MarshalECPrivateKey(ecKey)
	require.NoError(t, err)

	tests := []struct {
		name    string
		public  bool // parse as a public key, else as a private key
		data    []byte
		wantErr string
	}{
		{"RSA in PKCS#8", false, pemOf(t, "PRIVATE KEY", rsaPKCS8), "k.pem: an RSA private key; want ed25519"},
		{"RSA in PKCS#1", false, pemOf(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)), `k.pem holds RSA PRIVATE KEY, not a "PRIVATE KEY" block`},
		{"ECDSA in PKCS#8", false, pemOf(t, "PRIVATE KEY", ecPKCS8), "k.pem: an ECDSA private key; want ed25519"},
		{"ECDSA in SEC 1", false, pemOf(t, "EC PRIVATE KEY", ecSEC1), "k.pem holds EC PRIVATE KEY"},
		{"RSA public key", true, pemOf(t, "PUBLIC KEY", rsaPKIX), "k.pem: an RSA public key; want ed25519"},
		{"the public key to sign", false, pubPEM, "this is a public key, signing needs the private key"},
		{"the private key to verify", true, privPEM, "this is a private key, verifying takes the public key"},
		{"an encrypted key", false, pemOf(t, "ENCRYPTED PRIVATE KEY", []byte{1}), "encrypted keys are not supported"},
		{"an OpenSSH key", false, pemOf(t, "OPENSSH PRIVATE KEY", []byte{1}), "OpenSSH keys are not supported"},
		{"not PEM", false, []byte("ssh-ed25519 AAAA"), `k.pem: no PEM block; want a "PRIVATE KEY" block`},
		{"a corrupt block", false, pemOf(t, "PRIVATE KEY", []byte{1, 2, 3}), "k.pem: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.public {
				_, err = ParsePublicKey("k.pem", tt.data)
			} else {
				_, err = ParsePrivateKey("k.pem", tt.data)
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}
