// Package e2e holds the end-to-end tests of aiconform against a real API
// server started by the project's rig. They build with the e2e tag:
//
//	go test -tags e2e ./e2e/
//
// Each test starts a rig of its own. Those whose nodes are kwok's call
// t.Parallel: they wait on controllers, webhooks and probes more than they
// compute (run one after another, the e2e suite kept two cores 63% busy),
// so go test runs them two at a time on such a machine (-parallel is
// GOMAXPROCS). The tests with a real node (containerd, network namespaces)
// run one at a time, before the others start.
package e2e
