package rig

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// certSecret is the Secret an operator's own certificate manager
// (open-policy-agent's cert-controller, as Kubeflow Trainer and JobSet use)
// keeps its webhook CA and serving certificate in. The manager keeps what
// it finds there when the CA is valid for caName and the serving
// certificate for the Service's DNS name, writes them to its fixed
// certificate folder, and puts the CA into its webhook configurations
// only when the CA key is RSA in PKCS #1, as it makes its own.
type certSecret struct {
	name, caName, service string
}

// make returns the Secret, in ns, with a CA of its own and a serving
// certificate valid for the Service's DNS name and for 127.0.0.1, where
// the rig's webhooks call the process.
func (s *certSecret) make(ns string) (*corev1.Secret, error) {
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	der, err := selfSignedCA(s.caName, caKey, s.caName)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &keyPair{cert: cert, key: caKey, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(caKey)})}
	srv, err := ca.issue(certSpec{cn: s.service, dns: []string{s.service + "." + ns + ".svc", "localhost"},
		ips: []net.IP{net.IPv4(127, 0, 0, 1)}, server: true})
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: s.name},
		Data:       map[string][]byte{"ca.crt": ca.certPEM, "ca.key": ca.keyPEM, "tls.crt": srv.certPEM, "tls.key": srv.keyPEM},
	}, nil
}
