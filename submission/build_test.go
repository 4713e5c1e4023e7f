package submission

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

var clock = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// The checks of robust_controller, as the catalog names them.
var robustChecks = []checks.Meta{
	{ID: "crds-established", Title: "Operator CRDs established", PerOperator: true},
	{ID: "controller-ready", Title: "Controller Deployment available, pods Ready", PerOperator: true},
	{ID: "webhooks-served", Title: "Webhooks registered and served", PerOperator: true},
	{ID: "crs-reconciled", Title: "Custom resources reconciled into children", PerOperator: true},
}

// scenario is a hand-made run: for each operator the cluster has, the
// status of each robust_controller check (pass when not named); and the
// status of the GPU requirement's one check.
type scenario struct {
	live      bool
	operators map[string]map[string]checks.Status
	gpu       checks.Status
}

// makeReport turns a scenario into a sealed report the way a run does:
// results, checks.Evaluate, report.Build, Seal. It does not depend on the
// catalog or the recordings, which change with the checks.
func makeReport(t *testing.T, sc scenario) *report.Report {
	t.Helper()
	profiles := []*checks.Profile{
		{Name: "kserve", Title: "KServe", Groups: []string{"serving.kserve.io"}},
		{Name: "kuberay", Title: "KubeRay", Groups: []string{"ray.io"}},
		{Name: "kueue", Title: "Kueue", Groups: []string{"kueue.x-k8s.io"}},
	}
	var out checks.Outcome
	var ids []string
	for _, m := range robustChecks {
		ids = append(ids, m.ID)
	}
	for i, p := range profiles {
		statuses, found := sc.operators[p.Name]
		d := checks.Detection{Profile: p, Found: found}
		if found {
			d.CRDs = []string{"things." + p.Groups[0]}
		}
		out.Detections = append(out.Detections, d)
		for _, m := range robustChecks {
			r := checks.Result{Check: m, Operator: p.Name, Status: checks.Skip, Reason: p.Title + " is not installed",
				Started: clock.Add(time.Duration(i) * time.Second), Finished: clock.Add(time.Duration(i)*time.Second + 200*time.Millisecond)}
			if found {
				r.Status = checks.Pass
				if s, ok := statuses[m.ID]; ok {
					r.Status = s
				}
				r.Reason = fmt.Sprintf("%s of %s: %s", m.ID, p.Title, r.Status)
				r.Evidence = []checks.Step{{
					Command:    "kubectl get " + m.ID + " -n " + p.Name,
					Output:     "NAME    READY   AGE\n" + p.Name + "   1/1     5d\n",
					CapturedAt: clock.Add(time.Duration(i) * time.Second),
				}}
			}
			out.Results = append(out.Results, r)
		}
	}
	gpuStatus := sc.gpu
	if gpuStatus == "" {
		gpuStatus = checks.Pass
	}
	out.Results = append(out.Results, checks.Result{
		Check: checks.Meta{ID: "gpu-allocatable", Title: "GPU nodes Ready, accelerators allocatable"}, Status: gpuStatus,
		Reason: "gpu-1: " + string(gpuStatus), Started: clock, Finished: clock.Add(time.Second),
	})
	reqs := []checks.Requirement{
		{ID: "robust_controller", Title: "A complex AI operator with CRDs is installed and works", Category: "operator",
			Level: checks.Must, Program: "CNCF Kubernetes AI Conformance", PerOperator: true, Checks: ids},
		{ID: "gpu_nodes_allocatable", Title: "Accelerator nodes are Ready and their accelerators allocatable", Category: "accelerators",
			Level: checks.Must, Program: "aiconform", Checks: []string{"gpu-allocatable"}},
	}
	info := cluster.Info{Live: sc.live, Context: "prod", Server: "https://10.0.0.1:6443", ServerVersion: "v1.36.2", ClusterID: "uid-1"}
	if !sc.live {
		info = cluster.Info{Source: "demo", Context: "demo", ServerVersion: "v1.37.2", ClusterID: "uid-2", RecordedAt: clock.Add(-time.Hour)}
	}
	r := report.Build(report.Tool{Name: "aiconform", Version: "v0.1.0"}, info, clock, clock.Add(3*time.Second), out, checks.Evaluate(reqs, out))
	require.NoError(t, r.Seal(checks.Must))
	return r
}

// demo is the scenario of the demo recording: KServe and KubeRay both
// pass, Kueue is absent.
var demo = scenario{operators: map[string]map[string]checks.Status{"kserve": nil, "kuberay": nil}}

// metadataFor is a complete metadata.yaml for a checklist version.
func metadataFor(version string) string {
	md := `platformName: Acme AI Platform
platformVersion: 1.10
vendorName: "Acme, Inc."
websiteUrl: https://acme.example
repoUrl: https://github.com/acme/platform
documentationUrl: https://docs.acme.example
productLogoUrl: https://acme.example/logo.svg
description: 'Acme''s Kubernetes distribution: "batteries included" # not a comment'
contactEmailAddress: conformance@acme.example
`
	if versionAtLeast(version, "1.35") {
		md += "k8sConformanceUrl: https://github.com/cncf/k8s-conformance/tree/master/v" + version + "/acme\n"
	}
	return md
}

