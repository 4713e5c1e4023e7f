package report

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/aiconform/aiconform/checks"
	"github.com/pmezard/go-difflib/difflib"
)

// DiffSchemaVersion is the version of the JSON that DiffJSON writes. Fields
// are added without changing it; renaming or removing one bumps it.
const DiffSchemaVersion = "1"

// maxDiffLines is how many changed lines of one evidence output are shown:
// enough to see what moved, few enough that a diff of two large clusters
// stays readable. The rest is counted, and report.json has it all.
const maxDiffLines = 10

// maxDiffCells bounds the line matching (old lines × new lines) of one
// evidence output; beyond it the output is shown as replaced whole rather
// than spending time on a `kubectl get pods -A` of a big cluster.
const maxDiffCells = 4 << 20

// Changes is what differs between two reports, each group in the order of
// the new report (then what only the old one had), so that the same two
// reports always give the same Changes.
type Changes struct {
	SchemaVersion string `json:"schemaVersion"`
	Old           RunRef `json:"old"`
	New           RunRef `json:"new"`
	// DifferentClusters is true when both runs name a cluster ID and the
	// IDs differ: a change may then come from the cluster, not a release.
	DifferentClusters bool                `json:"differentClusters"`
	Run               []RunChange         `json:"run"`
	Requirements      []RequirementChange `json:"requirements"`
	Operators         []OperatorChange    `json:"operators"`
	Checks            []CheckChange       `json:"checks"`
	Evidence          []EvidenceChange    `json:"evidence"`
	// Regressions are the requirements that got worse; a CI gates on
	// Regressed.
	Regressions []Regression `json:"regressions"`
	Regressed   bool         `json:"regressed"`
}

// Empty is true when the two reports differ in nothing Diff compares.
func (c Changes) Empty() bool {
	return len(c.Run) == 0 && len(c.Requirements) == 0 && len(c.Operators) == 0 &&
		len(c.Checks) == 0 && len(c.Evidence) == 0
}

// RunRef identifies one of the two runs in the output, so that a diff read
// later still says which reports it compared.
type RunRef struct {
	Source    string    `json:"source"`
	StartedAt time.Time `json:"startedAt"`
	Digest    string    `json:"digest,omitempty"`
}

// RunChange is one header fact that differs: clusterID, serverVersion,
// toolVersion, source (live or which recording), failOn or verdict.
type RunChange struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

// Kinds of change, shared by the groups that use them.
const (
	KindAdded   = "added"
	KindRemoved = "removed"
)

// RequirementChange is one change of a requirement's verdict. Kind is added
// or removed (the requirement was judged in one run only; Old or New holds
// its status), status, result or operator (which operator carries it).
type RequirementChange struct {
	ID    string `json:"id"`
	Level string `json:"level"`
	Kind  string `json:"kind"`
	Old   string `json:"old"`
	New   string `json:"new"`
	// Regression marks the change that makes the requirement a regression.
	Regression bool `json:"regression"`
}

// OperatorChange is one change of an operator profile's standing. Kind is
// added or removed (the profile was looked for in one run only), detected,
// undetected, version (Subject is an image repository, Old and New its
// tags), image-added, image-removed, crd-added or crd-removed (Subject is
// the image or CRD).
type OperatorChange struct {
	Operator string `json:"operator"`
	Kind     string `json:"kind"`
	Subject  string `json:"subject,omitempty"`
	Old      string `json:"old,omitempty"`
	New      string `json:"new,omitempty"`
}

// CheckChange is one change of a check's result for one target. Kind is
// added, removed, status or reason (same status, new reason). Reason is the
// new run's reason, or the old one's for a removed check.
type CheckChange struct {
	ID        string `json:"id"`
	Operator  string `json:"operator,omitempty"`
	Kind      string `json:"kind"`
	OldStatus string `json:"oldStatus,omitempty"`
	NewStatus string `json:"newStatus,omitempty"`
	Reason    string `json:"reason"`
}

