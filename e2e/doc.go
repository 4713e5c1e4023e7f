// Package e2e holds the end-to-end tests of aiconform against a real API
// server started by the project's rig. They build with the e2e tag:
//
//	go test -tags e2e ./e2e/
package e2e
