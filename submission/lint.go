package submission

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Lint rules. They are stable ids, printed in every problem, so that a CI log
// or a reviewer can cite them; never rename one.
const (
	RuleMetadataMissing     = "metadata-missing"
	RuleMetadataPlaceholder = "metadata-placeholder"
	RuleConformanceURL      = "k8s-conformance-url"
	RulePathVersion         = "path-version"
	RuleTemplateVersion     = "template-version"
	RuleCategoryMissing     = "category-missing"
	RuleCategoryUnknown     = "category-unknown"
	RuleRequirementMissing  = "requirement-missing"
	RuleRequirementUnknown  = "requirement-unknown"
	RuleRequirementDup      = "requirement-duplicate"
	RuleRequirementCategory = "requirement-category"
	RuleDescriptionChanged  = "description-changed"
	RuleLevelChanged        = "level-changed"
	RuleStatusInvalid       = "status-invalid"
	RuleMustImplemented     = "must-implemented"
	RuleNANotes             = "na-notes"
	RuleEvidenceScheme      = "evidence-scheme"
	RuleEvidenceOutside     = "evidence-outside"
	RuleEvidenceMissing     = "evidence-missing"
	RuleEvidenceTestcase    = "evidence-testcase"
	RuleEvidenceFailing     = "evidence-failing-tests"
)

// Statuses a requirement may have, as the templates' comment lists them.
var Statuses = []string{"Implemented", "Not Implemented", "Partially Implemented", "N/A"}

// LintProblem is one broken rule of the program's validator.
type LintProblem struct {
	// File is relative to the submission directory: PRODUCT.yaml, or the
	// evidence file whose tests fail.
	File string
	// Requirement is the checklist id, empty for metadata problems.
	Requirement string
	Rule        string
	Message     string
	// Line in File, 0 when unknown.
	Line int
}

// String renders the problem as `lint` prints it: FILE: REQUIREMENT: RULE: message.
func (p LintProblem) String() string {
	req := p.Requirement
	if req == "" {
		req = "-"
	}
	msg := p.Message
	if p.Line > 0 {
		msg = fmt.Sprintf("%s (line %d)", msg, p.Line)
	}
	return fmt.Sprintf("%s: %s: %s: %s", p.File, req, p.Rule, msg)
}

// URLEvidence is an http(s) evidence entry: the program requests it and
// wants an answer below 400, which an offline lint cannot vouch for.
type URLEvidence struct {
	Requirement string
	URL         string
}

// LintOptions tunes Lint.
type LintOptions struct {
	// Template is the official checklist to compare against: a file, or a
	// directory holding AIConformance-X.Y.yaml files. When empty, ids,
	// categories and levels are compared with aiconform's built-in
	// checklist and descriptions are not compared: aiconform does not ship
	// the checklist's text.
	Template string
}

// LintResult is everything Lint found, including what it could not check.
type LintResult struct {
	// Version is the checklist version, "MAJOR.MINOR".
	Version string
	// Template is the template file compared against, empty if none.
	Template string
	Problems []LintProblem
	// URLs are checked online by the program, not here.
	URLs []URLEvidence
	// Unchecked says, one sentence each, what only the program can check.
	Unchecked []string
}

// Lint applies the program's validator rules to DIR/PRODUCT.yaml offline and
// returns the broken ones sorted by file, requirement and rule. The error is
// for input that cannot be judged at all: no PRODUCT.yaml, bad YAML, no
// checklist for the version, an unreadable template.
func Lint(dir string, opts LintOptions) ([]LintProblem, error) {
	r, err := LintDir(dir, opts)
	if err != nil {
		return nil, err
	}
	return r.Problems, nil
}

// LintDir is Lint with everything it found.
func LintDir(dir string, opts LintOptions) (*LintResult, error) {
	prod, err := ReadProduct(filepath.Join(dir, ProductName))
	if err != nil {
		return nil, err
	}
	kv := prod.Metadata["kubernetesVersion"]
	if kv == "" {
		return nil, fmt.Errorf("%s: metadata.kubernetesVersion is empty: it chooses the checklist", ProductName)
	}
	version, err := MinorVersion(kv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ProductName, err)
	}
	l := &linter{dir: dir, prod: prod, res: &LintResult{Version: version}}

	ref, err := l.reference(opts.Template, version)
	if err != nil {
		return nil, err
	}
	l.lintMetadata()
	l.lintPath()
	l.lintSpec(ref)

	sortProblems(l.res.Problems)
	return l.res, nil
}