// EvidenceChange is one evidence command of a check that was added,
// removed, or whose output changed (Kind output). Diff holds the changed
// lines in unified style ("@@ -3 +3 @@", "-old", "+new"), at most
// maxDiffLines of them; Omitted counts those left out.
type EvidenceChange struct {
	Check    string   `json:"check"`
	Operator string   `json:"operator,omitempty"`
	Kind     string   `json:"kind"`
	Command  string   `json:"command"`
	Diff     []string `json:"diff,omitempty"`
	Omitted  int      `json:"omitted,omitempty"`
}

// Regression is a requirement that got worse, with why in one line.
type Regression struct {
	Requirement string `json:"requirement"`
	Level       string `json:"level"`
	Reason      string `json:"reason"`
}

// Diff compares two reports. It reads no clock and no file, so that a diff
// is as reproducible as the reports it compares. A nil report is an empty
// one.
func Diff(old, new *Report) Changes {
	if old == nil {
		old = &Report{}
	}
	if new == nil {
		new = &Report{}
	}
	c := Changes{
		SchemaVersion: DiffSchemaVersion,
		Old:           runRef(old),
		New:           runRef(new),
		Run:           []RunChange{},
		Requirements:  []RequirementChange{},
		Operators:     []OperatorChange{},
		Checks:        []CheckChange{},
		Evidence:      []EvidenceChange{},
		Regressions:   []Regression{},
	}
	c.diffRun(old, new)
	c.diffRequirements(old, new)
	c.diffOperators(old, new)
	c.diffChecks(old, new)
	c.Regressed = len(c.Regressions) > 0
	return c
}

func runRef(r *Report) RunRef {
	return RunRef{Source: source(r), StartedAt: r.Run.StartedAt, Digest: r.Digest}
}

// source says whether a run read a live cluster or a recording, because a
// change between the two is a change of method, not of the cluster.
func source(r *Report) string {
	info := r.Run.Cluster
	if info.Live {
		return "live"
	}
	if info.Source == "" {
		return "recording"
	}
	return "recording " + info.Source
}

func verdictOf(r *Report) string {
	if r.Summary.Passed {
		return "PASSED"
	}
	return "FAILED"
}

func (c *Changes) diffRun(old, new *Report) {
	oi, ni := old.Run.Cluster, new.Run.Cluster
	c.DifferentClusters = oi.ClusterID != "" && ni.ClusterID != "" && oi.ClusterID != ni.ClusterID
	for _, f := range []RunChange{
		{"clusterID", oi.ClusterID, ni.ClusterID},
		{"serverVersion", oi.ServerVersion, ni.ServerVersion},
		{"toolVersion", old.Tool.Version, new.Tool.Version},
		{"source", source(old), source(new)},
		{"failOn", old.Run.FailOn, new.Run.FailOn},
		{"verdict", verdictOf(old), verdictOf(new)},
	} {
		if f.Old != f.New {
			c.Run = append(c.Run, f)
		}
	}
}

// rank orders requirement statuses from worst to best; N/A and anything
// unknown are 0, neither better nor worse, because a requirement that stops
// applying has not regressed.
func rank(status string) int {
	switch checks.RequirementStatus(status) {
	case checks.NotImplemented:
		return 1
	case checks.PartiallyImplemented:
		return 2
	case checks.Implemented:
		return 3
	}
	return 0
}

// metResult is a result a MUST may move away from only as a regression:
// skip is left out since a skipped requirement was not judged.
func metResult(result string) bool {
	return result == string(checks.Pass) || result == string(checks.Warn)
}

func unmetResult(result string) bool {
	return result == string(checks.Fail) || result == string(checks.Error)
}