func buildFrom(t *testing.T, tplName string, tplData []byte, md string, rep *report.Report) *Package {
	t.Helper()
	tpl, err := ParseTemplate(tplName, tplData)
	require.NoError(t, err)
	meta, err := tpl.ParseMetadata("metadata.yaml", []byte(md))
	require.NoError(t, err)
	p, err := Build(BuildInput{Template: tpl, Metadata: meta, Report: rep})
	require.NoError(t, err)
	return p
}

func fileOf(t *testing.T, p *Package, name string) []byte {
	t.Helper()
	for _, f := range p.Files {
		if f.Name == name {
			return f.Data
		}
	}
	t.Fatalf("the package has no %s (it has %v)", name, p.FileNames())
	return nil
}

func assertOnlyValuesChanged(t *testing.T, template, built []byte) {
	t.Helper()
	assert.NoError(t, onlyValuesChanged(template, built))
}

// onlyValuesChanged holds a built PRODUCT.yaml to the template line by
// line. The lines build may change are a requirement's status, evidence or
// notes, and a metadata value. With those taken out, both files are the
// same lines; and each such line of the template is still there, with the
// same key, in the same order, ending in the same comment.
func onlyValuesChanged(template, built []byte) error {
	tpl, err := ParseProduct(template)
	if err != nil {
		return err
	}
	keys := []string{"k8sConformanceUrl"}
	for k := range tpl.Metadata {
		keys = append(keys, regexp.QuoteMeta(k))
	}
	valueLineRE := regexp.MustCompile(`^(    \s*(?:- )?(?:status|evidence|notes):|  (?:` + strings.Join(keys, "|") + `):)`)
	commentRE := regexp.MustCompile(`^\s+\w+: (?:""|\[\])(\s+#.*)$`)
	split := func(b []byte) (rest, values []string) {
		for _, l := range strings.Split(string(b), "\n") {
			if valueLineRE.MatchString(l) {
				values = append(values, l)
			} else {
				rest = append(rest, l)
			}
		}
		return rest, values
	}
	tplRest, tplValues := split(template)
	gotRest, gotValues := split(built)
	if len(tplRest) != len(gotRest) {
		return fmt.Errorf("%d lines other than values, the template has %d", len(gotRest), len(tplRest))
	}
	for i := range tplRest {
		if tplRest[i] != gotRest[i] {
			return fmt.Errorf("a line that is not a value line changed: %q became %q", tplRest[i], gotRest[i])
		}
	}
	key := func(l string) string { return valueLineRE.FindString(l) }
	j := 0
	for _, tv := range tplValues {
		for j < len(gotValues) && key(gotValues[j]) != key(tv) {
			j++ // a key build inserted
		}
		if j == len(gotValues) {
			return fmt.Errorf("value line %q is gone", tv)
		}
		if m := commentRE.FindStringSubmatch(tv); m != nil && !strings.HasSuffix(gotValues[j], m[1]) {
			return fmt.Errorf("the comment of %q is gone: %q", tv, gotValues[j])
		}
		j++
	}
	return nil
}

// The line comparison itself must catch what it is there to catch.
func TestOnlyValuesChangedCatches(t *testing.T) {
	tpl := mustRead(t, templatePath(t, "1.33"))
	p := buildFrom(t, "AIConformance-1.33.yaml", tpl, metadataFor("1.33"), makeReport(t, demo))
	built := string(fileOf(t, p, "PRODUCT.yaml"))
	require.NoError(t, onlyValuesChanged(tpl, []byte(built)))
	require.Contains(t, built, "    # Must provide a justification when status is N/A\n", "1.33's comments are kept")
	for name, mutate := range map[string]func(string) string{
		"a description":  func(s string) string { return strings.Replace(s, "simple counts", "simple count", 1) },
		"a level":        func(s string) string { return strings.Replace(s, "level: SHOULD", "level: MUST", 1) },
		"a comment line": func(s string) string { return strings.Replace(s, "# Notes: This", "# Notes: this", 1) },
		"a comment on a value": func(s string) string {
			return strings.Replace(s, "# Must provide a justification", "# must provide", 1)
		},
		"an entry's order": func(s string) string {
			return strings.Replace(strings.Replace(s, "id: gang_scheduling", "id: TMP", 1), "id: robust_controller", "id: gang_scheduling", 1)
		},
		"a blank line": func(s string) string { return strings.Replace(s, "\n\nspec:", "\nspec:", 1) },
		"a key":        func(s string) string { return strings.Replace(s, "  vendorName:", "  vendor:", 1) },
	} {
		t.Run(name, func(t *testing.T) {
			mutated := mutate(built)
			require.NotEqual(t, built, mutated)
			assert.Error(t, onlyValuesChanged(tpl, []byte(mutated)))
		})
	}
}

