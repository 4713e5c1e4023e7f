// Package security holds the checks of the catalog category security:
// secure_accelerator_access (accelerators reach containers only through a
// resource request, the device plugin or DRA, and the container runtime;
// no workload reaches a device around them, and none sees another's) and
// workload_sandboxing (a RuntimeClass runs pods in a sandbox with a
// kernel of its own).
package security