// refItem is what the submission is compared against: from the template
// when there is one, else from the built-in checklist without description.
type refItem struct {
	ID, Category, Level, Description string
	hasDescription                   bool
	// conditional is the built-in checklist's fact, for a version it
	// knows: the MUST depends on the platform having the feature.
	conditional bool
}

type reference struct {
	items             []refItem
	conformanceURLReq bool
	fileEvidence      bool
	placeholders      []string
}

type linter struct {
	dir  string
	prod *Product
	res  *LintResult
}

func (l *linter) add(file, req, rule string, line int, format string, args ...any) {
	l.res.Problems = append(l.res.Problems, LintProblem{File: file, Requirement: req, Rule: rule, Line: line, Message: fmt.Sprintf(format, args...)})
}

// reference loads what the submission must match. Version-wide facts (the
// k8sConformanceUrl from 1.35, file:// evidence from 1.37) follow the
// version number, so a template newer than the built-in checklist still
// lints.
func (l *linter) reference(template, version string) (*reference, error) {
	ref := &reference{
		conformanceURLReq: versionAtLeast(version, "1.35"),
		fileEvidence:      versionAtLeast(version, "1.37"),
	}
	if template == "" {
		c, err := ChecklistFor(version)
		if err != nil {
			return nil, fmt.Errorf("%s: %w; pass --template AIConformance-%s.yaml", ProductName, err, version)
		}
		for _, it := range c.Items {
			ref.items = append(ref.items, refItem{ID: it.ID, Category: it.Category, Level: it.Level, conditional: it.Conditional})
		}
		l.res.Unchecked = append(l.res.Unchecked,
			"descriptions: not compared, as no template was given (--template AIConformance-"+version+".yaml)")
		return ref, nil
	}
	if st, err := os.Stat(template); err == nil && st.IsDir() {
		template = filepath.Join(template, "AIConformance-"+version+".yaml")
	}
	tpl, err := ReadProduct(template)
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	l.res.Template = template
	if tv, err := MinorVersion(tpl.Metadata["kubernetesVersion"]); err != nil || tv != version {
		l.add(ProductName, "", RuleTemplateVersion, l.prod.MetadataLine["kubernetesVersion"],
			"kubernetesVersion %q names checklist %s but the template %s is for %q",
			l.prod.Metadata["kubernetesVersion"], version, filepath.Base(template), tpl.Metadata["kubernetesVersion"])
	}
	// Which MUSTs are conditional is a fact of the built-in checklist; a
	// template of a version aiconform does not know has none.
	known, _ := ChecklistFor(version)
	for _, c := range tpl.Categories {
		for _, it := range c.Items {
			ck, _ := known.Item(it.ID)
			ref.items = append(ref.items, refItem{ID: it.ID, Category: c.Name, Level: it.Level, Description: it.Description, hasDescription: true,
				conditional: ck.Conditional})
		}
	}
	for _, v := range tpl.Metadata {
		if placeholderRE.MatchString(v) {
			ref.placeholders = append(ref.placeholders, v)
		}
	}
	return ref, nil
}

// placeholderRE matches a value that is wholly a bracketed placeholder, the
// templates' way of saying "fill me in".
var placeholderRE = regexp.MustCompile(`^\s*\[[^\]]*\]\s*$`)

// placeholderWordsRE catches a placeholder left inside a longer value, like
// "Acme [Platform Name]"; brackets alone are not enough, a description may
// hold them.
var placeholderWordsRE = regexp.MustCompile(`\[(Platform|Vendor|Website|Repository|Documentation|Description|Contact|URL)\b[^\]]*\]`)

// conformanceURLRE is the program's pattern for metadata.k8sConformanceUrl.
var conformanceURLRE = regexp.MustCompile(`^https://github\.com/cncf/k8s-conformance/tree/(master|main)/v\d+\.\d+/[^/\s]+$`)

// requiredMetadata must be non-empty: they name the product.
var requiredMetadata = []string{"platformName", "platformVersion", "vendorName"}

