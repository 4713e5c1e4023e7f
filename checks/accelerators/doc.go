// Package accelerators holds the gpu_nodes_allocatable checks (catalog
// category accelerators): accelerator nodes Ready and allocatable, and a
// device plugin serving them, recognised from device_plugins.yaml.
package accelerators
