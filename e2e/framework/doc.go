// Package framework holds what the end-to-end test packages share: where
// the rig's binaries are, running an evidence command as a shell would and
// comparing what it prints with the report, and writing a run's report as
// --out does. It builds with the e2e tag only.
package framework
