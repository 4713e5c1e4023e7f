//go:build e2e

package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/audit"
	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Kubectl runs an evidence command line in a shell, with the rig's kubectl
// first on PATH, and returns what a terminal would show: stdout and stderr
// in the order written.
func Kubectl(t *testing.T, binDir, kubeconfig, as, command string) string {
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

// RigBin is the folder of the rig's binaries: AICONFORM_RIG_BIN, or bin/
// at the repository root.
func RigBin(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("AICONFORM_RIG_BIN"); d != "" {
		return d
	}
	d, err := filepath.Abs(filepath.Join(repoRoot(t), "bin"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(d, "kubectl")); err != nil {
		t.Fatalf("no kubectl in %s: run `make tools` first", d)
	}
	return d
}

// repoRoot finds the repository root above the test's folder (tests run in
// their package's folder, at any depth under e2e/).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the test's folder")
		dir = parent
	}
}

// Audit runs `check all` in-process through the audit package, as the
// CLI does, on the cluster kubeconfig names, read as user as (the admin
// when empty), and puts report.md and report.json on disk, as `--out`
// does, checking both were written.
func Audit(ctx context.Context, t *testing.T, kubeconfig, as string) audit.Result {
	t.Helper()
	live, err := cluster.NewLiveFor(kubeconfig, as, time.Now)
	require.NoError(t, err)
	plan, err := audit.NewPlan([]string{"all"}, nil, checks.Extensions{})
	require.NoError(t, err)
	a, err := audit.Open(ctx, live, time.Now)
	require.NoError(t, err)
	res, err := a.Run(ctx, plan, audit.Options{
		Run:    checks.RunOptions{Concurrency: audit.DefaultConcurrency, Timeout: audit.DefaultTimeout},
		Tool:   report.Tool{Name: "aiconform", Version: "e2e"},
		FailOn: checks.Must,
	})
	require.NoError(t, err)
	dir := t.TempDir()
	for name, render := range map[string]func(io.Writer, *report.Report) error{"report.md": report.Markdown, "report.json": report.JSON} {
		f, err := os.Create(filepath.Join(dir, name))
		require.NoError(t, err)
		require.NoError(t, render(f, res.Report))
		require.NoError(t, f.Close())
		st, err := os.Stat(f.Name())
		require.NoError(t, err)
		assert.NotZero(t, st.Size())
	}
	return res
}

// AssertEvidenceReRuns runs every evidence command of a run with the rig's
// kubectl and asserts it prints what the evidence says, AGE aside.
func AssertEvidenceReRuns(t *testing.T, binDir, kubeconfig, as string, out checks.Outcome) {
	t.Helper()
	blocks, exact := 0, 0
	for _, r := range out.Results {
		for _, step := range r.Evidence {
			blocks++
			got := Kubectl(t, binDir, kubeconfig, as, step.Command)
			if got == step.Output {
				exact++
				continue
			}
			want := withoutAge(step.Output)
			if strings.Contains(step.Command, "/proxy/api/v1/targets") {
				// A running Prometheus scrapes on, and lists its targets
				// in no fixed order: the re-run shows a later scrape of
				// the same targets.
				want, got = sameTargets(t, want), sameTargets(t, got)
			}
			if strings.Contains(step.Command, "/proxy/api/v1/query") {
				// An instant query answers at the time it is asked.
				want, got = evaluatedRE.ReplaceAllString(want, "EVALUATED"), evaluatedRE.ReplaceAllString(got, "EVALUATED")
			}
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

var ageRE = regexp.MustCompile(`\b\d+(s|m|h|d|y)(\d+(s|m|h))?\b`)

// withoutAge masks ages and the padding they shift, which change between
// the report's capture and the re-run.
// renewedRE matches a Lease's renewTime as kubectl prints it.
var renewedRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

// sameTargets is an answer of Prometheus' /api/v1/targets with its
// targets in the order of their scrape URLs and without when and how long
// each was last scraped.
func sameTargets(t *testing.T, out string) string {
	t.Helper()
	var a struct {
		Status string `json:"status"`
		Data   struct {
			ActiveTargets []map[string]any `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		return out // not an answer: compared as it is
	}
	for _, target := range a.Data.ActiveTargets {
		delete(target, "lastScrape")
		delete(target, "lastScrapeDuration")
	}
	sort.Slice(a.Data.ActiveTargets, func(i, j int) bool {
		return fmt.Sprint(a.Data.ActiveTargets[i]["scrapeUrl"]) < fmt.Sprint(a.Data.ActiveTargets[j]["scrapeUrl"])
	})
	b, err := json.Marshal(a)
	require.NoError(t, err)
	return string(b)
}

// evaluatedRE matches the evaluation time of an instant query's sample.
var evaluatedRE = regexp.MustCompile(`"value":\[[0-9.]+,`)

func withoutAge(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		lines = append(lines, strings.Join(strings.Fields(ageRE.ReplaceAllString(l, "AGE")), " "))
	}
	return strings.Join(lines, "\n")
}
