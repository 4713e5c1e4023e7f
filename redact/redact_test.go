package redact

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/report"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var base = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const (
	eksNode     = "ip-10-0-1-23.us-west-2.compute.internal"
	eksNode2    = "ip-10-0-2-7.us-west-2.compute.internal"
	eksInstance = "i-0abc123def4567890"
	awsAccount  = "123456789012"
	eksServer   = "0123456789ABCDEF0123456789ABCDEF.gr7.us-west-2.eks.amazonaws.com"
	gkeProject  = "my-project-123"
	gkeNode     = "gke-node-1"
	azureSub    = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	publicImage = "quay.io/brancz/kube-rbac-proxy:v0.18.0"
)

// identifying are the values of eksReport that must not survive redaction.
var identifying = []string{
	eksNode, eksNode2, "ip-10-0-1-23", "ip-10-0-2-7", eksInstance, awsAccount, eksServer,
	gkeProject, gkeNode, azureSub,
	"10.0.1.23", "10.0.2.7", "54.12.34.56", "10.0.1.87", "10.0.2.91", "10.100.0.15", "10.128.0.9",
	"2600:1f14:abc:1::23", "model.acme-corp.io",
}

// eksReport is a run on an EKS cluster whose GPU node pool also lists a GKE
// node and an AKS provider id, so that every kind of value is present.
func eksReport() *report.Report {
	nodes := strings.Join([]string{
		"NAME                                      STATUS   ROLES    AGE   VERSION               INTERNAL-IP   EXTERNAL-IP   OS-IMAGE         KERNEL-VERSION                  CONTAINER-RUNTIME",
		"ip-10-0-1-23.us-west-2.compute.internal   Ready    <none>   12d   v1.34.2-eks-b1a2c3d   10.0.1.23     54.12.34.56   Amazon Linux 2   5.10.225-213.878.amzn2.x86_64   containerd://1.7.22",
		"ip-10-0-2-7.us-west-2.compute.internal    Ready    <none>   12d   v1.34.2-eks-b1a2c3d   10.0.2.7      <none>        Amazon Linux 2   5.10.225-213.878.amzn2.x86_64   containerd://1.7.22",
		"gke-node-1                                Ready    <none>   3d    v1.34.2-gke.1000      10.128.0.9    <none>        COS              6.1.100+                        containerd://1.7.22",
		"",
	}, "\n")
	pods := strings.Join([]string{
		"NAME                                         READY   STATUS    RESTARTS   AGE   IP           NODE                                      NOMINATED NODE   READINESS GATES",
		"kserve-controller-manager-7d9f8b6c5d-6j7zb   2/2     Running   0          3d    10.0.1.87    ip-10-0-1-23.us-west-2.compute.internal   <none>           <none>",
		"kserve-controller-manager-7d9f8b6c5d-9k2xm   2/2     Running   0          3d    10.0.2.91    ip-10-0-2-7.us-west-2.compute.internal    <none>           <none>",
		"",
	}, "\n")
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	return &report.Report{
		SchemaVersion: report.SchemaVersion,
		Tool:          report.Tool{Name: "aiconform", Version: "dev"},
		Run: report.Run{
			StartedAt: at(0), FinishedAt: at(900), FailOn: "MUST",
			Cluster: cluster.Info{
				Live:          true,
				Context:       "arn:aws:eks:us-west-2:" + awsAccount + ":cluster/prod",
				Server:        "https://" + eksServer,
				ServerVersion: "v1.34.2-eks-b1a2c3d",
				ClusterID:     "5f0c6d2e-8a7b-4f1e-9c3d-2b1a0e9f8c7d",
			},
		},
		Summary: report.Totals{Requirements: map[string]int{"Implemented": 1}, Checks: map[string]int{"pass": 2}},
		Operators: []report.Operator{{
			Name: "kserve", Title: "KServe", Detected: true, CRDs: []string{"inferenceservices.serving.kserve.io"},
			Versions: []string{awsAccount + ".dkr.ecr.us-west-2.amazonaws.com/kserve-controller:v0.15.0", publicImage},
		}},
		Requirements: []report.Requirement{
			{
				ID: "robust_controller", Title: "A complex AI operator with CRDs is installed and works", Category: "operator",
				Level: "MUST", Program: "CNCF Kubernetes AI Conformance", Status: "Implemented", Result: "pass",
				Conclusion: "KServe meets it", Operator: "kserve",
				Checks: []report.Check{{
					ID: "controller-ready", Title: "Controller Deployment available, pods Ready", Operator: "kserve",
					Status: "pass", Reason: "2 pods Running and Ready, on " + eksNode + " and " + eksNode2,
					Details: []string{
						"webhook https://model.acme-corp.io:8443/validate and http://kserve-webhook.kserve.svc:443/ and http://sklearn.models.example.com",
						"metrics at [2600:1f14:abc:1::23]:9090 and 127.0.0.1:8080, docs at 192.0.2.10",
						"Service kserve-webhook-server-service ClusterIP 10.100.0.15",
					},
					Evidence: []report.Evidence{{
						Command:    "kubectl get deploy,pods -n kserve -l control-plane=kserve-controller-manager -o wide",
						Output:     pods,
						CapturedAt: at(100),
					}},
					StartedAt: at(10), FinishedAt: at(200),
				}},
			},
			{
				ID: "gpu_nodes_allocatable", Title: "Accelerator nodes are Ready and their accelerators allocatable", Category: "accelerators",
				Level: "MUST", Program: "aiconform", Status: "Implemented", Result: "pass",
				Conclusion: "3 GPU nodes Ready; " + eksNode + " carries the most",
				Checks: []report.Check{{
					ID: "gpu-allocatable", Title: "GPU nodes Ready and allocatable", Status: "pass",
					Reason: "3 GPU nodes Ready with accelerators allocatable",
					Details: []string{
						eksNode + ": providerID aws:///us-west-2a/" + eksInstance,
						gkeNode + ": providerID gce://" + gkeProject + "/us-central1-a/" + gkeNode,
						"aks: providerID azure:///subscriptions/" + azureSub + "/resourceGroups/mc_rg/providers/Microsoft.Compute/virtualMachineScaleSets/aks-gpu/virtualMachines/0",
					},
					Table: &report.Table{
						Header: []string{"NODE", "READY", "RESOURCE", "CAPACITY", "ALLOCATABLE", "REQUESTED"},
						Rows: [][]string{
							{eksNode, "True", "nvidia.com/gpu", "8", "8", "1"},
							{eksNode2, "True", "nvidia.com/gpu", "8", "8", "0"},
							{gkeNode, "True", "nvidia.com/gpu", "4", "4", "0"},
						},
					},
					Evidence: []report.Evidence{
						{Command: "kubectl get nodes -l nvidia.com/gpu.present=true -o wide", Output: nodes, CapturedAt: at(300)},
						{
							Command:    "kubectl get pods -A --field-selector spec.nodeName=" + eksNode,
							Output:     "NAMESPACE   NAME                                     READY   STATUS    RESTARTS   AGE\nray         raycluster-mini-gpu-group-worker-ljhqr   1/1     Running   0          1d\n",
							CapturedAt: at(310),
							Note:       "pods on " + eksNode + ", whose requests count against its allocatable",
						},
					},
					StartedAt: at(20), FinishedAt: at(400),
				}},
			},
		},
	}
}

