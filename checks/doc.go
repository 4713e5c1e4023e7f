// Package checks is the core of what aiconform asks of a cluster: the Check
// interface and its Result, the requirement catalog, the operator profiles,
// the runner that turns checks into results and requirement verdicts, and
// the reads the checks share. The checks themselves live in a package per
// checklist category (operator, accelerators), and builtin lists them.
// Checks read the cluster only through cluster.Cache and never print.
package checks
