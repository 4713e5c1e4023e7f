// Package accelerators holds the checks of the catalog category
// accelerators: gpu_nodes_allocatable (accelerator nodes Ready and
// allocatable, a device plugin serving them, recognised from
// device_plugins.yaml) and dra_support (the DRA API served, drivers
// publishing devices, known from dra_drivers.yaml, and claims allocated).
package accelerators
