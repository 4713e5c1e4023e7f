// Command metrics-adapter is the rig's custom and external metrics API
// server: the adapter framework of sigs.k8s.io/custom-metrics-apiserver
// with the sample provider its module ships (test-adapter/provider), which
// serves fixed external metrics (my-external-metric, other-external-metric)
// in every namespace, and, of its own (gpu.go), the custom metric of pods
// prometheus-adapter serves from NVIDIA's DCGM Exporter on GPU clusters,
// DCGM_FI_DEV_GPU_UTIL of each pod that holds a GPU. It is the module's
// own test-adapter command less its metric-writing HTTP port, which
// listens on every address: the rig binds nothing but 127.0.0.1, and
// nothing of the rig writes metrics.
package main

import (
	"context"
	"os"

	"k8s.io/component-base/logs"
	"k8s.io/klog/v2"
	basecmd "sigs.k8s.io/custom-metrics-apiserver/pkg/cmd"
	sample "sigs.k8s.io/custom-metrics-apiserver/test-adapter/provider"
)

func main() {
	logs.InitLogs()
	defer logs.FlushLogs()

	a := &basecmd.AdapterBase{Name: "metrics-adapter"}
	logs.AddFlags(a.Flags())
	if err := a.Flags().Parse(os.Args); err != nil {
		klog.Fatalf("flags: %v", err)
	}
	client, err := a.DynamicClient()
	if err != nil {
		klog.Fatalf("dynamic client: %v", err)
	}
	mapper, err := a.RESTMapper()
	if err != nil {
		klog.Fatalf("REST mapper: %v", err)
	}
	// The web service writes metric values; it is left unserved.
	sp, _ := sample.NewFakeProvider(client, mapper)
	p := &gpuPods{MetricsProvider: sp, client: client, mapper: mapper}
	a.WithCustomMetrics(p)
	a.WithExternalMetrics(p)
	if err := a.Run(context.Background()); err != nil {
		klog.Fatalf("run: %v", err)
	}
}