func (l *linter) lintMetadata() {
	md, lines := l.prod.Metadata, l.prod.MetadataLine
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := md[k]
		if placeholderRE.MatchString(v) || placeholderWordsRE.MatchString(v) {
			l.add(ProductName, "", RuleMetadataPlaceholder, lines[k], "metadata.%s is still the template's placeholder %q", k, v)
		}
	}
	for _, k := range requiredMetadata {
		if strings.TrimSpace(md[k]) == "" {
			l.add(ProductName, "", RuleMetadataMissing, lines[k], "metadata.%s is empty", k)
		}
	}
	url, has := md["k8sConformanceUrl"]
	switch {
	case !has && versionAtLeast(l.res.Version, "1.35"):
		l.add(ProductName, "", RuleConformanceURL, 0,
			"metadata.k8sConformanceUrl is required from 1.35, even though the 1.36 and 1.37 templates leave the key out: "+
				"https://github.com/cncf/k8s-conformance/tree/master/v%s/<dir>", l.res.Version)
	case has && !placeholderRE.MatchString(url) && !conformanceURLRE.MatchString(url):
		l.add(ProductName, "", RuleConformanceURL, lines["k8sConformanceUrl"],
			"metadata.k8sConformanceUrl %q does not match https://github.com/cncf/k8s-conformance/tree/(master|main)/vX.Y/<dir>", url)
	}
	vendor := md["vendorName"]
	l.res.Unchecked = append(l.res.Unchecked,
		fmt.Sprintf("vendorName %q: must be a CNCF member's exact name; checked online by the program only", vendor))
}

var pathVersionRE = regexp.MustCompile(`^v\d+\.\d+$`)

// lintPath compares the version in the path with kubernetesVersion when the
// directory sits where the program expects it, vX.Y/<product>: the program
// chooses the checklist by the path, so the two must agree.
func (l *linter) lintPath() {
	abs, err := filepath.Abs(l.dir)
	if err != nil {
		return
	}
	parent := filepath.Base(filepath.Dir(abs))
	if pathVersionRE.MatchString(parent) && parent != "v"+l.res.Version {
		l.add(ProductName, "", RulePathVersion, l.prod.MetadataLine["kubernetesVersion"],
			"the directory is under %s but kubernetesVersion %q names checklist %s", parent, l.prod.Metadata["kubernetesVersion"], l.res.Version)
	}
}

func (l *linter) lintSpec(ref *reference) {
	refByID := map[string]refItem{}
	refCats := map[string]bool{}
	for _, r := range ref.items {
		refByID[r.ID] = r
		refCats[r.Category] = true
	}
	seen := map[string]bool{}
	cats := map[string]bool{}
	for _, c := range l.prod.Categories {
		cats[c.Name] = true
		if !refCats[c.Name] {
			l.add(ProductName, "", RuleCategoryUnknown, c.Line, "spec.%s is not a category of checklist %s", c.Name, l.res.Version)
		}
		for _, it := range c.Items {
			if seen[it.ID] {
				l.add(ProductName, it.ID, RuleRequirementDup, it.Line, "%s is listed more than once", it.ID)
				continue
			}
			seen[it.ID] = true
			r, ok := refByID[it.ID]
			if !ok {
				l.add(ProductName, it.ID, RuleRequirementUnknown, it.Line, "%q is not a requirement of checklist %s", it.ID, l.res.Version)
				continue
			}
			if r.Category != c.Name {
				l.add(ProductName, it.ID, RuleRequirementCategory, it.Line, "%s belongs under spec.%s, not spec.%s", it.ID, r.Category, c.Name)
			}
			if it.Level != r.Level {
				l.add(ProductName, it.ID, RuleLevelChanged, it.Line, "level is %q; the checklist says %q", it.Level, r.Level)
			}
			if r.hasDescription && it.Description != r.Description {
				l.add(ProductName, it.ID, RuleDescriptionChanged, it.Line, "description differs from the template's %s", describeDiff(it.Description, r.Description))
			}
			// The level the program judges by is the checklist's, whatever
			// the submission claims.
			l.lintStatus(it, r)
			l.lintEvidence(it, ref.fileEvidence)
		}
	}
	for _, r := range ref.items {
		switch {
		case !cats[r.Category]:
			// Reported once per category below, not once per id.
		case !seen[r.ID]:
			l.add(ProductName, r.ID, RuleRequirementMissing, 0, "%s (%s, %s) is missing from spec.%s", r.ID, r.Level, r.Category, r.Category)
		}
	}
	for _, name := range orderedCategories(ref.items) {
		if !cats[name] {
			l.add(ProductName, "", RuleCategoryMissing, 0, "spec.%s is missing, with its requirements %s", name, strings.Join(idsIn(ref.items, name), ", "))
		}
	}
}

