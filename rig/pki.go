package rig

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certValidity is a year: webhook caBundles made from the rig's CA must not
// trip aiconform's 30-day expiry warning, which would hide what the e2e
// tests mean to show. The keys never leave the rig's directory.
const certValidity = 365 * 24 * time.Hour

// keyPair is a certificate and its private key, both parsed and PEM-encoded.
type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

// pki holds every credential the control plane needs. It is generated fresh
// for each rig: nothing is reused across runs, so a leaked rig directory
// grants nothing beyond that rig's lifetime.
type pki struct {
	ca         *keyPair // signs serving and client certificates; kcm signs CSRs with it too
	apiserver  *keyPair // serving cert for 127.0.0.1 / localhost
	admin      *keyPair // system:masters, for tests and kubectl
	kcm        *keyPair
	scheduler  *keyPair
	kwok       *keyPair
	frontProxy *keyPair // CA for the aggregation layer's request-header authn
	proxyCl    *keyPair // client cert the apiserver presents to aggregated APIs
	kubeletCl  *keyPair // client cert the apiserver presents to real nodes' kubelets
	saKey      *rsa.PrivateKey
}

// newPKI makes all the certificates. ECDSA P-256 keeps generation well
// under a second; the service-account key is RSA because that is what
// every token consumer expects by default.
func newPKI() (*pki, error) {
	p := &pki{}
	var err error
	if p.ca, err = newCA("aiconform-rig-ca"); err != nil {
		return nil, fmt.Errorf("cluster CA: %w", err)
	}
	if p.frontProxy, err = newCA("aiconform-rig-front-proxy-ca"); err != nil {
		return nil, fmt.Errorf("front-proxy CA: %w", err)
	}
	p.apiserver, err = p.ca.issue(certSpec{
		cn:  "kube-apiserver",
		dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		// 10.96.0.1 is the in-cluster "kubernetes" Service address; it is
		// only a name in the certificate and is never dialled.
		ips:    []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 96, 0, 1)},
		server: true,
	})
	if err != nil {
		return nil, fmt.Errorf("apiserver cert: %w", err)
	}
	clients := []struct {
		dst    **keyPair
		cn     string
		groups []string
	}{
		{&p.admin, "aiconform-rig-admin", []string{"system:masters"}},
		// The built-in RBAC roles bind these exact user names.
		{&p.kcm, "system:kube-controller-manager", nil},
		{&p.scheduler, "system:kube-scheduler", nil},
		// kwok writes node and pod status, leases and events for every
		// fake node: far broader than any built-in role short of admin.
		{&p.kwok, "kwok-controller", []string{"system:masters"}},
		// What a real node's kubelet admits for logs, exec and its proxy.
		{&p.kubeletCl, "kube-apiserver-kubelet-client", []string{"system:masters"}},
	}
	for _, c := range clients {
		kp, err := p.ca.issue(certSpec{cn: c.cn, orgs: c.groups, client: true})
		if err != nil {
			return nil, fmt.Errorf("client cert %s: %w", c.cn, err)
		}
		*c.dst = kp
	}
	if p.proxyCl, err = p.frontProxy.issue(certSpec{cn: "front-proxy-client", client: true}); err != nil {
		return nil, fmt.Errorf("front-proxy client cert: %w", err)
	}
	if p.saKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	return p, nil
}

// certSpec describes a leaf certificate to issue.
type certSpec struct {
	cn     string
	orgs   []string
	dns    []string
	ips    []net.IP
	server bool
	client bool
}

func newCA(cn string) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := selfSignedCA(cn, key)
	if err != nil {
		return nil, err
	}
	return newKeyPair(der, key)
}

// selfSignedCA makes the DER certificate of a CA for key, named cn and, when
// given, dns (a certificate manager that checks its CA by name needs them).
func selfSignedCA(cn string, key crypto.Signer, dns ...string) ([]byte, error) {
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		DNSNames:              dns,
		NotBefore:             now.Add(-time.Hour), // tolerate small clock skew between processes
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
}