// files renders a report as the run writes it.
func files(t *testing.T, r *report.Report) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, render := range map[string]func(*bytes.Buffer, *report.Report) error{
		"report.md":   func(b *bytes.Buffer, r *report.Report) error { return report.Markdown(b, r) },
		"report.json": func(b *bytes.Buffer, r *report.Report) error { return report.JSON(b, r) },
		"junit.xml":   func(b *bytes.Buffer, r *report.Report) error { return report.JUnit(b, r) },
	} {
		var b bytes.Buffer
		require.NoError(t, render(&b, r))
		out[name] = b.String()
	}
	return out
}

func redacted(t *testing.T, key string) *report.Report {
	t.Helper()
	r := eksReport()
	New([]byte(key)).Report(r)
	require.NoError(t, r.Seal(checks.Level(r.Run.FailOn)))
	return r
}

func TestReportRedactsEveryFile(t *testing.T) {
	// Without redaction every value is there to find: the test would catch
	// a renderer that dropped them.
	plain := eksReport()
	require.NoError(t, plain.Seal(checks.Must))
	for _, v := range identifying {
		require.Contains(t, files(t, plain)["report.json"], v, "the unredacted report")
	}

	r := redacted(t, "key one")
	assert.True(t, r.Run.Redacted)
	rendered := files(t, r)
	for name, content := range rendered {
		for _, v := range identifying {
			assert.NotContains(t, content, v, name)
		}
	}

	// One value, one pseudonym, wherever it is.
	gpu := r.Requirements[1].Checks[0]
	node := gpu.Table.Rows[0][0]
	assert.Regexp(t, `^node-[0-9a-f]{8}$`, node)
	assert.Contains(t, gpu.Evidence[1].Command, "spec.nodeName="+node)
	assert.Equal(t, "pods on "+node+", whose requests count against its allocatable", gpu.Evidence[1].Note)
	assert.Contains(t, r.Requirements[0].Checks[0].Reason, "on "+node+" and ")
	assert.Contains(t, r.Requirements[0].Checks[0].Evidence[0].Output, "   "+node+"   ")
	assert.True(t, strings.HasPrefix(strings.Split(gpu.Evidence[0].Output, "\n")[1], node+" "))
	for name, content := range rendered {
		assert.Contains(t, content, node, name)
	}

	account := regexp.MustCompile(`^arn:aws:eks:us-west-2:(account-[0-9a-f]{8}):cluster/prod$`).FindStringSubmatch(r.Run.Cluster.Context)
	require.Len(t, account, 2, r.Run.Cluster.Context)
	assert.Equal(t, account[1]+".dkr.ecr.us-west-2.amazonaws.com/kserve-controller:v0.15.0", r.Operators[0].Versions[0])
	assert.Regexp(t, `^https://host-[0-9a-f]{8}\.example$`, r.Run.Cluster.Server)
	assert.Regexp(t, `^node-[0-9a-f]{8}: providerID aws:///us-west-2a/instance-[0-9a-f]{8}$`, gpu.Details[0])
	gke := gpu.Table.Rows[2][0]
	assert.Regexp(t, `^node-[0-9a-f]{8}: providerID gce://account-[0-9a-f]{8}/us-central1-a/`+gke+`$`, gpu.Details[1])
	assert.Regexp(t, `^aks: providerID azure:///subscriptions/account-[0-9a-f]{8}/resourceGroups/mc_rg/`, gpu.Details[2])
	assert.Regexp(t, `^webhook https://host-[0-9a-f]{8}\.example:8443/validate and `, r.Requirements[0].Checks[0].Details[0])
	assert.Regexp(t, `^metrics at \[ip6-[0-9a-f]{8}\]:9090 and `, r.Requirements[0].Checks[0].Details[1])
	assert.Regexp(t, `ClusterIP ip-[0-9a-f]{8}$`, r.Requirements[0].Checks[0].Details[2])

	// What identifies nobody stays.
	for _, v := range []string{
		publicImage, "127.0.0.1:8080", "192.0.2.10", "http://kserve-webhook.kserve.svc:443/",
		"http://sklearn.models.example.com", "v1.34.2-eks-b1a2c3d", "5.10.225-213.878.amzn2.x86_64",
		"containerd://1.7.22", "5f0c6d2e-8a7b-4f1e-9c3d-2b1a0e9f8c7d", "us-west-2", "raycluster-mini-gpu-group-worker-ljhqr",
		"kserve-controller-manager-7d9f8b6c5d-6j7zb", "nvidia.com/gpu",
	} {
		assert.Contains(t, rendered["report.json"], v)
	}
}