func orderedCategories(items []refItem) []string {
	var out []string
	for _, it := range items {
		if !contains(out, it.Category) {
			out = append(out, it.Category)
		}
	}
	return out
}

func idsIn(items []refItem, category string) []string {
	var out []string
	for _, it := range items {
		if it.Category == category {
			out = append(out, it.ID)
		}
	}
	return out
}

// describeDiff points at the first differing byte: descriptions are long and
// the usual change is one word, or a "fixed" typo the program wants kept.
func describeDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	excerpt := func(s string) string {
		end := min(len(s), i+30)
		return s[i:end]
	}
	return fmt.Sprintf("from byte %d: %q where the template has %q", i, excerpt(got), excerpt(want))
}

func (l *linter) lintStatus(it Item, r refItem) {
	level := r.Level
	valid := contains(Statuses, it.Status)
	// The program skips a SHOULD left as the template has it.
	if it.Status == "" && level == LevelShould && len(it.Evidence) == 0 {
		return
	}
	if !valid {
		l.add(ProductName, it.ID, RuleStatusInvalid, it.Line, "status %q is not one of %s", it.Status, strings.Join(Statuses, ", "))
	}
	switch {
	case level != LevelMust || it.Status == "Implemented":
	case r.conditional:
		// The validator makes no exception for a conditional MUST: the
		// way to say its condition does not hold is in the notes.
		l.add(ProductName, it.ID, RuleMustImplemented, it.Line,
			"a MUST must be Implemented; status is %q; this one is conditional, and "+
				"where its condition does not hold the program still wants Implemented, with "+
				"notes that quote the condition and say what was looked for and not found", it.Status)
	default:
		l.add(ProductName, it.ID, RuleMustImplemented, it.Line, "a MUST must be Implemented; status is %q", it.Status)
	}
	if it.Status == "N/A" && strings.TrimSpace(it.Notes) == "" {
		l.add(ProductName, it.ID, RuleNANotes, it.Line, "N/A needs a justification in notes")
	}
}

func (l *linter) lintEvidence(it Item, fileEvidence bool) {
	for _, e := range it.Evidence {
		switch {
		case strings.HasPrefix(e, "https://") || strings.HasPrefix(e, "http://"):
			l.res.URLs = append(l.res.URLs, URLEvidence{Requirement: it.ID, URL: e})
		case strings.HasPrefix(e, "file://"):
			if !fileEvidence {
				l.add(ProductName, it.ID, RuleEvidenceScheme, it.Line, "%q: file:// evidence is accepted from checklist 1.37; write the path relative to the directory", e)
			}
			p, test, _ := strings.Cut(strings.TrimPrefix(e, "file://"), "#")
			l.lintEvidenceFile(it, e, p, test)
		case strings.Contains(e, "://"):
			l.add(ProductName, it.ID, RuleEvidenceScheme, it.Line, "%q: evidence is an http(s) URL or a file in the directory", e)
		default:
			l.lintEvidenceFile(it, e, e, "")
		}
	}
}

