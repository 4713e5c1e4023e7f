package rig

import "github.com/aiconform/aiconform/simulate"

// What the rig serves as its simulated DCGM Exporter and Prometheus, kept
// under the rig's names for the callers that start them with the rig.
type (
	PrometheusTarget = simulate.PrometheusTarget
	DCGMHolder       = simulate.DCGMHolder
)

var (
	DCGMMetrics              = simulate.DCGMMetrics
	MetricsHandler           = simulate.MetricsHandler
	PrometheusTargets        = simulate.PrometheusTargets
	PrometheusTargetsHandler = simulate.PrometheusTargetsHandler
	PodTarget                = simulate.PodTarget
)

// DCGMExporterPort is the port NVIDIA's DCGM Exporter serves its metrics on.
const DCGMExporterPort = simulate.DCGMExporterPort
