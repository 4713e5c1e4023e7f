// Package declarative loads checks written in YAML and judged with CEL.
//
// A platform team's own gate (a label every accelerator node must carry, an
// annotation every inference namespace needs) should not wait for a release,
// nor need Go: a file names the objects to read and a CEL expression they must
// satisfy, in the CEL of Kubernetes' ValidatingAdmissionPolicy (cel-go with the
// API server's libraries), so that what a team already writes for admission it
// can also audit. The checks it yields are ordinary checks.Check values: they
// read through the run's shared cache (one LIST per query), and their evidence
// is the kubectl command and what it prints, as a built-in check's is.
package declarative