// issue signs a leaf certificate with kp as the CA.
func (kp *keyPair) issue(s certSpec) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: s.cn, Organization: s.orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		DNSNames:     s.dns,
		IPAddresses:  s.ips,
	}
	if s.server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if s.client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, kp.cert, key.Public(), kp.key)
	if err != nil {
		return nil, err
	}
	return newKeyPair(der, key)
}

func newKeyPair(der []byte, key *ecdsa.PrivateKey) (*keyPair, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// pkiFiles are the paths of the PEM files the components read.
type pkiFiles struct {
	caCert, caKey                 string
	apiserverCert, apiserverKey   string
	frontProxyCA                  string
	proxyClientCert, proxyClientK string
	saKey, saPub                  string
	kubeletClient, kubeletClientK string
}

// write stores the PEM files under dir/pki with owner-only permissions on
// private keys.
func (p *pki) write(dir string) (pkiFiles, error) {
	d := filepath.Join(dir, "pki")
	if err := os.MkdirAll(d, 0o700); err != nil {
		return pkiFiles{}, err
	}
	saKeyDER, err := x509.MarshalPKCS8PrivateKey(p.saKey)
	if err != nil {
		return pkiFiles{}, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&p.saKey.PublicKey)
	if err != nil {
		return pkiFiles{}, err
	}
	f := pkiFiles{
		caCert:          filepath.Join(d, "ca.crt"),
		caKey:           filepath.Join(d, "ca.key"),
		apiserverCert:   filepath.Join(d, "apiserver.crt"),
		apiserverKey:    filepath.Join(d, "apiserver.key"),
		frontProxyCA:    filepath.Join(d, "front-proxy-ca.crt"),
		proxyClientCert: filepath.Join(d, "front-proxy-client.crt"),
		proxyClientK:    filepath.Join(d, "front-proxy-client.key"),
		saKey:           filepath.Join(d, "sa.key"),
		saPub:           filepath.Join(d, "sa.pub"),
		kubeletClient:   filepath.Join(d, "apiserver-kubelet-client.crt"),
		kubeletClientK:  filepath.Join(d, "apiserver-kubelet-client.key"),
	}
	files := []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{f.caCert, p.ca.certPEM, 0o644},
		{f.caKey, p.ca.keyPEM, 0o600},
		{f.apiserverCert, p.apiserver.certPEM, 0o644},
		{f.apiserverKey, p.apiserver.keyPEM, 0o600},
		{f.frontProxyCA, p.frontProxy.certPEM, 0o644},
		{f.proxyClientCert, p.proxyCl.certPEM, 0o644},
		{f.proxyClientK, p.proxyCl.keyPEM, 0o600},
		{f.saKey, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: saKeyDER}), 0o600},
		{f.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}), 0o644},
		{f.kubeletClient, p.kubeletCl.certPEM, 0o644},
		{f.kubeletClientK, p.kubeletCl.keyPEM, 0o600},
	}
	for _, file := range files {
		if err := os.WriteFile(file.path, file.data, file.mode); err != nil {
			return pkiFiles{}, err
		}
	}
	return f, nil
}

// ServingCert issues a serving certificate signed by the rig's CA (whose
// PEM is CACert, the caBundle to put in a webhook or APIService) for a
// server the rig's API server reaches on loopback. It is valid for
// 127.0.0.1, localhost and any extra DNS names or IPs in hosts. It works
// on an attached rig too: the CA is read back from the rig directory.
func (c *Cluster) ServingCert(hosts ...string) (certPEM, keyPEM []byte, err error) {
	ca, err := loadCA(filepath.Join(c.dir, "pki"))
	if err != nil {
		return nil, nil, fmt.Errorf("load rig CA: %w", err)
	}
	spec := certSpec{cn: "aiconform-rig-serving", dns: []string{"localhost"}, ips: []net.IP{net.IPv4(127, 0, 0, 1)}, server: true}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			spec.ips = append(spec.ips, ip)
		} else {
			spec.dns = append(spec.dns, h)
		}
	}
	kp, err := ca.issue(spec)
	if err != nil {
		return nil, nil, err
	}
	return kp.certPEM, kp.keyPEM, nil
}

func loadCA(dir string) (*keyPair, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "ca.key"))
	if err != nil {
		return nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("no PEM data in %s", dir)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key, certPEM: certPEM, keyPEM: keyPEM}, nil
}