func (c *Changes) diffRequirements(old, new *Report) {
	olds := map[string]Requirement{}
	for _, r := range old.Requirements {
		if _, dup := olds[r.ID]; !dup {
			olds[r.ID] = r
		}
	}
	seen := map[string]bool{}
	for _, n := range new.Requirements {
		if seen[n.ID] {
			continue
		}
		seen[n.ID] = true
		o, ok := olds[n.ID]
		if !ok {
			c.Requirements = append(c.Requirements, RequirementChange{ID: n.ID, Level: n.Level, Kind: KindAdded, New: n.Status})
			continue
		}
		var why []string
		if o.Status != n.Status {
			worse := rank(o.Status) > 0 && rank(n.Status) > 0 && rank(n.Status) < rank(o.Status)
			c.Requirements = append(c.Requirements, RequirementChange{ID: n.ID, Level: n.Level, Kind: "status", Old: o.Status, New: n.Status, Regression: worse})
			if worse {
				why = append(why, o.Status+" → "+n.Status)
			}
		}
		if o.Result != n.Result {
			// Either level counts: demoting a requirement in the catalog
			// must not hide that it stopped being met.
			must := o.Level == string(checks.Must) || n.Level == string(checks.Must)
			worse := must && metResult(o.Result) && unmetResult(n.Result)
			c.Requirements = append(c.Requirements, RequirementChange{ID: n.ID, Level: n.Level, Kind: "result", Old: o.Result, New: n.Result, Regression: worse})
			if worse {
				why = append(why, "result "+o.Result+" → "+n.Result)
			}
		}
		if o.Operator != n.Operator {
			c.Requirements = append(c.Requirements, RequirementChange{ID: n.ID, Level: n.Level, Kind: "operator", Old: o.Operator, New: n.Operator})
		}
		if len(why) > 0 {
			c.Regressions = append(c.Regressions, Regression{Requirement: n.ID, Level: n.Level, Reason: strings.Join(why, ", ")})
		}
	}
	for _, o := range old.Requirements {
		if seen[o.ID] {
			continue
		}
		seen[o.ID] = true
		// A requirement met before and not judged now counts: otherwise a
		// release could pass the gate by dropping the check that failed.
		worse := o.Status == string(checks.Implemented)
		c.Requirements = append(c.Requirements, RequirementChange{ID: o.ID, Level: o.Level, Kind: KindRemoved, Old: o.Status, Regression: worse})
		if worse {
			c.Regressions = append(c.Regressions, Regression{Requirement: o.ID, Level: o.Level, Reason: o.Status + " → not judged"})
		}
	}
}

func (c *Changes) diffOperators(old, new *Report) {
	olds := map[string]Operator{}
	for _, op := range old.Operators {
		if _, dup := olds[op.Name]; !dup {
			olds[op.Name] = op
		}
	}
	seen := map[string]bool{}
	for _, n := range new.Operators {
		if seen[n.Name] {
			continue
		}
		seen[n.Name] = true
		o, ok := olds[n.Name]
		switch {
		case !ok:
			c.Operators = append(c.Operators, OperatorChange{Operator: n.Name, Kind: KindAdded, New: detected(n.Detected)})
		case o.Detected && !n.Detected:
			c.Operators = append(c.Operators, OperatorChange{Operator: n.Name, Kind: "undetected"})
		case !o.Detected && n.Detected:
			c.Operators = append(c.Operators, OperatorChange{Operator: n.Name, Kind: "detected"})
		case o.Detected && n.Detected:
			// Images and CRDs are compared only while the operator is
			// there in both runs; otherwise "undetected" says it all.
			c.diffImages(n.Name, o.Versions, n.Versions)
			added, removed := setDiff(o.CRDs, n.CRDs)
			for _, crd := range added {
				c.Operators = append(c.Operators, OperatorChange{Operator: n.Name, Kind: "crd-added", Subject: crd})
			}
			for _, crd := range removed {
				c.Operators = append(c.Operators, OperatorChange{Operator: n.Name, Kind: "crd-removed", Subject: crd})
			}
		}
	}
	for _, o := range old.Operators {
		if !seen[o.Name] {
			seen[o.Name] = true
			c.Operators = append(c.Operators, OperatorChange{Operator: o.Name, Kind: KindRemoved, Old: detected(o.Detected)})
		}
	}
}

