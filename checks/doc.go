// Package checks holds what aiconform asks of a cluster: the requirement
// catalog, the operator profiles, the checks themselves and the runner that
// turns them into results. Checks read the cluster only through
// cluster.Cache and never print.
package checks
