package observability

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// collectedAnswer is a Prometheus server's answer to seriesQuery on a cluster of
// nodes DCGM Exporters of gpus GPUs each, six metrics a GPU.
func collectedAnswer(nodes, gpus int) []byte {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for n := range nodes {
		for m, name := range []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"} {
			for g := range gpus {
				if n+m+g > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"metric":{"__name__":%q,"gpu":"%d","instance":"10.%d.%d.9:9400","namespace":"gpu-operator","pod":"nvidia-dcgm-exporter-%05d"},"value":[1764579600.123,"1"]}`, name, g, n/250, n%250, n)
			}
		}
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}

// The series of 500 nodes of 8 GPUs, read by parseSeries and, as the
// baseline, decoded as the Prometheus client's model.Vector.
func BenchmarkParseSeries(b *testing.B) {
	body := collectedAnswer(500, 8)
	b.Run("model.Vector", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var a struct {
				Data struct {
					Result model.Vector `json:"result"`
				} `json:"data"`
			}
			require.NoError(b, json.Unmarshal(body, &a))
			require.Len(b, a.Data.Result, 500*6*8)
		}
	})
	b.Run("parseSeries", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			v, err := parseSeries(body)
			require.NoError(b, err)
			require.Len(b, v, 500*6*8)
		}
	})
}

// An answer's series by their labels; an answer that is not a vector, or
// not a success, is an error that says so.
func TestParseSeries(t *testing.T) {
	v, err := parseSeries(collectedAnswer(2, 1))
	require.NoError(t, err)
	require.Len(t, v, 12)
	require.Equal(t, seriesLabels{"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "instance": "10.0.0.9:9400", "namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-00000"}, v[0])
	require.Equal(t, "nvidia-dcgm-exporter-00001", v[11]["pod"])
	for body, want := range map[string]string{
		`{"status":"success","data":{"resultType":"scalar","result":[1764579600,"1"]}}`: "the query answered a scalar, not a vector",
		`{"status":"error","errorType":"bad_data","error":"parse error at char 3"}`:     "answered error: bad_data parse error at char 3",
		`<html>login</html>`: "not an answer of the Prometheus HTTP API",
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"gpu":0}}]}}`: "the query's vector",
	} {
		_, err := parseSeries([]byte(body))
		require.ErrorContains(t, err, want, body)
	}
}

// isName knows a kind's names as names makes them, prefixes too, and
// nothing else.
func TestIsName(t *testing.T) {
	known, err := exporters()
	require.NoError(t, err)
	for _, e := range known {
		for _, kind := range allKinds {
			for _, n := range e.names(kind) {
				require.True(t, e.isName(kind, n), "%s: %s", e.Name, n)
				require.False(t, e.isName(kind, "x"+n), "%s: x%s", e.Name, n)
				require.False(t, e.isName(kind, n+"_x"), "%s: %s_x", e.Name, n)
				for _, other := range allKinds {
					if other != kind && !slices.Contains(e.names(other), n) {
						require.False(t, e.isName(other, n), "%s: %s as %s", e.Name, n, other)
					}
				}
			}
		}
	}
	amd := known[slices.IndexFunc(known, func(e exporter) bool { return len(e.Prefixes) > 0 })]
	require.True(t, amd.isName("utilization", "amd_gpu_gfx_activity"))
	require.False(t, amd.isName("utilization", "nv_gpu_gfx_activity"))
}