func detected(d bool) string {
	if d {
		return "detected"
	}
	return "not detected"
}

// diffImages pairs images by repository, so that an upgrade reads as one
// version change rather than an image removed and another added.
func (c *Changes) diffImages(op string, old, new []string) {
	oldTags := map[string][]string{}
	var oldRepos []string
	for _, img := range old {
		repo, tag := splitImage(img)
		if _, ok := oldTags[repo]; !ok {
			oldRepos = append(oldRepos, repo)
		}
		oldTags[repo] = append(oldTags[repo], tag)
	}
	newTags := map[string][]string{}
	var newRepos []string
	for _, img := range new {
		repo, tag := splitImage(img)
		if _, ok := newTags[repo]; !ok {
			newRepos = append(newRepos, repo)
		}
		newTags[repo] = append(newTags[repo], tag)
	}
	for _, repo := range newRepos {
		ot, ok := oldTags[repo]
		if !ok {
			for _, tag := range newTags[repo] {
				c.Operators = append(c.Operators, OperatorChange{Operator: op, Kind: "image-added", Subject: joinImage(repo, tag)})
			}
			continue
		}
		o, n := strings.Join(ot, ", "), strings.Join(newTags[repo], ", ")
		if o != n {
			c.Operators = append(c.Operators, OperatorChange{Operator: op, Kind: "version", Subject: repo, Old: o, New: n})
		}
	}
	for _, repo := range oldRepos {
		if _, ok := newTags[repo]; !ok {
			for _, tag := range oldTags[repo] {
				c.Operators = append(c.Operators, OperatorChange{Operator: op, Kind: "image-removed", Subject: joinImage(repo, tag)})
			}
		}
	}
}

// splitImage splits an image reference into repository and tag or digest.
// The tag's colon is the last one after the last slash, so that a registry
// port (registry:5000/x) stays in the repository.
func splitImage(img string) (repo, tag string) {
	if i := strings.Index(img, "@"); i >= 0 {
		return img[:i], img[i:]
	}
	slash := strings.LastIndex(img, "/")
	if i := strings.LastIndex(img, ":"); i > slash {
		return img[:i], img[i+1:]
	}
	return img, ""
}

func joinImage(repo, tag string) string {
	switch {
	case tag == "":
		return repo
	case strings.HasPrefix(tag, "@"):
		return repo + tag
	}
	return repo + ":" + tag
}

// setDiff returns what b has that a lacks, and what a has that b lacks,
// each in its own slice's order.
func setDiff(a, b []string) (added, removed []string) {
	in := func(s []string, x string) bool {
		for _, y := range s {
			if y == x {
				return true
			}
		}
		return false
	}
	for _, x := range b {
		if !in(a, x) {
			added = append(added, x)
		}
	}
	for _, x := range a {
		if !in(b, x) {
			removed = append(removed, x)
		}
	}
	return added, removed
}

// checkKey is how a check result is matched across runs: the same check on
// the same operator. A check serving two requirements appears once.
type checkKey struct{ id, operator string }

func checksOf(r *Report) ([]checkKey, map[checkKey]Check) {
	var order []checkKey
	byKey := map[checkKey]Check{}
	for _, req := range r.Requirements {
		for _, ch := range req.Checks {
			k := checkKey{ch.ID, ch.Operator}
			if _, dup := byKey[k]; dup {
				continue
			}
			byKey[k] = ch
			order = append(order, k)
		}
	}
	return order, byKey
}