// The real templates, 1.33 to 1.37, built from the demo recording: only
// values change, robust_controller is set from the report, everything else
// is left for the vendor, and lint finds nothing but the MUSTs aiconform
// cannot judge.
func TestBuildRealTemplates(t *testing.T) {
	rep := makeReport(t, demo)
	all, err := Checklists()
	require.NoError(t, err)
	for _, c := range all {
		t.Run(c.Version, func(t *testing.T) {
			path := templatePath(t, c.Version)
			tplData, err := os.ReadFile(path)
			require.NoError(t, err)
			p := buildFrom(t, path, tplData, metadataFor(c.Version), rep)
			assert.Equal(t, []string{"evidence/robust_controller.md", "report.md", "report.json", "junit.xml", "PRODUCT.yaml"}, p.FileNames())
			assert.False(t, p.TemplateWorkedOn, "the official template")

			built := fileOf(t, p, "PRODUCT.yaml")
			assertOnlyValuesChanged(t, tplData, built)
			tpl, err := ParseProduct(tplData)
			require.NoError(t, err)
			got, err := ParseProduct(built)
			require.NoError(t, err)
			require.Len(t, got.Categories, len(tpl.Categories))
			var mustLeft []string
			for ci, cat := range got.Categories {
				require.Len(t, cat.Items, len(tpl.Categories[ci].Items))
				for ii, it := range cat.Items {
					want := tpl.Categories[ci].Items[ii]
					assert.Equal(t, want.ID, it.ID)
					assert.Equal(t, want.Description, it.Description, it.ID)
					assert.Equal(t, want.Level, it.Level, it.ID)
					if it.ID == "robust_controller" {
						continue
					}
					assert.Empty(t, it.Status, it.ID)
					assert.Empty(t, it.Evidence, it.ID)
					assert.True(t, strings.HasPrefix(it.Notes, VendorNotePrefix), "%s: %q", it.ID, it.Notes)
					if it.Level == LevelMust {
						mustLeft = append(mustLeft, it.ID)
					}
				}
			}
			// aiconform judges cluster_autoscaling and ai_service_metrics,
			// but this report did not.
			assert.Contains(t, itemOf(t, got, "cluster_autoscaling").Notes, "the report build was given did not judge cluster_autoscaling")
			assert.Contains(t, itemOf(t, got, "ai_service_metrics").Notes, "the report build was given did not judge ai_service_metrics")
			if c.Version == "1.33" {
				assert.Contains(t, itemOf(t, got, "dra_support").Notes, "or leave status and evidence empty to skip this SHOULD")
			}
			rc := itemOf(t, got, "robust_controller")
			assert.Equal(t, "Implemented", rc.Status)
			wantEvidence := []string{"evidence/robust_controller.md"}
			if c.FileEvidence {
				wantEvidence = append(wantEvidence, "file://junit.xml#robust_controller")
			}
			assert.Equal(t, wantEvidence, rc.Evidence)
			assert.Contains(t, rc.Notes, "carried by KServe (kserve), every check passed")
			assert.Contains(t, rc.Notes, "against a recording (demo), not a live cluster")
			assert.Equal(t, "Acme, Inc.", got.Metadata["vendorName"])
			assert.Equal(t, "1.10", got.Metadata["platformVersion"])
			assert.Equal(t, `Acme's Kubernetes distribution: "batteries included" # not a comment`, got.Metadata["description"])
			assert.Equal(t, "v"+c.Version, got.Metadata["kubernetesVersion"])

			dir := filepath.Join(t.TempDir(), "v"+c.Version, "acme")
			require.NoError(t, p.Write(dir, false))
			res, err := LintDir(dir, LintOptions{Template: path})
			require.NoError(t, err)
			// Exactly the MUSTs aiconform cannot judge are flagged: not
			// Implemented, and their empty status not a status.
			var flagged, want []string
			for _, pr := range res.Problems {
				flagged = append(flagged, pr.Requirement+" "+pr.Rule)
			}
			sort.Strings(mustLeft)
			for _, id := range mustLeft {
				want = append(want, id+" "+RuleMustImplemented, id+" "+RuleStatusInvalid)
			}
			assert.Equal(t, want, flagged)
		})
	}
}

func itemOf(t *testing.T, p *Product, id string) Item {
	t.Helper()
	for _, c := range p.Categories {
		for _, it := range c.Items {
			if it.ID == id {
				return it
			}
		}
	}
	t.Fatalf("no requirement %s", id)
	return Item{}
}

