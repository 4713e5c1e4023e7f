// Package simulate writes what the components the project simulates would
// serve: NVIDIA DCGM Exporter's metrics page and the Prometheus targets
// API. The rig serves them over HTTP, recordings and the unit tests' fake
// cluster answer with them, so that checks are tested against one shape
// of each, and no check package depends on the rig.
package simulate