func (c *Changes) diffChecks(old, new *Report) {
	oldOrder, olds := checksOf(old)
	newOrder, news := checksOf(new)
	for _, k := range newOrder {
		n := news[k]
		o, ok := olds[k]
		switch {
		case !ok:
			c.Checks = append(c.Checks, CheckChange{ID: k.id, Operator: k.operator, Kind: KindAdded, NewStatus: n.Status, Reason: n.Reason})
			continue
		case o.Status != n.Status:
			c.Checks = append(c.Checks, CheckChange{ID: k.id, Operator: k.operator, Kind: "status", OldStatus: o.Status, NewStatus: n.Status, Reason: n.Reason})
		case o.Reason != n.Reason:
			c.Checks = append(c.Checks, CheckChange{ID: k.id, Operator: k.operator, Kind: "reason", OldStatus: o.Status, NewStatus: n.Status, Reason: n.Reason})
		}
		c.diffEvidence(k, o.Evidence, n.Evidence)
	}
	for _, k := range oldOrder {
		if _, ok := news[k]; !ok {
			o := olds[k]
			c.Checks = append(c.Checks, CheckChange{ID: k.id, Operator: k.operator, Kind: KindRemoved, OldStatus: o.Status, Reason: o.Reason})
		}
	}
}

// evidenceKey matches evidence by command, and by how many times the
// command came before within the check, so that a check that runs the same
// command twice is compared block by block.
type evidenceKey struct {
	command string
	n       int
}

func evidenceOf(es []Evidence) ([]evidenceKey, map[evidenceKey]Evidence) {
	var order []evidenceKey
	byKey := map[evidenceKey]Evidence{}
	count := map[string]int{}
	for _, e := range es {
		k := evidenceKey{e.Command, count[e.Command]}
		count[e.Command]++
		byKey[k] = e
		order = append(order, k)
	}
	return order, byKey
}

func (c *Changes) diffEvidence(k checkKey, old, new []Evidence) {
	oldOrder, olds := evidenceOf(old)
	newOrder, news := evidenceOf(new)
	for _, ek := range newOrder {
		o, ok := olds[ek]
		if !ok {
			c.Evidence = append(c.Evidence, EvidenceChange{Check: k.id, Operator: k.operator, Kind: KindAdded, Command: ek.command})
			continue
		}
		lines, omitted := outputDiff(o.Output, news[ek].Output)
		if len(lines) > 0 {
			c.Evidence = append(c.Evidence, EvidenceChange{Check: k.id, Operator: k.operator, Kind: "output", Command: ek.command, Diff: lines, Omitted: omitted})
		}
	}
	for _, ek := range oldOrder {
		if _, ok := news[ek]; !ok {
			c.Evidence = append(c.Evidence, EvidenceChange{Check: k.id, Operator: k.operator, Kind: KindRemoved, Command: ek.command})
		}
	}
}

// ageValue is what kubectl prints for an age: 0s, 2m3s, 5d, 3y45d.
var ageValue = regexp.MustCompile(`^(?:(?:\d+[smhdy])+|<unknown>|<invalid>)$`)

// columnGap separates the columns of kubectl's tables: at least two spaces,
// while a single space may sit inside a header (CREATED AT) or a cell
// (7 (2m3s ago)).
var columnGap = regexp.MustCompile(`\s{2,}`)

// comparableLines returns each line of a kubectl output as it is compared: the
// AGE column cut out, because it changes on every run and says nothing
// about the cluster, and runs of whitespace made one space, because column
// widths follow the widest cell.
//
// kubectl aligns a table's cells under its header, so AGE is cut at the
// header's offsets, block by block (a blank line starts a new table, as in
// `kubectl get deploy,pods`). A block without a header (its rows went
// through grep) loses its last column when that column reads as an age,
// which is where `kubectl get` puts AGE unless -o wide adds more.
func comparableLines(output string) []string {
	lines := splitLines(output)
	out := make([]string, len(lines))
	var cut []int // [start, end) of AGE in the current block, in runes
	header := false
	for i, line := range lines {
		first := i == 0 || strings.TrimSpace(lines[i-1]) == ""
		if first {
			cut, header = ageColumn(line)
		}
		text := line
		switch {
		case strings.TrimSpace(line) == "":
		case header && cut != nil:
			r := []rune(line)
			if cut[0] < len(r) {
				end := min(cut[1], len(r))
				text = string(r[:cut[0]]) + " " + string(r[end:])
			}
		case !header:
			fields := columnGap.Split(strings.TrimSpace(line), -1)
			if len(fields) >= 2 && ageValue.MatchString(fields[len(fields)-1]) {
				text = strings.Join(fields[:len(fields)-1], "  ")
			}
		}
		out[i] = strings.Join(strings.Fields(text), " ")
	}
	return out
}

