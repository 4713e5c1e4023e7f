// Package cluster reads a Kubernetes cluster for the checks: from a live API
// server or from a recording of one, each query answered once per run and
// shared by every check, together with the server's own Table rendering of
// what was read, so evidence shows what kubectl prints.
package cluster
