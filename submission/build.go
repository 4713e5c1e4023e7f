package submission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/agnivade/levenshtein"
	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/report"
	"gopkg.in/yaml.v3"
)

// Files build writes besides PRODUCT.yaml. junit.xml is named as the
// program's validator expects to find it.
const (
	EvidenceDir    = "evidence"
	ReportMarkdown = "report.md"
	ReportJSON     = "report.json"
	JUnitName      = "junit.xml"
)

// VendorNotePrefix starts the note build leaves on a requirement it cannot
// judge. A later build recognises its own note by it and rewrites it, while
// anything else a vendor wrote is kept.
const VendorNotePrefix = "To fill in: "

// judgedNotePrefix starts the note build writes on a requirement it
// judged, so that a later build knows the entry for its own.
const judgedNotePrefix = "Checked by "

// Action says who decided a requirement's entry in a built PRODUCT.yaml.
type Action string

// The three ways build treats a requirement.
const (
	// ActionSet: aiconform judged it; status, evidence and notes are its.
	ActionSet Action = "set by aiconform"
	// ActionKept: aiconform cannot judge it and the template already had
	// an entry for it, which is left byte for byte as it was.
	ActionKept Action = "kept"
	// ActionVendor: aiconform cannot judge it; status stays empty and notes
	// say what the vendor must add.
	ActionVendor Action = "left for the vendor"
	// ActionSuite: aiconform cannot judge it, and every testcase of another
	// suite (--with-junit) mapped to it passed: Implemented, with those
	// testcases as the evidence.
	ActionSuite Action = "set from another suite"
)

// Template is a checklist template, or a PRODUCT.yaml being worked on, read
// for build. Its bytes are kept: build edits them in place so that ids,
// descriptions, levels, order and comments stay exactly as they were.
type Template struct {
	// Name is the file it came from, for messages.
	Name      string
	Checklist Checklist
	Product   *Product

	data     []byte
	doc      *yaml.Node
	metadata *yaml.Node
	// items are the spec entries' mapping nodes, in the order of
	// Product.Categories and their Items.
	items [][]*yaml.Node
}

// ReadTemplate reads and parses a template file.
func ReadTemplate(path string) (*Template, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseTemplate(path, data)
}