// ageColumn reads line as a kubectl table header. header is true when it
// is one; cut is the rune span of its AGE column, or nil without one.
func ageColumn(line string) (cut []int, header bool) {
	r := []rune(strings.TrimRight(line, " "))
	if len(r) == 0 || r[0] == ' ' {
		return nil, false
	}
	// Column starts: the line's start, and each non-space after a gap of
	// two spaces or more.
	var starts []int
	for i, ch := range r {
		if ch != ' ' && (i == 0 || (i >= 2 && r[i-1] == ' ' && r[i-2] == ' ')) {
			starts = append(starts, i)
		}
	}
	for _, ch := range r {
		if ch != ' ' && !unicode.IsUpper(ch) && !unicode.IsDigit(ch) && !strings.ContainsRune("_-()./", ch) {
			return nil, false
		}
	}
	for j, s := range starts {
		end := len(r)
		if j+1 < len(starts) {
			end = starts[j+1]
		}
		if strings.TrimSpace(string(r[s:end])) == "AGE" {
			if j+1 == len(starts) {
				end = 1 << 30 // the last column runs to the end of every row
			}
			return []int{s, end}, true
		}
	}
	return nil, true
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return lines
}

// outputDiff compares two outputs line by line, ignoring what comparableLines
// ignores, and returns the changed lines as they were printed, in unified
// style, with how many changed lines it left out.
func outputDiff(old, new string) (lines []string, omitted int) {
	a, b := splitLines(old), splitLines(new)
	ops := matchLines(comparableLines(old), comparableLines(new))
	shown := 0
	i, j := 0, 0
	for k := 0; k < len(ops); {
		if ops[k] == opEqual {
			i, j, k = i+1, j+1, k+1
			continue
		}
		// A hunk: the run of deletions and insertions up to the next
		// equal line, shown as all deletions then all insertions.
		var dels, ins []string
		i0, j0 := i, j
		for ; k < len(ops) && ops[k] != opEqual; k++ {
			if ops[k] == opDelete {
				dels = append(dels, a[i])
				i++
			} else {
				ins = append(ins, b[j])
				j++
			}
		}
		// A hunk cut short keeps as many of its new lines as of its old
		// ones, so that what replaced the old lines is seen too.
		budget := maxDiffLines - shown
		nd, ni := len(dels), len(ins)
		if nd+ni > budget {
			nd = min(nd, max(budget/2, budget-ni))
			ni = min(ni, budget-nd)
		}
		omitted += len(dels) - nd + len(ins) - ni
		if nd+ni == 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("@@ -%s +%s @@", hunkRange(i0, len(dels)), hunkRange(j0, len(ins))))
		lines = append(lines, prefixed("-", dels[:nd])...)
		lines = append(lines, prefixed("+", ins[:ni])...)
		shown += nd + ni
	}
	return lines, omitted
}

func prefixed(p string, ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = p + l
	}
	return out
}

// hunkRange writes a range as unified diffs do: "3" for one line, "3,2" for
// two from line 3, and "2,0" for none, after line 2.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

type lineOp int

const (
	opEqual lineOp = iota
	opDelete
	opInsert
)