func TestReportKeepsColumnsAligned(t *testing.T) {
	r := redacted(t, "key one")
	for _, out := range []string{
		r.Requirements[0].Checks[0].Evidence[0].Output,
		r.Requirements[1].Checks[0].Evidence[0].Output,
	} {
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		starts := columnStarts(lines[0])
		require.Greater(t, len(starts), 5, out)
		for _, l := range lines[1:] {
			for _, s := range starts[1:] {
				require.Greater(t, len(l), s, "%q", l)
				assert.Equal(t, "  ", l[s-2:s], "a column does not start at %d in %q\n%s", s, l, out)
				assert.NotEqual(t, ' ', l[s], "a column does not start at %d in %q\n%s", s, l, out)
			}
		}
	}
	// A pseudonym shorter than the name keeps the column's width; a longer
	// one widens it: ip-XXXXXXXX is two runes longer than 10.0.1.87.
	assert.Equal(t, strings.Split(eksReport().Requirements[1].Checks[0].Evidence[0].Output, "\n")[0],
		strings.Split(r.Requirements[1].Checks[0].Evidence[0].Output, "\n")[0])
	pods := strings.Split(r.Requirements[0].Checks[0].Evidence[0].Output, "\n")
	orig := strings.Split(eksReport().Requirements[0].Checks[0].Evidence[0].Output, "\n")
	assert.Equal(t, strings.Replace(orig[0], "IP           NODE", "IP            NODE", 1), pods[0])
}

