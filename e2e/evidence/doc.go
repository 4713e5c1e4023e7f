// Package evidence holds the end-to-end test of every report's promise: each
// evidence block, re-run with kubectl on the same cluster, prints what the
// block says; each scenario on a control plane of its own. It is a package
// apart from e2e so that go test runs it beside the operator-rig tests,
// which mostly wait. It builds with the e2e tag:
//
//	go test -tags e2e ./e2e/evidence/
package evidence
