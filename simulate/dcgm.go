package simulate

import (
	"bytes"
	"fmt"
	"net/http"
)

// DCGMExporterPort is the port NVIDIA's DCGM Exporter serves its metrics on.
const DCGMExporterPort = 9400

// DCGMMetrics is what NVIDIA's DCGM Exporter serves for a node of gpus GPUs
// of the rig's kind (GPUNode's), in the Prometheus text format: the
// utilization, framebuffer, temperature, power and NVLink fields of its
// default set, one series per GPU, labelled as the exporter labels them.
// The values are fixed, so that what a recording shows a re-run shows too,
// but for the GPUs held: those the exporter's Kubernetes mapping names a
// pod for, at the holder's utilization.
func DCGMMetrics(node string, gpus int, driver string, held ...DCGMHolder) []byte {
	fields := []struct {
		name, help, typ string
		value           func(i int) int
	}{
		{"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "gauge", func(i int) int { return (i * 37) % 100 }},
		{"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", "gauge", func(i int) int { return 81559 - (i*9973)%81559 }},
		{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "gauge", func(i int) int { return (i * 9973) % 81559 }},
		{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", "gauge", func(i int) int { return 31 + i%7 }},
		{"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "gauge", func(i int) int { return 70 + (i*41)%500 }},
		{"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "Total number of NVLink bandwidth counters for all lanes.", "counter", func(i int) int { return 1000 * i }},
	}
	holders := map[int]DCGMHolder{}
	for _, h := range held {
		holders[h.GPU] = h
	}
	var b bytes.Buffer
	for _, f := range fields {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
		for i := range gpus {
			value, pod := f.value(i), ""
			if h, ok := holders[i]; ok {
				if f.name == "DCGM_FI_DEV_GPU_UTIL" {
					value = h.Util
				}
				if h.Pod != "" {
					pod = fmt.Sprintf(",container=%q,namespace=%q,pod=%q", h.Container, h.Namespace, h.Pod)
				}
			}
			fmt.Fprintf(&b, "%s{gpu=\"%d\",UUID=\"GPU-%08x-0000-4000-8000-%012x\","+
				"pci_bus_id=\"00000000:%02X:00.0\",device=\"nvidia%d\",modelName=\"NVIDIA H100 "+
				"80GB HBM3\",Hostname=\"%s\",DCGM_FI_DRIVER_VERSION=\"%s\"%s} %d\n",
				f.name, i, i+1, i+1, 0x18+i*0x10, i, node, driver, pod, value)
		}
	}
	return b.Bytes()
}

// DCGMHolder is a GPU in use: the pod DCGM Exporter's Kubernetes mapping
// names as holding it (none when Pod is empty, as with the mapping off),
// and its utilization.
type DCGMHolder struct {
	GPU                       int
	Namespace, Pod, Container string
	Util                      int
}

// MetricsHandler serves body at /metrics in the Prometheus text format.
func MetricsHandler(body []byte) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(body)
	})
	return mux
}