// ParseTemplate parses a template. Its metadata.kubernetesVersion chooses
// the checklist; metadata and every spec entry must be block mappings, the
// layout of the official templates, since build inserts keys into them.
func ParseTemplate(name string, data []byte) (*Template, error) {
	prod, err := ParseProduct(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c, err := ChecklistFor(prod.Metadata["kubernetesVersion"])
	if err != nil {
		return nil, fmt.Errorf("%s: metadata.kubernetesVersion: %w", name, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t := &Template{Name: name, Checklist: c, Product: prod, data: data, doc: &doc}
	root := doc.Content[0]
	_, t.metadata = mapPair(root, "metadata")
	if t.metadata == nil {
		return nil, fmt.Errorf("%s: no metadata mapping", name)
	}
	if t.metadata.Style&yaml.FlowStyle != 0 || len(t.metadata.Content) == 0 {
		return nil, fmt.Errorf("%s: line %d: metadata must be a block mapping with at least one key, as in the official templates", name, t.metadata.Line)
	}
	_, spec := mapPair(root, "spec")
	if spec == nil {
		return nil, fmt.Errorf("%s: no spec mapping", name)
	}
	for j := 0; j+1 < len(spec.Content); j += 2 {
		var items []*yaml.Node
		for _, n := range spec.Content[j+1].Content {
			if n.Kind != yaml.MappingNode || n.Style&yaml.FlowStyle != 0 || len(n.Content) == 0 {
				return nil, fmt.Errorf("%s: line %d: each requirement must be a block mapping (id, description, level, ...), as in the official templates", name, n.Line)
			}
			items = append(items, n)
		}
		t.items = append(t.items, items)
	}
	for i, cat := range prod.Categories {
		for _, it := range cat.Items {
			if it.ID == "" {
				return nil, fmt.Errorf("%s: line %d: a requirement of spec.%s has no id", name, it.Line, cat.Name)
			}
		}
		if len(cat.Items) != len(t.items[i]) {
			return nil, fmt.Errorf("%s: spec.%s: the entries could not be matched to the file", name, cat.Name)
		}
	}
	return t, nil
}

// metadataKeys are the keys metadata.yaml may set: the template's, plus
// k8sConformanceUrl where the checklist requires it even though the
// template leaves it out.
func (t *Template) metadataKeys() []string {
	var keys []string
	for j := 0; j+1 < len(t.metadata.Content); j += 2 {
		keys = append(keys, t.metadata.Content[j].Value)
	}
	if t.Checklist.ConformanceURLRequired && !contains(keys, "k8sConformanceUrl") {
		keys = append(keys, "k8sConformanceUrl")
	}
	return keys
}

// Metadata is a checked metadata.yaml: values for the template's metadata.
type Metadata struct {
	// Keys are in the order of metadata.yaml.
	Keys   []string
	Values map[string]string
}

// ReadMetadata reads and checks a metadata.yaml for t.
func (t *Template) ReadMetadata(path string) (*Metadata, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return t.ParseMetadata(path, data)
}

// ParseMetadata checks metadata.yaml, a flat mapping of the template's
// metadata keys to values, and returns it. Every problem is reported at
// once: an unknown key (with the nearest known one), a value that is empty,
// not a single value, or still a placeholder, a kubernetesVersion of
// another checklist, a malformed k8sConformanceUrl, and any key whose
// template value is a placeholder and which metadata.yaml leaves out, since
// the program would reject the placeholder.
func (t *Template) ParseMetadata(name string, data []byte) (*Metadata, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: want a mapping of metadata keys to values (%s)", name, strings.Join(t.metadataKeys(), ", "))
	}
	allowed := t.metadataKeys()
	md := &Metadata{Values: map[string]string{}}
	var problems []string
	bad := func(line int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("line %d: ", line)+fmt.Sprintf(format, args...))
	}
	m := doc.Content[0]
	for j := 0; j+1 < len(m.Content); j += 2 {
		k, v := m.Content[j], m.Content[j+1]
		key := k.Value
		switch {
		case !contains(allowed, key):
			msg := fmt.Sprintf("unknown key %q", key)
			if near := nearest(key, allowed); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
			bad(k.Line, "%s; checklist %s's metadata keys are %s", msg, t.Checklist.Version, strings.Join(allowed, ", "))
			continue
		case contains(md.Keys, key):
			bad(k.Line, "%s is given twice", key)
			continue
		case v.Kind != yaml.ScalarNode:
			bad(v.Line, "%s is not a single value", key)
			continue
		}
		md.Keys = append(md.Keys, key)
		val := v.Value
		if v.Tag == "!!null" {
			val = ""
		}
		md.Values[key] = val
		switch {
		case strings.TrimSpace(val) == "":
			bad(v.Line, "%s is empty", key)
		case placeholderRE.MatchString(val) || placeholderWordsRE.MatchString(val):
			bad(v.Line, "%s is a placeholder, %q: write the real value", key, val)
		case !utf8.ValidString(val):
			bad(v.Line, "%s is not valid UTF-8", key)
		case key == "kubernetesVersion":
			if minor, err := MinorVersion(val); err != nil {
				bad(v.Line, "%v", err)
			} else if minor != t.Checklist.Version {
				bad(v.Line, "kubernetesVersion %q is Kubernetes %s, but the template is checklist %s: "+
					"use AIConformance-%s.yaml, or a version v%s.x", val, minor, t.Checklist.Version, minor, t.Checklist.Version)
			}
		case key == "k8sConformanceUrl" && !conformanceURLRE.MatchString(val):
			bad(v.Line, "k8sConformanceUrl %q does not match https://github.com/cncf/k8s-conformance/tree/(master|main)/vX.Y/<dir>", val)
		}
	}
	for _, key := range allowed {
		if contains(md.Keys, key) {
			continue
		}
		tv, inTemplate := t.Product.Metadata[key]
		switch {
		case !inTemplate:
			problems = append(problems, fmt.Sprintf("%s is missing: checklist %s requires it, the link to the platform's "+
				"Kubernetes conformance submission "+
				"(https://github.com/cncf/k8s-conformance/tree/master/v%s/<dir>)", key, t.Checklist.Version, t.Checklist.Version))
		case strings.TrimSpace(tv) == "" || placeholderRE.MatchString(tv) || placeholderWordsRE.MatchString(tv):
			problems = append(problems, fmt.Sprintf("%s is missing: the template has %q there", key, tv))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s:\n  %s", name, strings.Join(problems, "\n  "))
	}
	return md, nil
}

// nearest is the allowed key closest to key, or "" when none is close: a
// hint for a typo or a shortened name, not a guess at a different key.
func nearest(key string, allowed []string) string {
	k := strings.ToLower(key)
	best, bestD := "", -1
	for _, a := range allowed {
		l := strings.ToLower(a)
		if strings.HasPrefix(l, k) || strings.HasPrefix(k, l) {
			return a
		}
		d := levenshtein.ComputeDistance(k, l)
		if bestD < 0 || d < bestD {
			best, bestD = a, d
		}
	}
	if bestD > len(key)/3+1 {
		return ""
	}
	return best
}

// BuildInput is what a submission is built from.
type BuildInput struct {
	Template *Template
	Metadata *Metadata
	// Report is a sealed report; build renders it as it is.
	Report *report.Report
	// Suites are the JUnit XML of other test suites, copied into the
	// submission and cited where their testcases map to a requirement and
	// all passed. They need checklist 1.37 or later, the first to accept
	// file://FILE#TestName evidence.
	Suites []*Suite
	// JUnitMap maps requirement ids to the suites' testcases explicitly;
	// nil maps by the ids the testcase names hold.
	JUnitMap *JUnitMap
}

// File is one file of a built submission, its name relative to the
// directory and slash-separated.
type File struct {
	Name string
	Data []byte
}

// BuiltItem is what build did with one requirement of the template.
type BuiltItem struct {
	ID       string
	Category string
	Level    string
	// Status is the status in the built PRODUCT.yaml, possibly empty.
	Status string
	Action Action
	// Detail is a few words for the summary: which operator carried it,
	// or why it is left for the vendor.
	Detail string
	// Replaced is true when aiconform overwrote an entry the template had
	// filled in.
	Replaced bool
}

// SkippedCase is a failing check testcase that the junit.xml of the
// submission shows as skipped, and why.
type SkippedCase struct {
	Requirement string
	// Testcase is the testcase name, CHECK/OPERATOR.
	Testcase string
	// Status is the check's real status, as report.json has it.
	Status string
	// Carrier is the operator the requirement is claimed through.
	Carrier string
}

// Package is a built submission, not yet written.
type Package struct {
	Checklist Checklist
	// Files in the order they are written: PRODUCT.yaml last, so that an
	// interrupted write never leaves a PRODUCT.yaml citing missing files.
	Files []File
	Items []BuiltItem
	// Skipped lists the testcases made skipped in junit.xml.
	Skipped []SkippedCase
	// Omitted lists the report's requirements that PRODUCT.yaml does not
	// cite and junit.xml leaves out; report.md and report.json keep them.
	Omitted []string
	// Unmet lists the cited requirements that are not met, whose failing
	// testcases junit.xml leaves out: PRODUCT.yaml says so, citing their
	// evidence/ID.md, and report.md and report.json keep them.
	Unmet []string
	// Warnings are facts about the evidence a reviewer will notice.
	Warnings []string
	// Changed lists the files Write wrote: new, or different from what
	// the directory held.
	Changed []string
	// SuiteEvidence is what the other suites said, one entry per
	// requirement their testcases map to, in the template's order.
	SuiteEvidence []*SuiteEvidence
	// SuiteWarnings are facts about the other suites a reviewer will
	// notice: map entries that matched nothing, failing testcases in a
	// copied junit.xml.
	SuiteWarnings []string
	// TemplateWorkedOn is true when the template had entries filled in or
	// its metadata set: a PRODUCT.yaml rather than the official template,
	// so that comparing descriptions with it proves nothing.
	TemplateWorkedOn bool
}

// Build makes a submission from a template, its metadata and a report:
//
//   - PRODUCT.yaml is the template with the metadata filled in and, for each
//     requirement, status, evidence and notes set where aiconform judged it,
//     kept where the template already had them, or left empty with a note
//     saying what the vendor must add. Only those values change: every other
//     byte of the template (ids, descriptions, levels, order, comments) is
//     kept, and Build checks that it was before it returns.
//   - evidence/ID.md is the report's section of each requirement it cites,
//     under the report's header.
//   - report.md and report.json are the report as `check --out` writes it.
//   - junit.xml is the report's JUnit with two changes that keep it about
//     the claims PRODUCT.yaml makes, since the program fails a submission
//     whose junit.xml holds any failing test: the requirements PRODUCT.yaml
//     does not cite are left out, and when an operator carries a
//     per-operator requirement, the failing checks of the other operators
//     are skipped with a message giving their real status. A requirement
//     that is not met is left out too: PRODUCT.yaml already says so, and
//     its failing testcases would fail every claim that cites junit.xml,
//     a SHOULD's as much as a MUST's.
func Build(in BuildInput) (*Package, error) {
	t, rep := in.Template, in.Report
	if t == nil || in.Metadata == nil || rep == nil {
		return nil, errors.New("build: template, metadata and report are all needed")
	}
	if len(in.Suites) > 0 && !t.Checklist.FileEvidence {
		return nil, fmt.Errorf("build: checklist %s does not accept test reports as evidence "+
			"(file://FILE#TestName); the program accepts them from checklist 1.37", t.Checklist.Version)
	}
	p := &Package{Checklist: t.Checklist}
	for k, v := range t.Product.Metadata {
		if k != "kubernetesVersion" && strings.TrimSpace(v) != "" && !placeholderRE.MatchString(v) && !placeholderWordsRE.MatchString(v) {
			p.TemplateWorkedOn = true
		}
	}
	reqs := map[string]report.Requirement{}
	for _, r := range rep.Requirements {
		reqs[r.ID] = r
	}

	// Which template entries aiconform judges, and so which report
	// requirements the submission cites.
	type plan struct {
		item     Item
		node     *yaml.Node
		category string
		level    string
		cited    []report.Requirement
		// missing names aiconform requirements the checklist maps to the
		// entry but the report did not judge.
		missing []string
	}
	var plans []plan
	cited := map[string]bool{}
	var citedOrder []string
	for ci, cat := range t.Product.Categories {
		for ii, it := range cat.Items {
			pl := plan{item: it, node: t.items[ci][ii], category: cat.Name, level: it.Level}
			if ck, ok := t.Checklist.Item(it.ID); ok {
				for _, id := range ck.Aiconform {
					r, ok := reqs[id]
					// A requirement the run skipped (skip: in a config)
					// was not judged: its entry is left to the user, as
					// one the report does not hold.
					if !ok || r.Status == string(checks.Skipped) {
						pl.missing = append(pl.missing, id)
						continue
					}
					pl.cited = append(pl.cited, r)
				}
			}
			if len(pl.missing) > 0 {
				pl.cited = nil
			}
			for _, r := range pl.cited {
				if !cited[r.ID] {
					cited[r.ID] = true
					citedOrder = append(citedOrder, r.ID)
				}
			}
			plans = append(plans, pl)
		}
	}

	// junit.xml first: the evidence cites its verdict testcases only when
	// they pass there.
	view, err := p.junitView(rep, cited)
	if err != nil {
		return nil, err
	}
	var junitBuf bytes.Buffer
	if err := report.JUnit(&junitBuf, view); err != nil {
		return nil, err
	}
	cases, err := ParseJUnit(bytes.NewReader(junitBuf.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("build: the junit.xml rendered does not parse: %w", err)
	}
	passes := map[string]bool{}
	for _, c := range cases {
		if _, seen := passes[c.Name]; !seen {
			passes[c.Name] = true
		}
		passes[c.Name] = passes[c.Name] && c.Outcome == OutcomePassed
	}

	for _, id := range citedOrder {
		var buf bytes.Buffer
		if err := report.MarkdownRequirement(&buf, rep, id); err != nil {
			return nil, err
		}
		p.Files = append(p.Files, File{Name: evidenceFile(id), Data: buf.Bytes()})
	}
	var md, js bytes.Buffer
	if err := report.Markdown(&md, rep); err != nil {
		return nil, err
	}
	if err := report.JSON(&js, rep); err != nil {
		return nil, err
	}
	p.Files = append(p.Files, File{ReportMarkdown, md.Bytes()}, File{ReportJSON, js.Bytes()}, File{JUnitName, junitBuf.Bytes()})

	// The other suites, copied as they are: the program and lint read the
	// same testcases build mapped.
	suiteNames := suiteFileNames(in.Suites)
	suiteEv, suiteWarns := mapSuites(t.ids(), in.Suites, suiteNames, in.JUnitMap)
	p.SuiteWarnings = suiteWarns
	for i, s := range in.Suites {
		p.Files = append(p.Files, File{suiteNames[i], s.Data})
		if failed := failingTests(s); len(failed) > 0 {
			p.SuiteWarnings = append(p.SuiteWarnings, fmt.Sprintf("%s (copied from %s) holds %d failing testcase(s), %s: the program fails a "+
				"submission whose cited junit.xml holds any, and lint says so",
				suiteNames[i], s.Source, len(failed), strings.Join(firstN(failed, 5), ", ")))
		}
	}

	// PRODUCT.yaml.
	ed := newYAMLEditor(t.data, t.doc)
	want := expectedProduct{metadata: map[string]string{}}
	for k, v := range t.Product.Metadata {
		want.metadata[k] = v
	}
	var newKeys []string
	for _, key := range md2order(in.Metadata, t.metadataKeys()) {
		val := in.Metadata.Values[key]
		want.metadata[key] = val
		k, v := mapPair(t.metadata, key)
		if k == nil {
			newKeys = append(newKeys, key+": "+yamlQuote(val))
			continue
		}
		if err := ed.replace(k, v, yamlQuote(val)); err != nil {
			return nil, fmt.Errorf("%s: metadata.%s: %w", t.Name, key, err)
		}
	}
	if len(newKeys) > 0 {
		if err := ed.insertAfter(t.metadata, newKeys); err != nil {
			return nil, fmt.Errorf("%s: metadata: %w", t.Name, err)
		}
	}

	for _, pl := range plans {
		it := pl.item
		out := BuiltItem{ID: it.ID, Level: pl.level, Category: pl.category}
		filled := strings.TrimSpace(it.Status) != "" || len(it.Evidence) > 0 || strings.TrimSpace(it.Notes) != ""
		ours := strings.TrimSpace(it.Status) == "" && len(it.Evidence) == 0 && strings.HasPrefix(it.Notes, VendorNotePrefix) ||
			strings.HasPrefix(it.Notes, suiteNotePrefix)
		ev := suiteEv[it.ID]
		if ev != nil {
			p.SuiteEvidence = append(p.SuiteEvidence, ev)
		}
		if filled && !ours {
			p.TemplateWorkedOn = true
		}
		final := it
		var set []field
		switch {
		case len(pl.cited) > 0:
			out.Action = ActionSet
			out.Replaced = filled && !ours && !strings.HasPrefix(it.Notes, judgedNotePrefix)
			final.Status = combinedStatus(pl.cited)
			final.Evidence = nil
			for _, r := range pl.cited {
				final.Evidence = append(final.Evidence, evidenceFile(r.ID))
				if t.Checklist.FileEvidence && passes[r.ID] {
					final.Evidence = append(final.Evidence, "file://"+JUnitName+"#"+r.ID)
				}
			}
			final.Notes = judgedNote(rep, pl.cited, final.Evidence)
			out.Detail = judgedDetail(pl.cited)
			// The program wants every MUST Implemented, conditional ones
			// included: where the condition does not hold (N/A in the
			// report, which keeps it), the entry says Implemented and the
			// notes say why.
			if ck, ok := t.Checklist.Item(it.ID); ok && ck.Conditional && ck.Level == LevelMust && final.Status == string(checks.NotApplicable) {
				final.Status = "Implemented"
				final.Notes = conditionNote(rep, pl.cited, it.Description, final.Evidence)
				out.Detail = "its condition does not hold (N/A in the report), see " + strings.Join(final.Evidence, ", ")
			}
			// aiconform's verdict stands; another suite's passing
			// testcases are added beside its evidence, never over it.
			if ev != nil {
				if ev.Passed {
					final.Evidence = append(final.Evidence, ev.Links...)
					final.Notes += fmt.Sprintf(" Another suite's testcases, all passed: %s.", strings.Join(ev.Links, ", "))
					out.Detail += fmt.Sprintf("; + %d passing testcase(s) of another suite", len(ev.Links))
					ev.Used = fmt.Sprintf("%d passing testcase(s) added to the evidence beside aiconform's; the status is aiconform's, %s", len(ev.Links), final.Status)
				} else {
					ev.Used = fmt.Sprintf("not cited; the status is aiconform's, %s", final.Status)
				}
			}
			set = []field{{"status", yamlQuote(final.Status)}, {"evidence", yamlFlowList(final.Evidence)}, {"notes", yamlQuote(final.Notes)}}
		case filled && !ours:
			out.Action = ActionKept
			out.Detail = "the template's own entry"
			if ev != nil {
				ev.Used = "not cited: the template's own entry is kept as it is"
			}
		case ev != nil && ev.Passed:
			out.Action = ActionSuite
			final.Status = "Implemented"
			final.Evidence = ev.Links
			final.Notes = suiteNote(ev)
			out.Detail = fmt.Sprintf("%d passing testcase(s)", len(ev.Links))
			ev.Used = fmt.Sprintf("Implemented, from %d passing testcase(s); aiconform does not judge it", len(ev.Links))
			set = []field{{"status", yamlQuote(final.Status)}, {"evidence", yamlFlowList(final.Evidence)}, {"notes", yamlQuote(final.Notes)}}
		default:
			out.Action = ActionVendor
			if ev != nil {
				ev.Used = "not cited; left for the vendor"
			}
			final.Status, final.Evidence = "", nil
			final.Notes = vendorNote(t.Checklist, it.ID, pl.level, pl.missing)
			if len(pl.missing) > 0 {
				out.Detail = "the report did not judge " + strings.Join(pl.missing, ", ")
			}
			set = []field{{"notes", yamlQuote(final.Notes)}}
			// Keys the template lacks are added empty, for the vendor to
			// fill; so are the values an earlier build set from another
			// suite that this build was not given or that no longer passes.
			if k, _ := mapPair(pl.node, "status"); k == nil || it.Status != "" {
				set = append(set, field{"status", `""`})
			}
			if k, _ := mapPair(pl.node, "evidence"); k == nil || len(it.Evidence) > 0 {
				set = append(set, field{"evidence", "[]"})
			}
		}
		out.Status = final.Status
		if err := ed.setFields(pl.node, set); err != nil {
			return nil, fmt.Errorf("%s: line %d: %s: %w", t.Name, it.Line, it.ID, err)
		}
		want.items = append(want.items, final)
		p.Items = append(p.Items, out)
	}
	product, err := ed.apply()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	if err := want.check(t.Product, product); err != nil {
		return nil, fmt.Errorf("%s: build could not edit this file without changing more than the values (%w); please report it with the file", t.Name, err)
	}
	p.Files = append(p.Files, File{ProductName, product})
	p.Warnings = warnings(rep, t.Checklist)
	return p, nil
}

func evidenceFile(id string) string { return EvidenceDir + "/" + id + ".md" }

// md2order lists the metadata keys to write: metadata.yaml's, in the
// template's order, so that an inserted key lands in a predictable place.
func md2order(md *Metadata, order []string) []string {
	var keys []string
	for _, k := range order {
		if contains(md.Keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// combinedStatus is the status of an entry judged from one or more
// aiconform requirements: theirs when they agree, else the weaker claim.
func combinedStatus(rs []report.Requirement) string {
	var judged []string
	for _, r := range rs {
		if r.Status != string(checks.NotApplicable) {
			judged = append(judged, r.Status)
		}
	}
	switch {
	case len(judged) == 0:
		return string(checks.NotApplicable)
	case contains(judged, string(checks.NotImplemented)):
		return string(checks.NotImplemented)
	}
	for _, s := range judged[1:] {
		if s != judged[0] {
			return string(checks.PartiallyImplemented)
		}
	}
	return judged[0]
}

// checkedBy opens the notes of an entry aiconform judged: which tool and
// when, against a live cluster or a recording. Its prefix is how a later
// build knows the entry for its own.
func checkedBy(rep *report.Report) string {
	info := rep.Run.Cluster
	where := "a live cluster"
	if !info.Live {
		where = "a recording"
		if info.Source != "" {
			where += " (" + info.Source + ")"
		}
		where += ", not a live cluster"
	}
	tool := strings.TrimSpace(rep.Tool.Name + " " + rep.Tool.Version)
	if !rep.Run.FinishedAt.IsZero() {
		tool += " (" + rep.Run.FinishedAt.UTC().Format("2006-01-02") + ")"
	}
	return judgedNotePrefix + tool + " against " + where + "."
}

// judgedNote is the notes of an entry aiconform judged: which tool and
// when, live or recorded, the verdict and who carried it, in a sentence or
// two; the evidence files hold the rest.
func judgedNote(rep *report.Report, rs []report.Requirement, evidence []string) string {
	var parts []string
	for _, r := range rs {
		s := r.Status
		if len(rs) > 1 {
			s = r.ID + ": " + s
		}
		if r.Operator != "" {
			s += ": carried by " + operatorTitle(rep, r.Operator)
			for _, ov := range r.Operators {
				if ov.Operator == r.Operator && ov.Reason != "" {
					s += ", " + ov.Reason
				}
			}
		} else if r.Conclusion != "" {
			s += ": " + shorten(r.Conclusion, 240)
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%s %s. The commands, their output and when they ran: %s.",
		checkedBy(rep), strings.Join(parts, "; "), strings.Join(evidence, ", "))
}

// conditionNote is the notes of a conditional MUST whose condition does
// not hold: the condition as the template words it, what the run looked for
// and did not find (the report's conclusion), and that the report says N/A.
// It is what accepted submissions on platforms without the feature wrote,
// and what the program's validator, which wants every MUST Implemented,
// accepts.
func conditionNote(rep *report.Report, rs []report.Requirement, description string, evidence []string) string {
	asks := "the checklist makes this MUST conditional on the platform offering the feature"
	if c := condition(description); c != "" {
		asks = "the checklist asks this MUST only “" + c + "”"
	}
	var found []string
	for _, r := range rs {
		// The conclusion of a requirement whose checks all skipped opens
		// with its status in words; the note has already said it.
		s := strings.TrimPrefix(r.Conclusion, "not applicable: ")
		if len(rs) > 1 {
			s = r.ID + ": " + s
		}
		found = append(found, shorten(s, 400))
	}
	return fmt.Sprintf("%s Implemented, as %s, and that condition does not hold here: %s. "+
		"aiconform's report says N/A. The commands, their output and when they ran: %s.",
		checkedBy(rep), asks, strings.Join(found, "; "), strings.Join(evidence, ", "))
}

// condition is the condition a requirement's description opens with, in
// the template's own words: an opening "If ..." up to its comma, else the
// first sentence. Empty when the description is.
func condition(description string) string {
	d := strings.Join(strings.Fields(description), " ")
	if d == "" {
		return ""
	}
	if strings.HasPrefix(strings.ToLower(d), "if ") {
		if i := strings.Index(d, ","); i > 0 {
			return d[:i]
		}
	}
	if i := strings.Index(d, ". "); i > 0 {
		return d[:i+1]
	}
	return d
}

func judgedDetail(rs []report.Requirement) string {
	var parts []string
	for _, r := range rs {
		if r.Operator != "" {
			parts = append(parts, "carried by "+r.Operator)
		} else {
			parts = append(parts, fmt.Sprintf("result %s, see %s", r.Result, evidenceFile(r.ID)))
		}
	}
	return strings.Join(parts, "; ")
}

func operatorTitle(rep *report.Report, name string) string {
	for _, op := range rep.Operators {
		if op.Name == name && op.Title != "" && op.Title != name {
			return op.Title + " (" + name + ")"
		}
	}
	return name
}

// shorten cuts s to at most n runes at a word boundary; the evidence file
// has the whole text.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	prefix := string([]rune(s)[:n])
	cut := strings.LastIndex(prefix, " ")
	if cut < len(prefix)/2 {
		cut = len(prefix)
	}
	return strings.TrimRight(prefix[:cut], " ,;:") + "…"
}

// vendorNote says what the vendor must add for a requirement aiconform
// does not judge.
func vendorNote(c Checklist, id, level string, missing []string) string {
	ck, known := c.Item(id)
	// A conditional MUST left as N/A would fail the submission: the
	// program wants every MUST Implemented, whether or not the condition
	// holds, so the note says how to write the one that does not.
	conditional := known && ck.Conditional && level == LevelMust
	const conditionalTail = "the checklist makes this MUST conditional, yet where the platform lacks the " +
		"feature the program still wants Implemented, with notes that say the " +
		"condition does not hold and what shows it."
	what := "aiconform does not judge this requirement yet"
	if known {
		what = fmt.Sprintf("aiconform does not judge this requirement (%s) yet", ck.Title)
	}
	if len(missing) > 0 {
		what = fmt.Sprintf("the report build was given did not judge %s; build again from a run that checks it, or", strings.Join(missing, ", "))
		switch {
		case level == LevelShould:
			return VendorNotePrefix + what + " add evidence (files in this directory, or URLs) and set status, or leave status and evidence empty to skip this SHOULD."
		case conditional:
			return VendorNotePrefix + what + " add evidence (files in this directory, or URLs) and set status; " + conditionalTail
		}
		return VendorNotePrefix + what + " add evidence (files in this directory, or URLs) and set status."
	}
	var tail string
	switch {
	case level == LevelShould:
		tail = "or leave status and evidence empty to skip this SHOULD."
	case conditional:
		tail = conditionalTail
	default:
		tail = "a MUST that is not Implemented fails the submission."
	}
	return VendorNotePrefix + what + ". Add evidence (files in this directory, or URLs) and set status; " + tail
}

// warnings are facts about the evidence that a reviewer will notice, said
// before they do.
func warnings(rep *report.Report, c Checklist) []string {
	var w []string
	info := rep.Run.Cluster
	if !info.Live {
		src := "a recording"
		if info.Source != "" {
			src = "the recording " + info.Source
		}
		w = append(w, fmt.Sprintf("the results come from %s, not a live cluster; the evidence says so on its first line", src))
	}
	if info.ServerVersion != "" {
		if v, err := MinorVersion(info.ServerVersion); err == nil && v != c.Version {
			w = append(w, fmt.Sprintf("the cluster runs Kubernetes %s but this is checklist %s: the program "+
				"expects evidence from a cluster of the version submitted", info.ServerVersion, c.Version))
		}
	}
	return w
}

// junitView is the report junit.xml is rendered from: a copy, limited to
// the cited requirements that are met or not applicable, where the failing per-operator checks of
// operators that do not carry a met requirement are skipped, each with a
// message that gives its real status and says which operator the claim
// rests on. Nothing else changes; report.md and report.json keep the
// originals.
func (p *Package) junitView(rep *report.Report, cited map[string]bool) (*report.Report, error) {
	data, err := json.Marshal(rep)
	if err != nil {
		return nil, err
	}
	var c report.Report
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	var kept []report.Requirement
	for _, req := range c.Requirements {
		if !cited[req.ID] {
			p.Omitted = append(p.Omitted, req.ID)
			continue
		}
		met := req.Result == string(checks.Pass) || req.Result == string(checks.Warn)
		if !met && req.Result != string(checks.Skip) {
			p.Unmet = append(p.Unmet, req.ID)
			continue
		}
		if met && req.Operator != "" {
			for i := range req.Checks {
				ch := &req.Checks[i]
				if ch.Operator == "" || ch.Operator == req.Operator {
					continue
				}
				if ch.Status != string(checks.Fail) && ch.Status != string(checks.Error) {
					continue
				}
				p.Skipped = append(p.Skipped, SkippedCase{Requirement: req.ID, Testcase: ch.ID + "/" + ch.Operator, Status: ch.Status, Carrier: req.Operator})
				ch.Reason = fmt.Sprintf("not counted: %s does not carry %s, which this submission claims through %s; "+
					"the real status of this check is %s: %s (report.md and report.json show it in full)",
					ch.Operator, req.ID, req.Operator, ch.Status, ch.Reason)
				ch.Status = string(checks.Skip)
			}
		}
		kept = append(kept, req)
	}
	c.Requirements = kept
	return &c, nil
}

// ErrDirNotEmpty is returned by Write and CheckOutDir for a directory that
// already holds files, unless forced.
var ErrDirNotEmpty = errors.New("directory is not empty")

// CheckOutDir refuses a directory that holds anything, unless force: a new
// submission must not be mixed up with files of another. A missing
// directory is fine.
func CheckOutDir(dir string, force bool) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case len(entries) > 0 && !force:
		return fmt.Errorf("%s: %w", dir, ErrDirNotEmpty)
	}
	return nil
}

// Write writes the package into dir, each file whole or not at all: written
// to a temporary file next to it, then renamed over it. A file that already
// holds the same bytes is not touched, and files of dir that build does not
// make are left alone. Changed lists the files written.
func (p *Package) Write(dir string, force bool) error {
	if err := CheckOutDir(dir, force); err != nil {
		return err
	}
	p.Changed = nil
	for _, f := range p.Files {
		path := filepath.Join(dir, filepath.FromSlash(f.Name))
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.Data) {
			continue
		}
		if err := writeAtomic(path, f.Data); err != nil {
			return err
		}
		p.Changed = append(p.Changed, f.Name)
	}
	return nil
}

func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr, os.Chmod(tmp.Name(), 0o644)); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}

// FileNames lists the files of the package, as Write writes them.
func (p *Package) FileNames() []string {
	var names []string
	for _, f := range p.Files {
		names = append(names, f.Name)
	}
	return names
}

// WriteSummary prints one line per requirement (id, level, the status in
// PRODUCT.yaml, and who decided it), the counts, what junit.xml leaves out
// or skips, and the warnings.
func (p *Package) WriteSummary(w io.Writer) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "REQUIREMENT\tLEVEL\tSTATUS\tBY")
	counts := map[Action]int{}
	vendorMust := 0
	for _, it := range p.Items {
		status := it.Status
		if status == "" {
			status = "-"
		}
		by := string(it.Action)
		if it.Detail != "" {
			by += ": " + it.Detail
		}
		if it.Replaced {
			by += " (replaced the template's entry)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", it.ID, it.Level, status, by)
		counts[it.Action]++
		if it.Action == ActionVendor && it.Level == LevelMust {
			vendorMust++
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fromSuite := ""
	if counts[ActionSuite] > 0 {
		fromSuite = fmt.Sprintf(", %d set from another suite", counts[ActionSuite])
	}
	fmt.Fprintf(&buf, "%d set by aiconform%s, %d kept from the template, %d left for the vendor (%d of them MUST)\n",
		counts[ActionSet], fromSuite, counts[ActionKept], counts[ActionVendor], vendorMust)
	byCarrier := map[string][]string{}
	var keys []string
	for _, s := range p.Skipped {
		k := s.Requirement + "\x00" + s.Carrier
		if _, ok := byCarrier[k]; !ok {
			keys = append(keys, k)
		}
		byCarrier[k] = append(byCarrier[k], s.Testcase+" ("+s.Status+")")
	}
	for _, k := range keys {
		req, carrier, _ := strings.Cut(k, "\x00")
		fmt.Fprintf(&buf, "junit.xml: skipped %s: %s is claimed through %s; report.md and report.json show these checks as they are\n",
			strings.Join(byCarrier[k], ", "), req, carrier)
	}
	if len(p.Omitted) > 0 {
		fmt.Fprintf(&buf, "junit.xml: left out %s, which PRODUCT.yaml does not cite; report.md and report.json keep %s\n", strings.Join(p.Omitted, ", "), pronoun(len(p.Omitted)))
	}
	if len(p.Unmet) > 0 {
		var files []string
		for _, id := range p.Unmet {
			files = append(files, evidenceFile(id))
		}
		fmt.Fprintf(&buf, "junit.xml: left out %s, not met as PRODUCT.yaml says (failing tests there "+
			"would fail every claim citing junit.xml); %s, report.md and report.json show %s\n", strings.Join(p.Unmet, ", "), strings.Join(files, ", "), pronoun(len(p.Unmet)))
	}
	for _, warn := range p.Warnings {
		fmt.Fprintf(&buf, "warning: %s\n", warn)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// expectedProduct is what the built PRODUCT.yaml must parse to: the
// template's metadata with the new values, and each entry with the
// template's id, description and level.
type expectedProduct struct {
	metadata map[string]string
	items    []Item
}

func (e expectedProduct) check(tpl *Product, built []byte) error {
	got, err := ParseProduct(built)
	if err != nil {
		return err
	}
	for k, v := range e.metadata {
		if got.Metadata[k] != v {
			return fmt.Errorf("metadata.%s reads %q, not %q", k, got.Metadata[k], v)
		}
	}
	if len(got.Metadata) != len(e.metadata) {
		return fmt.Errorf("metadata has %d keys, not %d", len(got.Metadata), len(e.metadata))
	}
	var items []Item
	for ci, c := range got.Categories {
		if ci >= len(tpl.Categories) || c.Name != tpl.Categories[ci].Name {
			return fmt.Errorf("spec.%s is not where the template has it", c.Name)
		}
		items = append(items, c.Items...)
	}
	if len(items) != len(e.items) || len(got.Categories) != len(tpl.Categories) {
		return fmt.Errorf("%d requirements, not %d", len(items), len(e.items))
	}
	for i, it := range items {
		w := e.items[i]
		switch {
		case it.ID != w.ID, it.Description != w.Description, it.Level != w.Level:
			return fmt.Errorf("line %d: id, description or level of %s changed", it.Line, w.ID)
		case it.Status != w.Status, it.Notes != w.Notes, strings.Join(it.Evidence, "\x00") != strings.Join(w.Evidence, "\x00"):
			return fmt.Errorf("line %d: %s does not read back as written", it.Line, w.ID)
		}
	}
	return nil
}

// pronoun is "it" for one thing, "them" for several.
func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}