// matchLines returns an edit script from a to b, from go-difflib's
// matcher (Python's difflib ported): its matching blocks are what a
// reader takes for unchanged. Its heuristic that treats frequent lines as
// junk is off, so that a Table's repeated rows still match.
func matchLines(a, b []string) []lineOp {
	var ops []lineOp
	if len(a)*len(b) > maxDiffCells {
		for range a {
			ops = append(ops, opDelete)
		}
		for range b {
			ops = append(ops, opInsert)
		}
		return ops
	}
	m := difflib.NewMatcherWithJunk(a, b, false, nil)
	for _, op := range m.GetOpCodes() {
		for range op.I2 - op.I1 {
			if op.Tag == 'e' {
				ops = append(ops, opEqual)
			} else if op.Tag != 'i' {
				ops = append(ops, opDelete)
			}
		}
		if op.Tag == 'i' || op.Tag == 'r' {
			for range op.J2 - op.J1 {
				ops = append(ops, opInsert)
			}
		}
	}
	return ops
}

// DiffJSON writes c as indented JSON for machines: every list present,
// possibly empty, in the order Diff gives.
func DiffJSON(w io.Writer, c Changes) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(c)
}

// DiffText writes c as plain text, one line per change under a heading per
// group, evidence diffs indented below their change, and ends on a line
// saying whether a requirement regressed, so that CI logs end on it.
func DiffText(w io.Writer, c Changes) error {
	t := &text{w: w}
	t.printf("old: %s\n", describeRun(c.Old))
	t.printf("new: %s\n", describeRun(c.New))
	if c.Empty() {
		t.printf("\nno changes\n")
	}
	if len(c.Run) > 0 {
		t.printf("\nrun:\n")
		for _, r := range c.Run {
			t.printf("  %s: %s → %s\n", runFieldNames[r.Field], orNone(r.Old), orNone(r.New))
			if r.Field == "clusterID" && c.DifferentClusters {
				t.printf("  the two runs are of different clusters: a change below may come from the cluster, not from a release\n")
			}
		}
	}
	if len(c.Requirements) > 0 {
		t.printf("\nrequirements:\n")
		for _, r := range c.Requirements {
			t.printf("  %s%s\n", requirementLine(r), regressionMark(r.Regression))
		}
	}
	if len(c.Operators) > 0 {
		t.printf("\noperators:\n")
		for _, o := range c.Operators {
			t.printf("  %s\n", operatorLine(o))
		}
	}
	if len(c.Checks) > 0 {
		t.printf("\nchecks:\n")
		for _, ch := range c.Checks {
			t.printf("  %s\n", checkLine(ch))
		}
	}
	if len(c.Evidence) > 0 {
		t.printf("\nevidence:\n")
		for _, e := range c.Evidence {
			t.printf("  %s\n", evidenceLine(e))
			for _, l := range e.Diff {
				t.printf("      %s\n", oneLine(l))
			}
			if e.Omitted > 0 {
				t.printf("      … %d more changed %s\n", e.Omitted, plural(e.Omitted, "line", "lines"))
			}
		}
	}
	t.printf("\n%s\n", DiffVerdict(c))
	return t.err
}

// DiffVerdict is the diff's last line: whether a requirement regressed, and
// which.
func DiffVerdict(c Changes) string {
	if len(c.Regressions) == 0 {
		return "no regression: no requirement got worse"
	}
	parts := make([]string, len(c.Regressions))
	for i, r := range c.Regressions {
		parts[i] = fmt.Sprintf("%s (%s): %s", r.Requirement, orNone(r.Level), r.Reason)
	}
	return fmt.Sprintf("REGRESSION: %d %s got worse: %s", len(parts),
		plural(len(parts), "requirement", "requirements"), strings.Join(parts, "; "))
}

// text writes plain text and keeps the first write error, so the
// rendering reads top to bottom without an error check per line.
type text struct {
	w   io.Writer
	err error
}

func (t *text) printf(format string, args ...any) {
	if t.err != nil {
		return
	}
	_, t.err = fmt.Fprintf(t.w, format, args...)
}