// The junit caveat: KServe crash-loops while KubeRay carries
// robust_controller. report.md keeps KServe's failures; the junit.xml the
// submission ships skips them, saying why, so that the program does not
// reject a met requirement; a requirement nobody carries keeps every
// failure and cites no testcase.
func TestBuildJUnitCaveat(t *testing.T) {
	tplData, err := os.ReadFile(templatePath(t, "1.37"))
	require.NoError(t, err)
	kserveBroken := map[string]checks.Status{"controller-ready": checks.Fail, "webhooks-served": checks.Fail}
	webhooksBroken := map[string]checks.Status{"webhooks-served": checks.Fail}
	tests := []struct {
		name         string
		sc           scenario
		status       string
		skipped      []string
		cites        bool
		failingCases []string
	}{
		{"KServe broken, KubeRay carries", scenario{operators: map[string]map[string]checks.Status{"kserve": kserveBroken, "kuberay": nil}},
			"Implemented", []string{"controller-ready/kserve", "webhooks-served/kserve"}, true, nil},
		{"KServe could not be read, KubeRay carries", scenario{operators: map[string]map[string]checks.Status{"kserve": {"controller-ready": checks.Error}, "kuberay": nil}},
			"Implemented", []string{"controller-ready/kserve"}, true, nil},
		{"both pass", demo, "Implemented", nil, true, nil},
		// gpu_nodes_allocatable fails, but the submission does not cite it.
		{"GPU node NotReady", scenario{operators: demo.operators, gpu: checks.Fail}, "Implemented", nil, true, nil},
		// Not met: PRODUCT.yaml says so, and junit.xml leaves it out, so
		// that its failures do not fail the claims that cite junit.xml.
		{"no operator", scenario{}, "Not Implemented", nil, false, nil},
		{"no operator carries", scenario{operators: map[string]map[string]checks.Status{"kserve": webhooksBroken, "kuberay": webhooksBroken}},
			"Partially Implemented", nil, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := makeReport(t, tt.sc)
			p := buildFrom(t, "AIConformance-1.37.yaml", tplData, metadataFor("1.37"), rep)
			var skipped []string
			for _, s := range p.Skipped {
				skipped = append(skipped, s.Testcase)
				assert.Equal(t, "kuberay", s.Carrier)
			}
			assert.Equal(t, tt.skipped, skipped)
			assert.Equal(t, []string{"gpu_nodes_allocatable"}, p.Omitted)

			cases, err := ParseJUnit(bytes.NewReader(fileOf(t, p, "junit.xml")))
			require.NoError(t, err)
			var failing []string
			for _, c := range cases {
				assert.NotEqual(t, "gpu-allocatable", c.Name, "an uncited requirement is left out")
				if c.Outcome == OutcomeFailed {
					failing = append(failing, c.Name)
				}
			}
			assert.ElementsMatch(t, tt.failingCases, failing)
			if tt.status != "Implemented" {
				assert.Equal(t, []string{"robust_controller"}, p.Unmet)
			} else {
				assert.Empty(t, p.Unmet)
			}

			junitXML := string(fileOf(t, p, "junit.xml"))
			md := string(fileOf(t, p, "report.md"))
			for _, s := range p.Skipped {
				check := strings.Split(s.Testcase, "/")[0]
				assert.Contains(t, junitXML, "not counted: kserve does not carry robust_controller, which this submission claims through kuberay; the real status of this check is "+s.Status+": "+check+" of KServe: "+s.Status)
				assert.Contains(t, md, "### "+check+" (kserve)")
				assert.Contains(t, md, "**Status:** "+s.Status+" — "+check+" of KServe: "+s.Status, "report.md shows the check as it is")
			}
			assert.Equal(t, rep.Digest, jsonDigest(t, fileOf(t, p, "report.json")), "report.json is the sealed report, unchanged")

			prod, err := ParseProduct(fileOf(t, p, "PRODUCT.yaml"))
			require.NoError(t, err)
			rc := itemOf(t, prod, "robust_controller")
			assert.Equal(t, tt.status, rc.Status)
			assert.Equal(t, tt.cites, contains(rc.Evidence, "file://junit.xml#robust_controller"), "%v", rc.Evidence)

			dir := filepath.Join(t.TempDir(), "v1.37", "acme")
			require.NoError(t, p.Write(dir, false))
			res, err := LintDir(dir, LintOptions{Template: templatePath(t, "1.37")})
			require.NoError(t, err)
			var robust []string
			for _, pr := range res.Problems {
				if pr.Requirement == "robust_controller" {
					robust = append(robust, pr.Rule)
				}
			}
			if tt.status == "Implemented" {
				assert.Empty(t, robust)
			} else {
				assert.Equal(t, []string{RuleMustImplemented}, robust)
			}
		})
	}
}

func jsonDigest(t *testing.T, data []byte) string {
	t.Helper()
	r, err := report.Read(bytes.NewReader(data))
	require.NoError(t, err)
	return r.Digest
}

