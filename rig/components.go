package rig

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// Command lines of the components. Every listener is bound to 127.0.0.1
// explicitly: several components default to 0.0.0.0.

func etcdArgs(dir string, clientPort, peerPort int) []string {
	client := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	return []string{
		"--name", "rig",
		"--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", client,
		"--advertise-client-urls", client,
		"--listen-peer-urls", peer,
		"--initial-advertise-peer-urls", peer,
		"--initial-cluster", "rig=" + peer,
		"--initial-cluster-state", "new",
		// The data is thrown away with the rig; fsync only costs time.
		"--unsafe-no-fsync",
		"--log-level", "warn",
	}
}

func apiserverArgs(f pkiFiles, etcdPort, port int, egressConfig string, profiling bool) []string {
	return []string{
		"--etcd-servers", "http://127.0.0.1:" + strconv.Itoa(etcdPort),
		"--bind-address", "127.0.0.1",
		"--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(port),
		"--tls-cert-file", f.apiserverCert,
		"--tls-private-key-file", f.apiserverKey,
		"--client-ca-file", f.caCert,
		"--authorization-mode", "Node,RBAC",
		"--service-cluster-ip-range", ServiceCIDR,
		// With the default "lease" reconciler the apiserver publishes its
		// own 127.0.0.1 as the kubernetes Service endpoint, which
		// EndpointSlice validation rejects.
		"--endpoint-reconciler-type", "none",
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", f.saPub,
		"--service-account-signing-key-file", f.saKey,
		"--requestheader-client-ca-file", f.frontProxyCA,
		"--requestheader-allowed-names", "front-proxy-client",
		"--requestheader-username-headers", "X-Remote-User",
		"--requestheader-group-headers", "X-Remote-Group",
		"--requestheader-extra-headers-prefix", "X-Remote-Extra-",
		"--proxy-client-cert-file", f.proxyClientCert,
		"--proxy-client-key-file", f.proxyClientK,
		// All "cluster" traffic (Service-backed webhooks and APIServices,
		// pod/service/node proxy, logs, exec) goes through the rig's
		// loopback-only proxy.
		"--egress-selector-config-file", egressConfig,
		"--allow-privileged",
		// A real node's kubelet (nodenet.go) admits the apiserver by this
		// certificate, at its InternalIP: its hostname resolves nowhere.
		"--kubelet-client-certificate", f.kubeletClient,
		"--kubelet-client-key", f.kubeletClientK,
		"--kubelet-preferred-address-types", "InternalIP",
		"--profiling=" + strconv.FormatBool(profiling),
	}
}

// egressSelectorConfig routes the "cluster" egress selection through the
// rig's CONNECT proxy on a unix socket.
func egressSelectorConfig(socket string) []byte {
	return fmt.Appendf(nil, `apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %q
`, socket)
}

func kcmArgs(dir string, f pkiFiles) []string {
	return []string{
		"--kubeconfig", filepath.Join(dir, "kcm.kubeconfig"),
		// No serving port at all: nothing reads kcm's health endpoints, and
		// one listener fewer is one less thing bound on the machine.
		"--secure-port", "0",
		"--leader-elect=false",
		"--use-service-account-credentials",
		"--service-account-private-key-file", f.saKey,
		"--root-ca-file", f.caCert,
		"--cluster-signing-cert-file", f.caCert,
		"--cluster-signing-key-file", f.caKey,
		"--service-cluster-ip-range", ServiceCIDR,
		"--cluster-cidr", PodCIDR,
		"--profiling=false",
	}
}

func schedulerArgs(dir string) []string {
	return []string{
		"--kubeconfig", filepath.Join(dir, "scheduler.kubeconfig"),
		"--secure-port", "0",
		"--leader-elect=false",
		"--profiling=false",
	}
}

func kwokArgs(dir, stages string) []string {
	return []string{
		"--kubeconfig", filepath.Join(dir, "kwok.kubeconfig"),
		"--config", stages,
		// Only the rig's own nodes; anything else stays untouched.
		"--manage-nodes-with-annotation-selector", NodeAnnotation + "=" + NodeAnnotationValue,
		"--node-ip", "127.0.0.1",
		"--cidr", PodCIDR,
		// The heartbeat-with-lease stage renews node leases; without a
		// duration kwok keeps none and the node lifecycle controller marks
		// the nodes NotReady after its grace period.
		"--node-lease-duration-seconds", "40",
	}
}
