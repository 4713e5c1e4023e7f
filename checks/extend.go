package checks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Extensions are what a user adds to the built-in catalog for a run:
// checks of their own (declarative, or plugins), requirements of their
// own, and requirements or checks the run leaves out with a reason.
type Extensions struct {
	// Checks are the user's. Each names in Meta.Requirement a requirement
	// of the checklist or one of Requirements.
	Checks []Check
	// Requirements are the user's own; Extend sets their Program and
	// their Checks.
	Requirements []Requirement
	// Origin says where each of the user's checks and requirements was
	// declared (a file, file:line, PATH), by id.
	Origin map[string]string
	Skips  []Exclusion
}

// Exclusion is a requirement or check a run leaves out, and why.
type Exclusion struct {
	ID     string
	Reason string
	// Source is where the skip was asked for (aiconform.yaml:12).
	Source string
}

// Empty is true when there is nothing to add or leave out.
func (e Extensions) Empty() bool {
	return len(e.Checks) == 0 && len(e.Requirements) == 0 && len(e.Skips) == 0
}

// Extend returns the catalog and the registry with the user's checks and
// requirements added. The inputs are not changed: a checklist requirement
// that gains a user's check is a copy, with the check in its Checks and
// in UserChecks. An id that clashes with a built-in one, a check whose
// requirement is nowhere, or a skip of an unknown id is an error.
func Extend(reqs []Requirement, registry []Check, ext Extensions) ([]Requirement, []Check, error) {
	out := slices.Clone(reqs)
	index := map[string]int{}
	for i, r := range out {
		index[r.ID] = i
	}
	checkIDs := map[string]bool{}
	for _, c := range registry {
		checkIDs[c.Meta().ID] = true
	}
	for _, r := range ext.Requirements {
		if _, dup := index[r.ID]; dup {
			return nil, nil, fmt.Errorf("%s: requirement %s is already defined", origin(ext, r.ID), r.ID)
		}
		if checkIDs[r.ID] {
			return nil, nil, fmt.Errorf("%s: requirement %s has the id of a check", origin(ext, r.ID), r.ID)
		}
		r.Program, r.Checks, r.ShownBy, r.PerOperator = UserProgram, nil, nil, false
		if r.Category == "" {
			r.Category = UserProgram
		}
		index[r.ID] = len(out)
		out = append(out, r)
	}
	all := slices.Clone(registry)
	for _, c := range ext.Checks {
		m := c.Meta()
		if checkIDs[m.ID] {
			return nil, nil, fmt.Errorf("%s: check %s is already defined", origin(ext, m.ID), m.ID)
		}
		if _, clash := index[m.ID]; clash {
			return nil, nil, fmt.Errorf("%s: check %s has the id of a requirement", origin(ext, m.ID), m.ID)
		}
		i, ok := index[m.Requirement]
		if !ok {
			msg := fmt.Sprintf("%s: check %s names requirement %q, which is neither the checklist's nor declared", origin(ext, m.ID), m.ID, m.Requirement)
			if near := Nearest(m.Requirement, slices.Sorted(maps.Keys(index))); near != "" {
				msg += fmt.Sprintf("; did you mean %q?", near)
			}
			return nil, nil, fmt.Errorf("%s", msg)
		}
		r := out[i]
		r.Checks = append(slices.Clone(r.Checks), m.ID)
		if r.Program != UserProgram {
			r.UserChecks = append(slices.Clone(r.UserChecks), m.ID)
		}
		out[i] = r
		checkIDs[m.ID] = true
		all = append(all, c)
	}
	for _, s := range ext.Skips {
		if _, ok := index[s.ID]; !ok && !checkIDs[s.ID] {
			names := slices.Sorted(maps.Keys(index))
			for id := range checkIDs {
				names = append(names, id)
			}
			sort.Strings(names)
			msg := fmt.Sprintf("%s: skip %s: no requirement or check has that id", s.Source, s.ID)
			if near := Nearest(s.ID, names); near != "" {
				msg += fmt.Sprintf("; did you mean %q?", near)
			}
			return nil, nil, fmt.Errorf("%s", msg)
		}
	}
	return out, all, nil
}

func origin(ext Extensions, id string) string {
	if o := ext.Origin[id]; o != "" {
		return o
	}
	return "extension"
}

// Digest identifies the extensions a run judged by, for the catalog
// digest: the user's checks' metadata, their requirements and the skips.
func (e Extensions) Digest() (string, error) {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, c := range e.Checks {
		if err := enc.Encode(c.Meta()); err != nil {
			return "", err
		}
	}
	for _, v := range []any{e.Requirements, e.Skips} {
		if err := enc.Encode(v); err != nil {
			return "", err
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// Without is the selection with what skips leave out taken from the
// checks that run: a skipped check, and the checks of skipped
// requirements that no other selected requirement lists. The skipped
// requirements stay selected, for their Skipped verdicts.
func (sel Selection) Without(skips []Exclusion) Selection {
	skipped := map[string]bool{}
	for _, s := range skips {
		skipped[s.ID] = true
	}
	keep := func(id string) bool {
		if skipped[id] {
			return false
		}
		listed, live := false, false
		for _, r := range sel.Requirements {
			if Contains(r.Checks, id) {
				listed = true
				live = live || !skipped[r.ID]
			}
		}
		return !listed || live
	}
	out := Selection{Requirements: sel.Requirements}
	for _, c := range sel.Checks {
		if keep(c.Meta().ID) {
			out.Checks = append(out.Checks, c)
		}
	}
	return out
}