func TestMetadataRefused(t *testing.T) {
	tpl36, err := ParseTemplate("AIConformance-1.36.yaml", mustRead(t, templatePath(t, "1.36")))
	require.NoError(t, err)
	tpl34, err := ParseTemplate("AIConformance-1.34.yaml", mustRead(t, templatePath(t, "1.34")))
	require.NoError(t, err)
	full := metadataFor("1.36")
	replace := func(old, new string) string {
		require.Contains(t, full, old)
		return strings.Replace(full, old, new, 1)
	}
	tests := []struct {
		name string
		tpl  *Template
		md   string
		want []string
	}{
		{"a placeholder", tpl36, replace("vendorName: \"Acme, Inc.\"", `vendorName: "[Vendor Name]"`),
			[]string{`line 3: vendorName is a placeholder, "[Vendor Name]": write the real value`}},
		{"a placeholder inside a value", tpl36, replace("platformName: Acme AI Platform", "platformName: Acme [Platform Name]"),
			[]string{"line 1: platformName is a placeholder"}},
		{"an empty value", tpl36, replace("repoUrl: https://github.com/acme/platform", `repoUrl: ""`),
			[]string{"line 5: repoUrl is empty"}},
		{"a null value", tpl36, replace("repoUrl: https://github.com/acme/platform", `repoUrl:`),
			[]string{"line 5: repoUrl is empty"}},
		{"an unknown key with a hint", tpl36, replace("vendorName:", "vendorname:"),
			[]string{`line 3: unknown key "vendorname" (did you mean "vendorName"?); checklist 1.36's metadata keys are kubernetesVersion, platformName,`, "vendorName is missing: the template has \"[Vendor Name]\" there"}},
		{"an unknown key with no near one", tpl36, full + "productName: acme\n",
			[]string{`line 11: unknown key "productName"; checklist 1.36's`}},
		{"k8sConformanceUrl where the checklist has none", tpl34, metadataFor("1.34") + "k8sConformanceUrl: https://github.com/cncf/k8s-conformance/tree/master/v1.34/acme\n",
			[]string{`line 10: unknown key "k8sConformanceUrl"; checklist 1.34's metadata keys are`}},
		{"another minor", tpl36, full + "kubernetesVersion: v1.35\n",
			[]string{`line 11: kubernetesVersion "v1.35" is Kubernetes 1.35, but the template is checklist 1.36`}},
		{"not a version", tpl36, full + "kubernetesVersion: latest\n",
			[]string{`line 11: kubernetesVersion "latest" is not a version like v1.36`}},
		{"k8sConformanceUrl missing where required", tpl36, replace("k8sConformanceUrl: https://github.com/cncf/k8s-conformance/tree/master/v1.36/acme\n", ""),
			[]string{"k8sConformanceUrl is missing: checklist 1.36 requires it"}},
		{"k8sConformanceUrl malformed", tpl36, replace("tree/master/v1.36/acme", "blob/master/v1.36/acme"),
			[]string{`line 10: k8sConformanceUrl "https://github.com/cncf/k8s-conformance/blob/master/v1.36/acme" does not match`}},
		{"a key left out", tpl36, replace("contactEmailAddress: conformance@acme.example\n", ""),
			[]string{`contactEmailAddress is missing: the template has "[Contact Email Address]" there`}},
		{"a nested value", tpl36, replace("websiteUrl: https://acme.example", "websiteUrl:\n  main: https://acme.example"),
			[]string{"line 5: websiteUrl is not a single value"}},
		{"a key twice", tpl36, full + "platformName: Other\n",
			[]string{"line 11: platformName is given twice"}},
		{"not a mapping", tpl36, "- platformName: Acme\n", []string{"want a mapping of metadata keys to values (kubernetesVersion, platformName,"}},
		{"empty", tpl36, "", []string{"want a mapping of metadata keys to values"}},
		{"not YAML", tpl36, "platformName: [Acme\n", []string{"metadata.yaml: yaml: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.tpl.ParseMetadata("metadata.yaml", []byte(tt.md))
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}

	t.Run("complete metadata is accepted", func(t *testing.T) {
		md, err := tpl36.ParseMetadata("metadata.yaml", []byte(full+"kubernetesVersion: v1.36.2\n"))
		require.NoError(t, err)
		assert.Equal(t, "v1.36.2", md.Values["kubernetesVersion"])
		assert.Equal(t, "1.10", md.Values["platformVersion"], "a number is kept as written")
	})
	t.Run("a filled-in PRODUCT.yaml needs no metadata", func(t *testing.T) {
		tpl, err := ParseTemplate("PRODUCT.yaml", mustRead(t, filepath.Join(sharedCNCF, "examples", "v1.36-orkestrix-PRODUCT.yaml")))
		require.NoError(t, err)
		_, err = tpl.ParseMetadata("metadata.yaml", []byte("{}\n"))
		assert.NoError(t, err)
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) && strings.HasPrefix(path, sharedCNCF) {
		missingShared(t, "%s is not there: the CNCF files live next to the repository", path)
	}
	require.NoError(t, err)
	return data
}

// A PRODUCT.yaml a vendor has worked on, given as the template: entries
// aiconform cannot judge keep every byte, including the vendor's own
// layout; robust_controller is rewritten from the report.
func TestBuildKeepsVendorEntries(t *testing.T) {
	tplData := mustRead(t, templatePath(t, "1.36"))
	product := string(tplData)
	fill := func(id, old, new string) {
		i := strings.Index(product, "- id: "+id+"\n")
		require.GreaterOrEqual(t, i, 0, id)
		j := i + strings.Index(product[i:], old)
		require.Greater(t, j, i)
		product = product[:j] + new + product[j+len(old):]
	}
	gang := `status: Implemented
      evidence:
      - https://docs.acme.example/gang  # Kueue docs
      - evidence/kueue.md
      notes: >-
        Kueue with
        all-or-nothing admission.`
	fill("gang_scheduling", "status: \"\"\n      evidence: []\n      notes: \"\"", gang)
	fill("gpu_sharing", `notes: ""`, `notes: "not offered yet"`)
	fill("robust_controller", "status: \"\"\n      evidence: []\n      notes: \"\"", "status: 'Implemented' # by hand\n      evidence:\n        - https://old.example/rc\n      notes: |\n        written by hand\n      # end of the entry")
	rep := makeReport(t, demo)
	p := buildFrom(t, "PRODUCT.yaml", []byte(product), metadataFor("1.36"), rep)
	built := string(fileOf(t, p, "PRODUCT.yaml"))

	assert.Contains(t, built, "      "+gang+"\n", "a kept entry is byte for byte the vendor's")
	assert.Contains(t, built, `notes: "not offered yet"`)
	assert.Contains(t, built, "status: \"Implemented\" # by hand\n      evidence: [\"evidence/robust_controller.md\"]\n      notes: \"Checked by aiconform v0.1.0 (2026-11-29) against a recording (demo), not a live cluster. Implemented: carried by KServe (kserve), every check passed. The commands, their output and when they ran: evidence/robust_controller.md.\"\n      # end of the entry")
	assert.NotContains(t, built, "old.example")

	actions := map[string]BuiltItem{}
	for _, it := range p.Items {
		actions[it.ID] = it
	}
	assert.Equal(t, ActionKept, actions["gang_scheduling"].Action)
	assert.Equal(t, "Implemented", actions["gang_scheduling"].Status)
	assert.Equal(t, ActionKept, actions["gpu_sharing"].Action)
	assert.Equal(t, ActionSet, actions["robust_controller"].Action)
	assert.True(t, actions["robust_controller"].Replaced)
	assert.True(t, p.TemplateWorkedOn)
	assert.Equal(t, ActionVendor, actions["ai_inference"].Action)

	// Built again from its own output, nothing moves: the vendor notes
	// build left are its own, and rewritten the same.
	again := buildFrom(t, "PRODUCT.yaml", []byte(built), "{}\n", rep)
	assert.Equal(t, built, string(fileOf(t, again, "PRODUCT.yaml")))
	for _, it := range again.Items {
		assert.Equal(t, actions[it.ID].Action, it.Action, it.ID)
		assert.False(t, it.Replaced, "%s: build's own entry is not the vendor's", it.ID)
	}
}

// Layouts a PRODUCT.yaml may have that the official templates do not:
// missing keys, block scalars, tags, null values, CRLF, no final line break.
func TestBuildEditsOtherLayouts(t *testing.T) {
	rep := makeReport(t, demo)
	head := "metadata:\n  kubernetesVersion: v1.36 # the checklist\n  platformName: \"[Platform Name]\"\n"
	md := "platformName: Acme\nk8sConformanceUrl: https://github.com/cncf/k8s-conformance/tree/main/v1.36/acme\n"
	tests := []struct {
		name, spec, want string
	}{
		{
			"keys missing",
			"spec:\n  operator:\n    - id: robust_controller\n      level: MUST\n  security:\n    - id: secure_accelerator_access\n      level: MUST # keep\n",
			"spec:\n  operator:\n    - id: robust_controller\n      level: MUST\n      status: \"Implemented\"\n      evidence: [\"evidence/robust_controller.md\"]\n      notes: \"Checked by",
		},
		{
			"block scalar, null and tag",
			"spec:\n  operator:\n    - id: robust_controller\n      status: !!str Implemented\n      notes: |\n        line one\n          # not a comment\n      # a comment\n      evidence:\n",
			"      status: \"Implemented\"\n      notes: \"Checked by",
		},
		{
			"flow collections over lines",
			"spec:\n  operator:\n    - id: robust_controller\n      evidence: [a, \"b]\", # c\n        'd''e']\n      notes: plain\n        continued # c\n      status: ~\n",
			"      evidence: [\"evidence/robust_controller.md\"]\n      notes: \"Checked by",
		},
	}
	for _, tt := range tests {
		for _, crlf := range []bool{false, true} {
			for _, finalBreak := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s crlf=%v final-break=%v", tt.name, crlf, finalBreak), func(t *testing.T) {
					src := head + tt.spec
					if !finalBreak {
						src = strings.TrimSuffix(src, "\n")
					}
					if crlf {
						src = strings.ReplaceAll(src, "\n", "\r\n")
					}
					p := buildFrom(t, "PRODUCT.yaml", []byte(src), md, rep)
					built := string(fileOf(t, p, "PRODUCT.yaml"))
					norm := strings.ReplaceAll(built, "\r\n", "\n")
					assert.Contains(t, norm, tt.want)
					assert.Contains(t, norm, "  kubernetesVersion: v1.36 # the checklist\n  platformName: \"Acme\"\n  k8sConformanceUrl: \"https://github.com/cncf/k8s-conformance/tree/main/v1.36/acme\"\n")
					if crlf {
						assert.NotRegexp(t, `[^\r]\n`, built, "every line break stays CRLF")
					}
					assert.Equal(t, finalBreak, strings.HasSuffix(built, "\n"))
					if strings.Contains(tt.spec, "secure_accelerator_access") {
						assert.Contains(t, norm, "      level: MUST # keep\n      notes: \"To fill in: ")
						assert.Contains(t, norm, "\n      status: \"\"\n      evidence: []")
					}
					var doc yaml.Node
					require.NoError(t, yaml.Unmarshal([]byte(built), &doc))
				})
			}
		}
	}
}

