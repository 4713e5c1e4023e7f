// Package observability holds the checks of the catalog category
// observability: accelerator_metrics (an exporter on every accelerator
// node serves, for each of its accelerators, utilization and memory in the
// Prometheus format, read through the API server as `kubectl get --raw`
// reads it).
package observability
