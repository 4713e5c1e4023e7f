package checks

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/agnivade/levenshtein"
	"gopkg.in/yaml.v3"
)

// Requirement is an entry of the catalog.
type Requirement struct {
	ID       string `yaml:"id"`
	Title    string `yaml:"title"`
	Category string `yaml:"category"`
	Level    Level  `yaml:"level"`
	// Program is who defines the requirement.
	Program string `yaml:"program"`
	// PerOperator requirements are met when one operator passes all the
	// checks; the others need every check to pass.
	PerOperator bool `yaml:"perOperator"`
	// Solution names what may carry a per-operator requirement, as
	// verdicts say it: "AI operator with CRDs", "gang scheduler".
	Solution string   `yaml:"solution"`
	Checks   []string `yaml:"checks"`
	// ShownBy are the checks that show the solution at work (on the
	// cluster's own workloads, or a probe's). When set, one of them must
	// pass for the solution to carry the requirement: one that is merely
	// installed and healthy does not.
	ShownBy []string `yaml:"shownBy"`
	// UserChecks are the checks among Checks that a user added to a
	// requirement of the checklist (see Extend): its verdict names them.
	UserChecks []string `yaml:"-"`
}

// UserProgram is the Program of a requirement a user declares in their
// own checks: it appears in reports, never in a PRODUCT.yaml, which
// holds only the checklist's ids.
const UserProgram = "user"

//go:embed catalog.yaml
var catalogYAML []byte

// Catalog returns the built-in requirements in report order, checked
// against the registry.
func Catalog(registry []Check) ([]Requirement, error) {
	dec := yaml.NewDecoder(bytes.NewReader(catalogYAML))
	dec.KnownFields(true)
	var reqs []Requirement
	if err := dec.Decode(&reqs); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	known := map[string]bool{}
	for _, c := range registry {
		known[c.Meta().ID] = true
	}
	for _, r := range reqs {
		for _, id := range r.Checks {
			if !known[id] {
				return nil, fmt.Errorf("catalog: requirement %s names unknown check %q", r.ID, id)
			}
		}
		for _, id := range r.ShownBy {
			if !Contains(r.Checks, id) {
				return nil, fmt.Errorf("catalog: requirement %s: shownBy %q is not among its checks", r.ID, id)
			}
		}
		if r.PerOperator && r.Solution == "" {
			return nil, fmt.Errorf("catalog: requirement %s: a per-operator requirement names its solution", r.ID)
		}
	}
	return reqs, nil
}

// Selection is what `aiconform check ID...` asks for.
type Selection struct {
	Requirements []Requirement
	Checks       []Check
}

// Select resolves ids (requirement ids, check ids, or "all") into the
// requirements to report and the checks to run. An unknown id is an error
// that names the nearest known one.
func Select(ids []string, reqs []Requirement, registry []Check) (Selection, error) {
	want := map[string]bool{}
	var picked []Requirement
	for _, id := range ids {
		if id == "all" {
			picked = reqs
			for _, c := range registry {
				want[c.Meta().ID] = true
			}
			continue
		}
		found := false
		for _, r := range reqs {
			if r.ID == id {
				picked = appendReq(picked, r)
				for _, c := range r.Checks {
					want[c] = true
				}
				found = true
			}
		}
		for _, c := range registry {
			if c.Meta().ID == id {
				want[id] = true
				for _, r := range reqs {
					if r.ID == c.Meta().Requirement {
						picked = appendReq(picked, r)
					}
				}
				found = true
			}
		}
		if !found {
			return Selection{}, unknownID(id, reqs, registry)
		}
	}
	var sel Selection
	for _, r := range reqs { // catalog order
		for _, p := range picked {
			if p.ID == r.ID {
				sel.Requirements = append(sel.Requirements, r)
			}
		}
	}
	for _, c := range registry { // registry order
		if want[c.Meta().ID] {
			sel.Checks = append(sel.Checks, c)
		}
	}
	return sel, nil
}

func appendReq(list []Requirement, r Requirement) []Requirement {
	for _, x := range list {
		if x.ID == r.ID {
			return list
		}
	}
	return append(list, r)
}

// UnknownIDError is a requirement or check id that does not exist.
type UnknownIDError struct {
	ID      string
	Nearest string
}

func (e *UnknownIDError) Error() string {
	msg := fmt.Sprintf("unknown requirement or check %q", e.ID)
	if e.Nearest != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", e.Nearest)
	}
	return msg + "; `aiconform list` shows them all"
}

func unknownID(id string, reqs []Requirement, registry []Check) error {
	var names []string
	for _, r := range reqs {
		names = append(names, r.ID)
	}
	for _, c := range registry {
		names = append(names, c.Meta().ID)
	}
	sort.Strings(names)
	return &UnknownIDError{ID: id, Nearest: Nearest(id, names)}
}

// Nearest is the name closest to word by edit distance, for a "did you
// mean": "" when none is within half the word, where a suggestion is
// noise. Ties go to the first of names.
func Nearest(word string, names []string) string {
	best, bestD := "", -1
	for _, n := range names {
		d := levenshtein.ComputeDistance(strings.ToLower(word), strings.ToLower(n))
		if bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	if bestD > len(word)/2+1 {
		return ""
	}
	return best
}

// CatalogDigest identifies what a run judged by: the requirement catalog,
// the built-in profiles and every check's metadata. Two reports with the
// same digest were judged by the same rules, whatever the tool version.
func CatalogDigest(registry []Check, profiles []*Profile) (string, error) {
	h := sha256.New()
	h.Write(catalogYAML)
	enc := json.NewEncoder(h)
	for _, c := range registry {
		if err := enc.Encode(c.Meta()); err != nil {
			return "", err
		}
	}
	for _, p := range profiles {
		if err := enc.Encode(p); err != nil {
			return "", err
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