var runFieldNames = map[string]string{
	"clusterID":     "cluster id",
	"serverVersion": "server version",
	"toolVersion":   "tool version",
	"source":        "source",
	"failOn":        "fail on",
	"verdict":       "verdict",
}

func describeRun(r RunRef) string {
	s := orNone(r.Source)
	if !r.StartedAt.IsZero() {
		s += ", started " + r.StartedAt.UTC().Format(time.RFC3339)
	}
	if r.Digest != "" {
		s += ", digest " + r.Digest
	}
	return s
}

func requirementLine(r RequirementChange) string {
	switch r.Kind {
	case KindAdded:
		return fmt.Sprintf("%s: judged only in the new run: %s", r.ID, orNone(r.New))
	case KindRemoved:
		return fmt.Sprintf("%s: not judged in the new run (was %s)", r.ID, orNone(r.Old))
	case "result":
		return fmt.Sprintf("%s: result %s → %s", r.ID, orNone(r.Old), orNone(r.New))
	case "operator":
		return fmt.Sprintf("%s: carried by %s → %s", r.ID, orNone(r.Old), orNone(r.New))
	}
	return fmt.Sprintf("%s: %s → %s", r.ID, orNone(r.Old), orNone(r.New))
}

func regressionMark(regression bool) string {
	if regression {
		return "  [regression]"
	}
	return ""
}

func operatorLine(o OperatorChange) string {
	switch o.Kind {
	case KindAdded:
		return fmt.Sprintf("%s: looked for only in the new run (%s)", o.Operator, o.New)
	case KindRemoved:
		return fmt.Sprintf("%s: looked for only in the old run (%s)", o.Operator, o.Old)
	case "detected":
		return fmt.Sprintf("%s: not detected → detected", o.Operator)
	case "undetected":
		return fmt.Sprintf("%s: detected → not detected", o.Operator)
	case "version":
		return fmt.Sprintf("%s: %s %s → %s", o.Operator, o.Subject, orNone(o.Old), orNone(o.New))
	case "image-added":
		return fmt.Sprintf("%s: image %s added", o.Operator, o.Subject)
	case "image-removed":
		return fmt.Sprintf("%s: image %s removed", o.Operator, o.Subject)
	case "crd-added":
		return fmt.Sprintf("%s: CRD %s added", o.Operator, o.Subject)
	case "crd-removed":
		return fmt.Sprintf("%s: CRD %s removed", o.Operator, o.Subject)
	}
	return fmt.Sprintf("%s: %s %s", o.Operator, o.Kind, o.Subject)
}

func target(id, operator string) string {
	if operator == "" {
		return id
	}
	return id + " (" + operator + ")"
}

func checkLine(c CheckChange) string {
	name := target(c.ID, c.Operator)
	reason := oneLine(c.Reason)
	switch c.Kind {
	case KindAdded:
		return fmt.Sprintf("%s: run only in the new run: %s: %s", name, c.NewStatus, reason)
	case KindRemoved:
		return fmt.Sprintf("%s: not run in the new run (was %s: %s)", name, c.OldStatus, reason)
	case "reason":
		return fmt.Sprintf("%s: still %s, now: %s", name, c.NewStatus, reason)
	}
	return fmt.Sprintf("%s: %s → %s: %s", name, c.OldStatus, c.NewStatus, reason)
}

func evidenceLine(e EvidenceChange) string {
	name := target(e.Check, e.Operator)
	cmd := oneLine(e.Command)
	switch e.Kind {
	case KindAdded:
		return fmt.Sprintf("%s: new command: %s", name, cmd)
	case KindRemoved:
		return fmt.Sprintf("%s: command gone: %s", name, cmd)
	}
	return fmt.Sprintf("%s: output changed: %s", name, cmd)
}

// oneLine keeps a value on its line: a reason or command with a newline
// would otherwise break the one-line-per-change layout.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return oneLine(s)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