func TestShorten(t *testing.T) {
	assert.Equal(t, "short", shorten("short", 10))
	assert.Equal(t, "one two…", shorten("one two three", 10))
	assert.Equal(t, "ééééé…", shorten("éééééééééé", 5), "runes, not bytes")
	assert.Equal(t, "a bcdefgh…", shorten("a bcdefghijklmnop", 9), "no word boundary in the second half: cut mid-word")
}

func TestYAMLQuoteRoundTrip(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quote " and backslash \`, "tab\tnew\nline\r", "# not a comment", "colon: value", "[Vendor Name]",
		"unicode: é ü 漢字 🚀", "bom \ufeff line sep \u2028 nel \u0085 bell \a del \x7f", "- dash", "'single'", "{flow}",
	} {
		var got string
		require.NoError(t, yaml.Unmarshal([]byte("v: "+yamlQuote(s)+"\n"), &struct{ V *string }{&got}), s)
		assert.Equal(t, s, got)
		assert.NotContains(t, yamlQuote(s), "\n")
	}
}

func TestWriteRefusesNonEmpty(t *testing.T) {
	rep := makeReport(t, demo)
	p := buildFrom(t, "AIConformance-1.36.yaml", mustRead(t, templatePath(t, "1.36")), metadataFor("1.36"), rep)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mine.md"), []byte("vendor's own\n"), 0o644))
	assert.ErrorIs(t, p.Write(dir, false), ErrDirNotEmpty)
	_, err := os.Stat(filepath.Join(dir, "PRODUCT.yaml"))
	assert.True(t, os.IsNotExist(err), "nothing is written when refused")

	require.NoError(t, p.Write(dir, true))
	assert.Equal(t, p.FileNames(), p.Changed)
	product := filepath.Join(dir, "PRODUCT.yaml")
	before, err := os.Stat(product)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report.md"), []byte("edited\n"), 0o644))
	require.NoError(t, p.Write(dir, true))
	assert.Equal(t, []string{"report.md"}, p.Changed, "only what differs is written again")
	after, err := os.Stat(product)
	require.NoError(t, err)
	assert.Equal(t, before.ModTime(), after.ModTime())
	mine, err := os.ReadFile(filepath.Join(dir, "mine.md"))
	require.NoError(t, err)
	assert.Equal(t, "vendor's own\n", string(mine), "--force leaves other files alone")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"PRODUCT.yaml", "evidence", "junit.xml", "mine.md", "report.json", "report.md"}, names, "no temporary file is left")

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	assert.Error(t, p.Write(file, true))
}

