// Package hardware knows accelerators, for the checks of every category
// that ask about them: which extended resources name one and whose
// (accelerators.yaml: each vendor's resources, device nodes and
// visibility variables), the DRA drivers and device classes that publish
// them (dra_drivers.yaml), the nodes that have them and their pods, and
// how a probe picks a node with one free. It reads the cluster through the
// checks core (checks.Env) and knows no check.
package hardware
