package submission

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	junit "github.com/joshdk/go-junit"
	"gopkg.in/yaml.v3"
)

// suiteNotePrefix starts the note build writes on a requirement it set
// from another suite's passing testcases, so that a later build knows the
// entry for its own and rewrites it rather than keeping it as the vendor's.
const suiteNotePrefix = "Passed in another suite: "

// Suite is the JUnit XML of another test suite (the upstream conformance
// tests, a vendor's own) whose passing testcases build cites as evidence.
type Suite struct {
	// Source is the file as it was given, for messages.
	Source string
	// Data is the file's bytes, copied into the submission unchanged: the
	// program must read the same testcases build read.
	Data []byte
	// Tests are its testcases, from every suite at any depth.
	Tests []junit.Test
}

// ReadSuite reads and parses the JUnit XML of another suite.
func ReadSuite(path string) (*Suite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseSuite(path, data)
}

// ParseSuite parses the JUnit XML of another suite with go-junit. A file
// without a single testcase is refused: it can be evidence for nothing,
// and is more likely the wrong file.
func ParseSuite(source string, data []byte) (*Suite, error) {
	suites, err := junit.Ingest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: not JUnit XML: %w", source, err)
	}
	s := &Suite{Source: source, Data: data}
	var walk func([]junit.Suite)
	walk = func(ss []junit.Suite) {
		for _, su := range ss {
			s.Tests = append(s.Tests, su.Tests...)
			walk(su.Suites)
		}
	}
	walk(suites)
	if len(s.Tests) == 0 {
		return nil, fmt.Errorf("%s: no <testcase> in any <testsuite>: not the JUnit XML of a test run", source)
	}
	return s, nil
}

// JUnitMap is a --junit-map file: for each requirement id, the testcase
// names or regular expressions whose testcases are evidence for it.
type JUnitMap struct {
	// IDs are the requirement ids in the order of the file.
	IDs      []string
	Patterns map[string][]string
}

// UnknownRequirementError is a --junit-map id that is no requirement of
// the template.
type UnknownRequirementError struct {
	File, ID string
	// Nearest is the closest known id, empty when none is close.
	Nearest string
	Version string
}

// Error names the file, the id and the nearest known id, so that the fix
// is in the message.
func (e *UnknownRequirementError) Error() string {
	msg := fmt.Sprintf("%s: %q is not a requirement of checklist %s", e.File, e.ID, e.Version)
	if e.Nearest != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", e.Nearest)
	}
	return msg
}

// ReadJUnitMap reads and checks a --junit-map file against t.
func (t *Template) ReadJUnitMap(path string) (*JUnitMap, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return t.ParseJUnitMap(path, data)
}

// ParseJUnitMap parses a mapping of requirement ids to lists of testcase
// names or regular expressions. An id that is not the template's is an
// *UnknownRequirementError naming the nearest: a typo would otherwise map
// tests to nothing, silently.
func (t *Template) ParseJUnitMap(name string, data []byte) (*JUnitMap, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: want a mapping of requirement ids to lists of testcase names or regular expressions", name)
	}
	ids := t.ids()
	m := &JUnitMap{Patterns: map[string][]string{}}
	root := doc.Content[0]
	for j := 0; j+1 < len(root.Content); j += 2 {
		k, v := root.Content[j], root.Content[j+1]
		id := k.Value
		if !contains(ids, id) {
			return nil, &UnknownRequirementError{File: name, ID: id, Nearest: nearest(id, ids), Version: t.Checklist.Version}
		}
		if _, dup := m.Patterns[id]; dup {
			return nil, fmt.Errorf("%s: line %d: %s is given twice", name, k.Line, id)
		}
		var pats []string
		if v.Kind != yaml.SequenceNode || v.Decode(&pats) != nil || len(pats) == 0 {
			return nil, fmt.Errorf("%s: line %d: %s: want a list of testcase names or regular expressions", name, v.Line, id)
		}
		for _, p := range pats {
			if strings.TrimSpace(p) == "" {
				return nil, fmt.Errorf("%s: line %d: %s: an empty testcase name", name, v.Line, id)
			}
		}
		m.IDs = append(m.IDs, id)
		m.Patterns[id] = pats
	}
	return m, nil
}

// ids are the template's requirement ids, in its order.
func (t *Template) ids() []string {
	var ids []string
	for _, c := range t.Product.Categories {
		for _, it := range c.Items {
			ids = append(ids, it.ID)
		}
	}
	return ids
}

// matchPattern is a --junit-map entry against a testcase name: the exact
// name, or a regular expression that matches the whole name. Exact first,
// since e2e names hold brackets and parentheses that are not meant as
// regular expressions.
func matchPattern(pattern, name string) bool {
	if pattern == name {
		return true
	}
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	return err == nil && re.MatchString(name)
}

// containsWord reports whether s holds id with no letter, digit or
// underscore on either side: "[sig-ai] dra_support works" and
// "TestDRA/dra_support" hold dra_support, "dra_support_v2" does not.
func containsWord(s, id string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], id)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(id)
		if (start == 0 || !isWordByte(s[start-1])) && (end == len(s) || !isWordByte(s[end])) {
			return true
		}
		i = start + 1
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// SuiteEvidence is what another suite says about one requirement.
type SuiteEvidence struct {
	Requirement string
	// Links are the file://FILE#TestName entries, one per testcase name.
	Links []string
	// Passed is true when every testcase behind Links passed.
	Passed bool
	// NotPassed lists the testcases that did not pass, "NAME (STATUS) in
	// SOURCE", for the summary: a failure is said, never hidden.
	NotPassed []string
	// Used says what build did with it, for the summary.
	Used string
}