// columnStarts are where the words of a header line begin after two spaces.
func columnStarts(header string) []int {
	starts := []int{0}
	for i := 2; i < len(header); i++ {
		if header[i] != ' ' && header[i-1] == ' ' && header[i-2] == ' ' {
			starts = append(starts, i)
		}
	}
	return starts
}

func TestReportKeys(t *testing.T) {
	one, again, other := redacted(t, "key one"), redacted(t, "key one"), redacted(t, "key two")
	assert.Equal(t, files(t, one), files(t, again), "the same key gives the same report")
	assert.Equal(t, one.Digest, again.Digest)
	assert.NotEqual(t, one.Requirements[1].Checks[0].Table.Rows[0][0], other.Requirements[1].Checks[0].Table.Rows[0][0])
	assert.NotEqual(t, one.Run.Cluster.Context, other.Run.Cluster.Context)
	assert.NotEqual(t, one.Digest, other.Digest)

	// Without a key, a random one: two runs agree on nothing.
	a, b := eksReport(), eksReport()
	New(nil).Report(a)
	New(nil).Report(b)
	assert.NotEqual(t, a.Requirements[1].Checks[0].Table.Rows[0][0], b.Requirements[1].Checks[0].Table.Rows[0][0])
	js := files(t, a)["report.json"]
	for _, v := range identifying {
		assert.NotContains(t, js, v)
	}
}

// TestDigestVerifies checks the digest the way docs/report-format.md tells a
// reader to, `jq -cj '.digest=""' report.json | sha256sum`, and the report
// against the schema.
func TestDigestVerifies(t *testing.T) {
	r := redacted(t, "key one")
	js := files(t, r)["report.json"]
	digestRE := regexp.MustCompile(`"digest": "sha256:([0-9a-f]{64})"`)
	m := digestRE.FindStringSubmatch(js)
	require.Len(t, m, 2)
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, []byte(digestRE.ReplaceAllString(js, `"digest": ""`))))
	sum := sha256.Sum256(compact.Bytes())
	assert.Equal(t, m[1], hex.EncodeToString(sum[:]))
	assert.Contains(t, js, `"redacted": true`)

	f, err := os.Open(filepath.Join("..", "docs", "report.schema.json"))
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	require.NoError(t, c.AddResource("report.schema.json", doc))
	s, err := c.Compile("report.schema.json")
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(js))
	require.NoError(t, err)
	assert.NoError(t, s.Validate(inst))

	// Redaction clears the digest, so that a report not sealed again says
	// so rather than carry a digest of what it no longer holds.
	unsealed := eksReport()
	require.NoError(t, unsealed.Seal(checks.Must))
	New([]byte("k")).Report(unsealed)
	assert.Empty(t, unsealed.Digest)
}

func TestScan(t *testing.T) {
	tests := []struct {
		text string
		want map[string]kind
	}{
		{"v1.2.3.4 and 1.2.3.4.5 and 10.0.0.256 and 2026.11.29.1", nil},
		{"https://10.0.0.1:6443 and 10.0.0.0/16", map[string]kind{"10.0.0.1": kindIPv4, "10.0.0.0": kindIPv4}},
		{"127.0.0.1, 0.0.0.0, 255.255.255.255, 192.0.2.1, 198.51.100.7, 203.0.113.9, ::1, ::, 2001:db8::1", nil},
		{"node at 127.0.10.2.", map[string]kind{"127.0.10.2": kindIPv4}},
		{"[fd00::1]:443 and FD00::2, and ::ffff:10.1.2.3", map[string]kind{"fd00::1": kindIPv6, "FD00::2": kindIPv6, "::ffff:10.1.2.3": kindIPv6, "10.1.2.3": kindIPv4}},
		{"2026-11-29T22:41:57Z aa:bb:cc:dd:ee:ff sha256:abc 1:2", nil},
		{"https://api.acme.corp:6443/x https://user@Host.Acme.io/ http://localhost:8080 http://minio:9000", map[string]kind{"api.acme.corp": kindHost, "Host.Acme.io": kindHost}},
		{"http://a.models.example.com http://x.example http://w.kserve.svc:443 http://w.kserve.svc.cluster.local http://t.test containerd://2.1.4", nil},
		{"arn:aws:iam::210987654321:role/admin", map[string]kind{"210987654321": kindAccount}},
		{"gke_my-project-123_us-central1-a_prod", map[string]kind{"my-project-123": kindAccount}},
		{"alice@prod.us-west-2.eksctl.io", map[string]kind{"alice": kindUser}},
		{"instance i-0123456789abcdef0, not i-123", map[string]kind{"i-0123456789abcdef0": kindInstance}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			f := findings{}
			f.scan(tt.text)
			want := tt.want
			if want == nil {
				want = map[string]kind{}
			}
			assert.Equal(t, want, map[string]kind(f))
		})
	}
}