// lintEvidenceFile checks a file reference: inside the directory, present,
// and when it is a test report, passing.
func (l *linter) lintEvidenceFile(it Item, entry, p, test string) {
	if strings.TrimSpace(p) == "" {
		l.add(ProductName, it.ID, RuleEvidenceMissing, it.Line, "%q names no file", entry)
		return
	}
	// The program reads evidence from inside the product folder only; an
	// absolute path or ../ would point at files the pull request lacks.
	if filepath.IsAbs(p) || path.IsAbs(filepath.ToSlash(p)) || !filepath.IsLocal(filepath.FromSlash(p)) || hasDotDot(p) {
		l.add(ProductName, it.ID, RuleEvidenceOutside, it.Line, "%q is not inside the submission directory", entry)
		return
	}
	full := filepath.Join(l.dir, filepath.FromSlash(p))
	st, err := os.Stat(full)
	if err != nil {
		l.add(ProductName, it.ID, RuleEvidenceMissing, it.Line, "%q: no such file in the submission directory", entry)
		return
	}
	if !pathInsideDir(full, l.dir) {
		l.add(ProductName, it.ID, RuleEvidenceOutside, it.Line, "%q resolves, through a symlink, outside the submission directory", entry)
		return
	}
	if st.IsDir() {
		if test != "" {
			l.add(ProductName, it.ID, RuleEvidenceTestcase, it.Line, "%q: %s is a directory, not a test report", entry, p)
		}
		return
	}
	kind := reportKind(p)
	if kind == "" && test == "" {
		return
	}
	if kind == "" {
		// A #TestName on any other file is read as JUnit XML, the format
		// the 1.37 template's example uses.
		kind = kindJUnit
	}
	cases, err := readTestReport(full, kind)
	if err != nil {
		l.add(filepath.ToSlash(p), it.ID, RuleEvidenceFailing, 0, "cannot read the test report: %v", err)
		return
	}
	if test != "" {
		l.lintTestcase(it, entry, p, test, cases)
	}
	// Only files with the exact names are parsed by the program, and
	// they fail the submission if any test in them fails.
	if reportKind(p) != "" {
		var failed []string
		for _, c := range cases {
			if c.Outcome == OutcomeFailed {
				failed = append(failed, c.Name)
			}
		}
		if len(failed) > 0 {
			l.add(filepath.ToSlash(p), it.ID, RuleEvidenceFailing, 0, "%d failing test(s): %s", len(failed), strings.Join(firstN(failed, 5), ", "))
		}
	}
}

func (l *linter) lintTestcase(it Item, entry, p, test string, cases []TestCase) {
	var found bool
	for _, c := range cases {
		if c.Name != test {
			continue
		}
		found = true
		if c.Outcome != OutcomePassed {
			l.add(filepath.ToSlash(p), it.ID, RuleEvidenceTestcase, 0, "%s %s in %s", test, c.Outcome, entry)
		}
	}
	if !found {
		l.add(filepath.ToSlash(p), it.ID, RuleEvidenceTestcase, 0, "no testcase named %s in %s", test, p)
	}
}

func hasDotDot(p string) bool {
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return true
		}
	}
	return false
}

// pathInsideDir reports whether path stays under dir once symlinks are
// resolved.
func pathInsideDir(p, dir string) bool {
	rp, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false
	}
	rd, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(rd, rp)
	return err == nil && filepath.IsLocal(rel)
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
}

// sortProblems orders problems by file, requirement, rule, line, then
// message: the order every lint reports them in.
func sortProblems(ps []LintProblem) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Requirement != b.Requirement {
			return a.Requirement < b.Requirement
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Message < b.Message
	})
}

// Write renders a lint of dir as `submission lint` prints it: problems first, since they are what a
// vendor must fix, then the URLs (checked online, or to be checked by the
// program), then what only the program can check, then the summary.
func (r *LintResult) Write(w io.Writer, dir string, online bool, checked []URLTarget) error {
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	for _, pr := range r.Problems {
		p("%s\n", pr)
	}
	switch {
	case online:
		distinct := map[string]bool{}
		for _, t := range checked {
			distinct[t.URL] = true
		}
		p("checked online: %d URL(s) of evidence and metadata, each must answer below 400\n", len(distinct))
	case len(r.URLs) > 0:
		p("checked online by the program (not here): %d URL(s) must answer below 400\n", len(r.URLs))
		for _, u := range r.URLs {
			p("  %s: %s\n", u.Requirement, u.URL)
		}
	}
	unchecked := "not checked offline"
	if online {
		unchecked = "not checked"
	}
	for _, u := range r.Unchecked {
		p("%s: %s\n", unchecked, u)
	}
	against := "aiconform's built-in checklist " + r.Version
	if r.Template != "" {
		against = r.Template
	}
	if len(r.Problems) == 0 {
		p("%s: no problems against %s\n", dir, against)
	} else {
		p("%s: %d problem(s) against %s\n", dir, len(r.Problems), against)
	}
	return err
}