// suiteFileNames are where the suites are copied: evidence/STEM/junit.xml,
// named junit.xml because the program parses test reports by that exact
// name, and one directory per suite so that several can sit side by side.
func suiteFileNames(suites []*Suite) []string {
	var names []string
	for _, s := range suites {
		base := filepath.Base(s.Source)
		stem := strings.TrimSuffix(base, filepath.Ext(base))
		stem = strings.Trim(unsafeNameRE.ReplaceAllString(stem, "-"), ".-")
		if stem == "" {
			stem = "suite"
		}
		name := EvidenceDir + "/" + stem + "/" + JUnitName
		for n := 2; contains(names, name); n++ {
			name = fmt.Sprintf("%s/%s-%d/%s", EvidenceDir, stem, n, JUnitName)
		}
		names = append(names, name)
	}
	return names
}

// unsafeNameRE is what a suite's directory name may not hold: the name is
// a path in the submission and in a pull request.
var unsafeNameRE = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// caseRef is one testcase of one suite.
type caseRef struct {
	suite int
	test  junit.Test
}

// mapSuites maps the testcases of the suites to the template's
// requirements and judges each requirement that any testcase maps to. The
// map's entries win: a requirement the map names gets only the testcases
// it lists, and a testcase the map assigns anywhere is not also mapped by
// its name. Warnings name map entries that matched no testcase.
func mapSuites(ids []string, suites []*Suite, names []string, m *JUnitMap) (map[string]*SuiteEvidence, []string) {
	if m == nil {
		m = &JUnitMap{Patterns: map[string][]string{}}
	}
	mapped := map[string][]caseRef{}
	used := map[string]bool{}
	for si, s := range suites {
		for _, tc := range s.Tests {
			explicit := false
			for _, id := range m.IDs {
				for _, p := range m.Patterns[id] {
					if matchPattern(p, tc.Name) {
						mapped[id] = append(mapped[id], caseRef{si, tc})
						used[id+"\x00"+p] = true
						explicit = true
						break
					}
				}
			}
			if explicit {
				continue
			}
			for _, id := range ids {
				if _, inMap := m.Patterns[id]; inMap {
					continue
				}
				if containsWord(tc.Name, id) || containsWord(tc.Classname, id) {
					mapped[id] = append(mapped[id], caseRef{si, tc})
				}
			}
		}
	}
	var warns []string
	for _, id := range m.IDs {
		for _, p := range m.Patterns[id] {
			if !used[id+"\x00"+p] {
				warns = append(warns, fmt.Sprintf("--junit-map: %s: %q matches no testcase of the suites given", id, p))
			}
		}
	}
	out := map[string]*SuiteEvidence{}
	for _, id := range ids {
		refs := mapped[id]
		if len(refs) == 0 {
			continue
		}
		ev := &SuiteEvidence{Requirement: id, Passed: true}
		seen := map[string]bool{}
		for _, r := range refs {
			link := "file://" + names[r.suite] + "#" + r.test.Name
			if seen[link] {
				continue
			}
			seen[link] = true
			ev.Links = append(ev.Links, link)
			// The link names a testcase by name only, and lint and the
			// program judge every testcase of that name: so must build.
			for _, tc := range suites[r.suite].Tests {
				if tc.Name == r.test.Name && tc.Status != junit.StatusPassed {
					ev.Passed = false
					ev.NotPassed = append(ev.NotPassed, fmt.Sprintf("%s (%s) in %s", tc.Name, tc.Status, suites[r.suite].Source))
				}
			}
		}
		out[id] = ev
	}
	return out, warns
}

// suiteNote is the notes of an entry set from another suite alone.
func suiteNote(ev *SuiteEvidence) string {
	var tests []string
	for _, l := range ev.Links {
		_, name, _ := strings.Cut(l, "#")
		tests = append(tests, name)
	}
	return shorten(fmt.Sprintf(suiteNotePrefix+"%d testcase(s), all passed: %s. aiconform did not judge this requirement; the testcases are the evidence.",
		len(tests), strings.Join(tests, ", ")), 600)
}

// failingTests counts the testcases of a suite that failed or errored:
// the program fails a submission whose junit.xml holds any.
func failingTests(s *Suite) []string {
	var out []string
	for _, tc := range s.Tests {
		if tc.Status == junit.StatusFailed || tc.Status == junit.StatusError {
			out = append(out, tc.Name)
		}
	}
	sort.Strings(out)
	return out
}

// WriteSuiteSummary prints what build did with the other suites: for each
// requirement a suite's testcases map to, whether their evidence was used,
// and every testcase that did not pass. It is for stderr, beside the
// table, so that a failure in the other suite is seen.
func (p *Package) WriteSuiteSummary(w io.Writer) error {
	var b bytes.Buffer
	for _, ev := range p.SuiteEvidence {
		if ev.Passed {
			fmt.Fprintf(&b, "--with-junit: %s: %s\n", ev.Requirement, ev.Used)
			continue
		}
		fmt.Fprintf(&b, "--with-junit: %s: not all its testcases passed, %s; %s\n", ev.Requirement, strings.Join(ev.NotPassed, ", "), ev.Used)
	}
	for _, warn := range p.SuiteWarnings {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	_, err := w.Write(b.Bytes())
	return err
}
