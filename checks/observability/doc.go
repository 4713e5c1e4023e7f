// Package observability holds the checks of the catalog category
// observability: accelerator_metrics (an exporter on every accelerator
// node serves, for each of its accelerators, utilization and memory in the
// Prometheus format) and ai_service_metrics (a monitoring system discovers
// the cluster's workloads and scrapes them), both read through the API
// server as `kubectl get --raw` reads them, from the exporters and from the
// monitoring system's own HTTP API.
package observability