func TestReplaceDoesNotSplitWords(t *testing.T) {
	rp := New([]byte("k")).replacer(findings{"gpu-node-1": kindNode, "gpu-node-1.corp.acme.io": kindHost, "10.0.0.1": kindIPv4})
	node, host, ip := rp.with["gpu-node-1"], rp.with["gpu-node-1.corp.acme.io"], rp.with["10.0.0.1"]
	got := rp.replace("gpu-node-10 gpu-node-1, xgpu-node-1 https://gpu-node-1.corp.acme.io/ 110.0.0.1 10.0.0.12 10.0.0.1:80 kube-proxy-gpu-node-1")
	assert.Equal(t, "gpu-node-10 "+node+", xgpu-node-1 https://"+host+"/ 110.0.0.1 10.0.0.12 "+ip+":80 kube-proxy-"+node, got)
	// A pseudonym is never rewritten, even when it holds a finding.
	rp = New([]byte("k")).replacer(findings{"node": kindNode, "example": kindNode})
	got = rp.replace("node example")
	assert.Equal(t, rp.with["node"]+" "+rp.with["example"], got)
}

func TestPseudonymsNeverShared(t *testing.T) {
	// Under key "k", n85982 and n125339 share their first 8 hex digits (found
	// by trying names in turn): both get 16, and still differ.
	x := New([]byte("k"))
	require.Equal(t, x.digits(kindNode, "n85982", 8), x.digits(kindNode, "n125339", 8))
	rp := x.replacer(findings{"n85982": kindNode, "n125339": kindNode, "n1": kindNode, "10.0.0.1": kindIPv4})
	assert.Regexp(t, `^node-[0-9a-f]{16}$`, rp.with["n85982"])
	assert.Regexp(t, `^node-[0-9a-f]{16}$`, rp.with["n125339"])
	assert.NotEqual(t, rp.with["n85982"], rp.with["n125339"])
	assert.Regexp(t, `^node-[0-9a-f]{8}$`, rp.with["n1"])
	assert.Regexp(t, `^ip-[0-9a-f]{8}$`, rp.with["10.0.0.1"])
	// Two spellings of one address are one value.
	rp = x.replacer(findings{"fd00::1": kindIPv6, "FD00:0::1": kindIPv6})
	assert.Equal(t, rp.with["fd00::1"], rp.with["FD00:0::1"])
}

func TestNodeNames(t *testing.T) {
	f := findings{}
	f.nodes(eksReport())
	assert.Equal(t, map[string]kind{eksNode: kindNode, eksNode2: kindNode, gkeNode: kindNode}, map[string]kind(f))

	getsNodes, names := nodeArgs("kubectl get nodes gpu-node-1 gpu-node-2 -o 'custom-columns=NAME:.metadata.name'")
	assert.True(t, getsNodes)
	assert.Equal(t, []string{"gpu-node-1", "gpu-node-2"}, names)
	getsNodes, names = nodeArgs("kubectl get deploy,pods -n kserve -o wide")
	assert.False(t, getsNodes)
	assert.Empty(t, names)
}

func TestParseTable(t *testing.T) {
	_, ok := parseTable([]string{
		"validatingwebhookconfiguration.admissionregistration.k8s.io/a.serving.kserve.io   1          0s",
		"mutatingwebhookconfiguration.admissionregistration.k8s.io/b.serving.kserve.io   2          0s",
	})
	assert.False(t, ok, "grep output of two tables is not one table")
	_, ok = parseTable([]string{"Error from server (Forbidden): nodes is forbidden"})
	assert.False(t, ok)
	tb, ok := parseTable([]string{
		"NAME   NOMINATED NODE   AGE",
		"a      <none>           1s",
		"bb                      2s",
	})
	require.True(t, ok)
	assert.Equal(t, []string{"NAME", "NOMINATED NODE", "AGE"}, tb.header)
	assert.Equal(t, [][]string{{"a", "<none>", "1s"}, {"bb", "", "2s"}}, tb.rows)
}
