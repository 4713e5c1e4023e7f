// Package rig starts and stops a real Kubernetes control plane on loopback
// for aiconform's end-to-end tests: etcd and kube-apiserver, and for the
// full rig kube-controller-manager, kube-scheduler and kwok with a fake
// GPU node (8 nvidia.com/gpu, served by a stand-in of NVIDIA's device
// plugin DaemonSet) and a fake CPU node.
//
// The binaries come from tools/build (bin/ at the repository root). Every
// listener is on 127.0.0.1, and the API server's "cluster" egress (Service
// webhooks, APIServices, proxy/logs/exec) goes through a CONNECT proxy of
// this package that forwards only to 127.0.0.0/8: the Service and Pod
// addresses the cluster hands out (10.96.0.0/16, 10.244.0.0/16) are fake
// and are never dialled.
//
// In a test:
//
//	c, err := rig.Start(ctx, rig.Options{})            // full rig, nodes Ready
//	c, err := rig.StartControlPlane(ctx, rig.Options{}) // etcd + kube-apiserver only
//	defer c.Stop()
//	cfg := c.RESTConfig() // admin (system:masters); c.Kubeconfig() is its file
//
// On a full rig, the real operators run as local processes built by
// tools/build, with their CRDs and webhook manifests read from their
// downloaded Go modules (operators.go):
//
//	ks, err := c.InstallKServe(ctx, rig.OperatorOptions{})  // RawDeployment
//	kr, err := c.InstallKubeRay(ctx, rig.OperatorOptions{})
//	tr, js, err := c.InstallTrainer(ctx, rig.OperatorOptions{}) // with JobSet
//	to, err := c.InstallTrainingOperator(ctx, rig.OperatorOptions{})
//	kq, err := c.InstallKueue(ctx, rig.OperatorOptions{}) // last: its webhooks see the others' jobs
//	kr.Stop(ctx)  // webhooks removed first, then the process
//	kr.Start(ctx) // process again, webhooks registered once served
//
// Beside them run a metrics adapter (metricsadapter.go), Karpenter's kwok
// provider (karpenter.go) and Traefik as the Gateway API implementation
// (gateway.go), which accepts the rig's GatewayClass and reports on
// Gateways and HTTPRoutes as on any cluster:
//
//	gw, err := c.InstallGateway(ctx, rig.OperatorOptions{}) // CRDs, Traefik, GatewayClass traefik
//	port := gw.ListenerPort() // what a Gateway's listener names to be programmed
//
// The operators elect a leader as their releases do (leader.go): each
// process holds its Lease as `<hostname>_<uuid>`, and the controller pod
// the rig makes for it carries this machine's hostname, so the Lease names
// that pod. Install returns once the process leads; after a restart,
// WaitLeader waits for the previous run's Lease to expire.
//
// Options.RealNodes adds real nodes (realnode.go): a kubelet with
// containerd and runc each, in network and mount namespaces of their own
// (nodenet.go), whose pods really run images the rig builds from the
// project's sources (images.go) and get stand-in GPUs from a device plugin
// through the kubelet (realgpu.go).
//
// From make: `make cluster-up` (rig/cmd/rig up) starts a detached rig with
// its state in .rig/ and the five operators and the components beside them on it, `make cluster-down` removes
// their webhooks and stops exactly the PIDs it recorded, and Attach reuses
// such a rig from a test.
package rig
