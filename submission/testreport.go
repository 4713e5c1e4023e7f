package submission

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
)

// Outcome is how one test ended.
type Outcome string

// Outcomes of a test. Only Passed counts when evidence names the test.
const (
	OutcomePassed  Outcome = "passed"
	OutcomeFailed  Outcome = "failed"
	OutcomeSkipped Outcome = "skipped"
)

// TestCase is one test of a parsed test report.
type TestCase struct {
	Name    string
	Outcome Outcome
}

// The program parses evidence files by exact name, and so does lint.
const (
	kindJUnit  = "junit.xml"
	kindGoJSON = "results.json"
	kindGoV    = "e2e.log"
)

func reportKind(p string) string {
	switch base := path.Base(filepathToSlash(p)); base {
	case kindJUnit, kindGoJSON, kindGoV:
		return base
	}
	return ""
}

// filepathToSlash also turns backslashes into slashes on Linux, where
// filepath.ToSlash would not: a PRODUCT.yaml written on Windows may hold them.
func filepathToSlash(p string) string {
	return string(bytes.ReplaceAll([]byte(p), []byte{'\\'}, []byte{'/'}))
}

func readTestReport(file, kind string) ([]TestCase, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	switch kind {
	case kindGoJSON:
		return parseGoTestJSON(f)
	case kindGoV:
		return parseGoTestV(f)
	default:
		return ParseJUnit(f)
	}
}

// ParseJUnit returns every testcase of a JUnit XML report, at any depth:
// producers disagree on whether the root is <testsuites> or <testsuite> and
// on nesting suites, and the testcases are what matter.
func ParseJUnit(r io.Reader) ([]TestCase, error) {
	type marker struct {
		Message string `xml:"message,attr"`
	}
	type testcase struct {
		Name    string  `xml:"name,attr"`
		Failure *marker `xml:"failure"`
		Error   *marker `xml:"error"`
		Skipped *marker `xml:"skipped"`
	}
	dec := xml.NewDecoder(r)
	var out []TestCase
	var sawRoot bool
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("junit: %w", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if !sawRoot {
			sawRoot = true
			if se.Name.Local != "testsuites" && se.Name.Local != "testsuite" {
				return nil, fmt.Errorf("junit: the root element is <%s>, not <testsuites> or <testsuite>", se.Name.Local)
			}
		}
		if se.Name.Local != "testcase" {
			continue
		}
		var tc testcase
		if err := dec.DecodeElement(&tc, &se); err != nil {
			return nil, fmt.Errorf("junit: %w", err)
		}
		o := OutcomePassed
		switch {
		case tc.Failure != nil || tc.Error != nil:
			o = OutcomeFailed
		case tc.Skipped != nil:
			o = OutcomeSkipped
		}
		out = append(out, TestCase{Name: tc.Name, Outcome: o})
	}
	if !sawRoot {
		return nil, errors.New("junit: no XML element")
	}
	return out, nil
}

// parseGoTestJSON reads `go test -json` output: the last pass, fail or skip
// action of each test decides it.
func parseGoTestJSON(r io.Reader) ([]TestCase, error) {
	dec := json.NewDecoder(r)
	var order []string
	outcome := map[string]Outcome{}
	for {
		var ev struct {
			Action string
			Test   string
		}
		if err := dec.Decode(&ev); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go test -json: %w", err)
		}
		if ev.Test == "" {
			continue
		}
		var o Outcome
		switch ev.Action {
		case "pass":
			o = OutcomePassed
		case "fail":
			o = OutcomeFailed
		case "skip":
			o = OutcomeSkipped
		default:
			continue
		}
		if _, ok := outcome[ev.Test]; !ok {
			order = append(order, ev.Test)
		}
		outcome[ev.Test] = o
	}
	out := make([]TestCase, 0, len(order))
	for _, n := range order {
		out = append(out, TestCase{Name: n, Outcome: outcome[n]})
	}
	return out, nil
}

var goTestVRE = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+)`)

// parseGoTestV reads `go test -v` output by its "--- PASS: Name" lines.
func parseGoTestV(r io.Reader) ([]TestCase, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	var out []TestCase
	for sc.Scan() {
		m := goTestVRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		o := map[string]Outcome{"PASS": OutcomePassed, "FAIL": OutcomeFailed, "SKIP": OutcomeSkipped}[m[1]]
		out = append(out, TestCase{Name: m[2], Outcome: o})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("go test -v: %w", err)
	}
	return out, nil
}