func TestWriteSummary(t *testing.T) {
	rep := makeReport(t, scenario{operators: map[string]map[string]checks.Status{"kserve": {"webhooks-served": checks.Fail, "controller-ready": checks.Fail}, "kuberay": nil}})
	p := buildFrom(t, "AIConformance-1.36.yaml", mustRead(t, templatePath(t, "1.36")), metadataFor("1.36"), rep)
	var buf bytes.Buffer
	require.NoError(t, p.WriteSummary(&buf))
	out := buf.String()
	assert.Regexp(t, `(?m)^REQUIREMENT\s+LEVEL\s+STATUS\s+BY$`, out)
	assert.Regexp(t, `(?m)^robust_controller\s+MUST\s+Implemented\s+set by aiconform: carried by kuberay$`, out)
	assert.Regexp(t, `(?m)^gang_scheduling\s+MUST\s+-\s+left for the vendor: the report did not judge gang_scheduling$`, out, "a report without the requirement leaves it, and says why")
	assert.Contains(t, out, "1 set by aiconform, 0 kept from the template, 13 left for the vendor (7 of them MUST)\n")
	assert.Contains(t, out, "junit.xml: skipped controller-ready/kserve (fail), webhooks-served/kserve (fail): robust_controller is claimed through kuberay")
	assert.Contains(t, out, "junit.xml: left out gpu_nodes_allocatable, which PRODUCT.yaml does not cite")
	assert.Contains(t, out, "warning: the results come from the recording demo, not a live cluster")
	assert.Contains(t, out, "warning: the cluster runs Kubernetes v1.37.2 but this is checklist 1.36")
}

