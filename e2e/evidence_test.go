//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/fixtures/scenarios"
	"github.com/aiconform/aiconform/report"
	"github.com/aiconform/aiconform/rig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// TestEvidenceReRuns is the promise of every report: each block's command,
// run with kubectl on the same cluster, prints the block's output (AGE
// aside). It runs every check live on each scenario, then runs every
// evidence command with the rig's kubectl and compares.
func TestEvidenceReRuns(t *testing.T) {
	mods, err := scenarios.OperatorModules()
	require.NoError(t, err)
	binDir := rigBin(t)
	for _, sc := range scenarios.All() {
		t.Run(sc.Name, func(t *testing.T) {
			// Each scenario has a control plane of its own; two at a time
			// keep both cores busy while one waits on CRDs.
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			c, err := rig.Start(ctx, rig.Options{Dir: t.TempDir(), BinDir: binDir, ControlPlaneOnly: true})
			require.NoError(t, err)
			defer c.Stop()
			require.NoError(t, scenarios.Build(ctx, c.RESTConfig(), mods, sc))

			kubeconfig := c.Kubeconfig()
			flags := genericclioptions.NewConfigFlags(false)
			flags.KubeConfig = &kubeconfig
			if sc.As != "" {
				flags.Impersonate = &sc.As
			}
			live, err := cluster.NewLive(flags, time.Now)
			require.NoError(t, err)
			profiles, err := checks.BuiltinProfiles()
			require.NoError(t, err)
			out := checks.Run(ctx, cluster.NewCache(live), profiles, checks.Registry(), checks.RunOptions{Concurrency: 4, Timeout: time.Minute}, time.Now)

			assertEvidenceReRuns(t, binDir, kubeconfig, sc.As, out)

			// The scenario's fault shows on the real API server as it does
			// in its recording: never a Pass.
			want, ok := faults[sc.Name]
			require.True(t, ok, "scenario %s has no expected verdict here", sc.Name)
			got := "none"
			for _, r := range out.Results {
				if r.Check.ID == want.check && r.Operator == want.operator {
					got = string(r.Status)
					assert.Equal(t, want.status, r.Status, "%s/%s on %s: %s", want.check, want.operator, sc.Name, r.Reason)
				}
			}
			require.NotEqual(t, "none", got, "no result for %s/%s", want.check, want.operator)
			catalog, err := checks.Catalog(checks.Registry())
			require.NoError(t, err)
			info, err := live.Info(ctx)
			require.NoError(t, err)
			writeReport(t, report.Build(report.Tool{Name: "aiconform", Version: "e2e"}, info, time.Now(), time.Now(), out, checks.Evaluate(catalog, out)))
		})
	}
}

// faults is the verdict each scenario is about.
var faults = map[string]struct {
	check, operator string
	status          checks.Status
}{
	"demo":                  {"crs-reconciled", "kserve", checks.Pass},
	"controller-crashloop":  {"controller-ready", "kserve", checks.Fail},
	"webhook-no-endpoints":  {"webhooks-served", "kserve", checks.Fail},
	"cr-unknown":            {"crs-reconciled", "kserve", checks.Fail},
	"gpu-notready":          {"gpu-allocatable", "", checks.Fail},
	"no-operator":           {"crds-established", "kserve", checks.Skip},
	"crd-missing":           {"crds-established", "kserve", checks.Fail},
	"forbidden-nodes":       {"gpu-allocatable", "", checks.Error},
	"lease-stale":           {"controller-lease", "kserve", checks.Fail},
	"device-plugin-missing": {"gpu-device-plugin", "", checks.Fail},
	"kustomize-installs":    {"crs-reconciled", "kubeflow-trainer", checks.Pass},
	"kueue-webhook-down":    {"webhooks-served", "kueue", checks.Fail},
}

// assertEvidenceReRuns runs every evidence command of a run with the rig's
// kubectl and asserts it prints what the evidence says, AGE aside.
func assertEvidenceReRuns(t *testing.T, binDir, kubeconfig, as string, out checks.Outcome) {
	t.Helper()
	blocks, exact := 0, 0
	for _, r := range out.Results {
		for _, step := range r.Evidence {
			blocks++
			got := kubectl(t, binDir, kubeconfig, as, step.Command)
			if got == step.Output {
				exact++
				continue
			}
			want := withoutAge(step.Output)
			if strings.Contains(step.Command, "RENEWED:.spec.renewTime") {
				// A running leader renews every few seconds: the re-run
				// shows a later renewal of the same holder.
				want, got = renewedRE.ReplaceAllString(want, "RENEWED"), renewedRE.ReplaceAllString(got, "RENEWED")
			}
			assert.Equal(t, want, withoutAge(got),
				"%s (%s): `%s` prints something else than the report says", r.Check.ID, r.Operator, step.Command)
		}
	}
	require.NotZero(t, blocks, "no evidence at all")
	t.Logf("%d evidence blocks re-run, %d byte for byte, the rest equal but for AGE", blocks, exact)
}

// kubectl runs an evidence command line in a shell, with the rig's kubectl
// first on PATH, and returns what a terminal would show: stdout and stderr
// in the order written.
func kubectl(t *testing.T, binDir, kubeconfig, as, command string) string {
	t.Helper()
	if as != "" {
		command = strings.Replace(command, "kubectl ", "kubectl --as="+as+" ", 1)
	}
	cmd := exec.Command("bash", "-c", command)
	cmd.Env = append(os.Environ(), "PATH="+binDir+":"+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	// kubectl exits 1 on a refused read and grep on no match: the output is
	// what counts.
	_ = cmd.Run()
	return buf.String()
}

var ageRE = regexp.MustCompile(`\b\d+(s|m|h|d|y)(\d+(s|m|h))?\b`)

// withoutAge masks ages and the padding they shift, which change between
// the report's capture and the re-run.
// renewedRE matches a Lease's renewTime as kubectl prints it.
var renewedRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

func withoutAge(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		lines = append(lines, strings.Join(strings.Fields(ageRE.ReplaceAllString(l, "AGE")), " "))
	}
	return strings.Join(lines, "\n")
}

func rigBin(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("AICONFORM_RIG_BIN"); d != "" {
		return d
	}
	d, err := filepath.Abs("../bin")
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(d, "kubectl")); err != nil {
		t.Fatalf("no kubectl in %s: run `make tools` first", d)
	}
	return d
}