func TestParseTemplateRefuses(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"no checklist", "metadata:\n  kubernetesVersion: v1.38\nspec: {}\n", "no checklist for Kubernetes 1.38"},
		{"no version", "metadata:\n  platformName: x\nspec: {}\n", "metadata.kubernetesVersion"},
		{"flow metadata", "metadata: {kubernetesVersion: v1.36}\nspec: {}\n", "metadata must be a block mapping"},
		{"flow entry", "metadata:\n  kubernetesVersion: v1.36\nspec:\n  operator:\n    - {id: robust_controller}\n", "line 5: each requirement must be a block mapping"},
		{"no spec", "metadata:\n  kubernetesVersion: v1.36\n", "no spec mapping"},
		{"no id", "metadata:\n  kubernetesVersion: v1.36\nspec:\n  operator:\n    - level: MUST\n", "has no id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTemplate("t.yaml", []byte(tt.src))
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// A report that did not judge what the checklist maps (a run of other
// requirements) leaves the entry for the vendor, saying so, and cites
// nothing.
func TestBuildReportWithoutTheRequirement(t *testing.T) {
	rep := makeReport(t, demo)
	var others []report.Requirement
	for _, r := range rep.Requirements {
		if r.ID != "robust_controller" {
			others = append(others, r)
		}
	}
	rep.Requirements = others
	p := buildFrom(t, "AIConformance-1.36.yaml", mustRead(t, templatePath(t, "1.36")), metadataFor("1.36"), rep)
	assert.Equal(t, []string{"report.md", "report.json", "junit.xml", "PRODUCT.yaml"}, p.FileNames())
	assert.Equal(t, []string{"gpu_nodes_allocatable"}, p.Omitted)
	last := p.Items[len(p.Items)-1]
	assert.Equal(t, BuiltItem{ID: "robust_controller", Category: "operator", Level: "MUST", Action: ActionVendor, Detail: "the report did not judge robust_controller"}, last)
	prod, err := ParseProduct(fileOf(t, p, "PRODUCT.yaml"))
	require.NoError(t, err)
	rc := itemOf(t, prod, "robust_controller")
	assert.Empty(t, rc.Status)
	assert.Empty(t, rc.Evidence)
	assert.Equal(t, VendorNotePrefix+"the report build was given did not judge robust_controller; build again from a run that checks it, or add evidence (files in this directory, or URLs) and set status.", rc.Notes)
}

// Where a checklist makes a MUST conditional and the vendor must fill it
// in, the note says how to write one whose condition does not hold:
// Implemented, as the program wants every MUST, never N/A.
func TestVendorNoteConditional(t *testing.T) {
	c := Checklist{Version: "1.33", Items: []ChecklistItem{{ID: "x", Title: "X works", Level: LevelMust, Conditional: true}}}
	const tail = "the checklist makes this MUST conditional, yet where the platform lacks the feature the program still wants Implemented, with notes that say the condition does not hold and what shows it."
	tests := []struct {
		name    string
		missing []string
		want    string
	}{
		{"not judged by aiconform", nil,
			VendorNotePrefix + "aiconform does not judge this requirement (X works) yet. Add evidence (files in this directory, or URLs) and set status; " + tail},
		{"not judged by the report", []string{"x"},
			VendorNotePrefix + "the report build was given did not judge x; build again from a run that checks it, or add evidence (files in this directory, or URLs) and set status; " + tail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := vendorNote(c, "x", LevelMust, tc.missing)
			assert.Equal(t, tc.want, got)
			assert.NotContains(t, got, "N/A")
		})
	}
}

// A report whose run skipped a requirement (skip: in a config) did not
// judge it: its entry is left to the vendor, never written "Skipped",
// which no PRODUCT.yaml accepts.
func TestBuildReportThatSkippedTheRequirement(t *testing.T) {
	rep := makeReport(t, demo)
	for i, r := range rep.Requirements {
		if r.ID == "robust_controller" {
			rep.Requirements[i].Status, rep.Requirements[i].Result = string(checks.Skipped), string(checks.Skip)
			rep.Requirements[i].Checks = []report.Check{}
		}
	}
	p := buildFrom(t, "AIConformance-1.36.yaml", mustRead(t, templatePath(t, "1.36")), metadataFor("1.36"), rep)
	last := p.Items[len(p.Items)-1]
	assert.Equal(t, BuiltItem{ID: "robust_controller", Category: "operator", Level: "MUST", Action: ActionVendor, Detail: "the report did not judge robust_controller"}, last)
	prod, err := ParseProduct(fileOf(t, p, "PRODUCT.yaml"))
	require.NoError(t, err)
	assert.Empty(t, itemOf(t, prod, "robust_controller").Status)
}
