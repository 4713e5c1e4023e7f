package checks

import (
	"fmt"
	"strings"
)

// RequirementStatus is the status vocabulary of the CNCF checklists.
type RequirementStatus string

// The four statuses a PRODUCT.yaml accepts.
const (
	Implemented          RequirementStatus = "Implemented"
	NotImplemented       RequirementStatus = "Not Implemented"
	PartiallyImplemented RequirementStatus = "Partially Implemented"
	NotApplicable        RequirementStatus = "N/A"
)

// Skipped is a requirement the user left out of the run, with a reason
// (skip: in aiconform.yaml). It is not a status a PRODUCT.yaml accepts:
// a submission states every requirement of its checklist.
const Skipped RequirementStatus = "Skipped"

// SkippedVerdict is the verdict of a requirement left out of the run.
func SkippedVerdict(req Requirement, s Exclusion) Verdict {
	return Verdict{Requirement: req, Status: Skipped, Result: Skip,
		Conclusion: fmt.Sprintf("skipped by %s: %s", s.Source, s.Reason)}
}

// OperatorVerdict is how one operator fared on a per-operator requirement.
type OperatorVerdict struct {
	Operator string
	Title    string
	Verdict  Status
	Reason   string
}

// Verdict is a requirement judged from its checks' results.
type Verdict struct {
	Requirement Requirement
	Status      RequirementStatus
	// Result is the verdict in check vocabulary, so that "could not be
	// evaluated" (error) stays apart from "not met" (fail).
	Result     Status
	Conclusion string
	// Operator carried a per-operator requirement.
	Operator  string
	Operators []OperatorVerdict
	Results   []Result
}

// Met is true when the requirement does not stop a passing run.
func (v Verdict) Met() bool { return v.Result == Pass || v.Result == Warn || v.Result == Skip }

// Evaluate judges each requirement from the outcome.
func Evaluate(reqs []Requirement, out Outcome) []Verdict {
	var vs []Verdict
	for _, req := range reqs {
		var rs []Result
		for _, r := range out.Results {
			// A check shared by requirements (a controller's health) counts
			// for an operator only where it may carry the requirement.
			if Contains(req.Checks, r.Check.ID) && (!req.PerOperator || candidate(out.Detections, r.Operator, req.ID)) {
				rs = append(rs, r)
			}
		}
		v := Verdict{Requirement: req, Results: rs}
		if req.PerOperator {
			judgeOperators(&v, out.Detections)
		} else {
			judgeAll(&v)
		}
		// A run of some of a requirement's checks says nothing of the
		// others: it can show progress, never that the requirement is met.
		if missing := notRun(req, rs); len(missing) > 0 && v.Status == Implemented {
			v.Status = PartiallyImplemented
			v.Conclusion = fmt.Sprintf("only some checks ran (not run: %s); of those: %s", strings.Join(missing, ", "), v.Conclusion)
		}
		if user := ranOf(req.UserChecks, rs); len(user) > 0 {
			v.Conclusion += fmt.Sprintf(" [judged with the user's checks %s besides aiconform's]", strings.Join(user, ", "))
		}
		vs = append(vs, v)
	}
	return vs
}

// ranOf are the ids among ids that have a result in rs.
func ranOf(ids []string, rs []Result) []string {
	var out []string
	for _, id := range ids {
		for _, r := range rs {
			if r.Check.ID == id {
				out = append(out, id)
				break
			}
		}
	}
	return out
}

// candidate is true when the profile called operator may carry the
// requirement id.
func candidate(dets []Detection, operator, id string) bool {
	for _, d := range dets {
		if d.Profile.Name == operator {
			return d.Profile.CandidateFor(id)
		}
	}
	return false
}

// judgeAll: every check must pass; all skipped means not applicable.
func judgeAll(v *Verdict) {
	agg, passed := Skip, 0
	var why []string
	for _, r := range v.Results {
		agg = Worst(agg, r.Status)
		switch r.Status {
		case Pass, Warn:
			passed++
		case Fail, Error:
			why = append(why, r.Check.ID+": "+r.Reason)
		}
	}
	v.Result = agg
	switch {
	case len(v.Results) == 0:
		v.Result, v.Status, v.Conclusion = Error, NotImplemented, "no check of this requirement was run"
	case agg == Skip:
		v.Status = NotApplicable
		v.Conclusion = "not applicable: " + v.Results[0].Reason
	case agg == Pass || agg == Warn:
		v.Status = Implemented
		v.Conclusion = joinReasons(v.Results)
	case passed > 0:
		v.Status = PartiallyImplemented
		v.Conclusion = strings.Join(why, "; ")
	default:
		v.Status = NotImplemented
		v.Conclusion = strings.Join(why, "; ")
	}
	switch {
	case v.Status != Implemented || len(v.Requirement.ShownBy) == 0:
	case !shown(v, ""):
		// Every check passed or had nothing to judge, yet none showed the
		// requirement at work.
		v.Result, v.Status = Fail, NotImplemented
		v.Conclusion = "not shown at work: " + strings.Join(shownByReasons(v, ""), "; ")
	default:
		// What showed it comes first: it is what the requirement rests on,
		// and what a shortened note keeps.
		by := shownBy(v, "")
		var shownWhy, rest []string
		for _, r := range v.Results {
			switch {
			case Contains(by, r.Check.ID):
				shownWhy = append(shownWhy, r.Reason)
			case r.Status != Skip:
				rest = append(rest, r.Check.ID+": "+r.Reason)
			}
		}
		v.Conclusion = fmt.Sprintf("shown at work by %s: %s", strings.Join(by, " and "), strings.Join(shownWhy, "; "))
		if len(rest) > 0 {
			v.Conclusion += " (" + strings.Join(rest, "; ") + ")"
		}
		v.Conclusion += unprobed(v.Results, "")
	}
	if agg == Error {
		v.Conclusion = "could not be fully evaluated: " + v.Conclusion
	}
}

// judgeOperators: met when one operator passes all its checks. An operator
// is judged by its results, not by its detection alone: when detection
// itself failed, its checks are Errors and the verdict says it could not be
// evaluated rather than that nothing is installed.
func judgeOperators(v *Verdict, dets []Detection) {
	anyPassed, anyFound := false, false
	var found, idle []string
	for _, d := range dets {
		if !d.Profile.CandidateFor(v.Requirement.ID) {
			continue
		}
		ov := OperatorVerdict{Operator: d.Profile.Name, Title: d.Profile.Title, Verdict: Skip}
		var why []string
		for _, r := range v.Results {
			if r.Operator != d.Profile.Name {
				continue
			}
			ov.Verdict = Worst(ov.Verdict, r.Status)
			switch r.Status {
			case Pass, Warn:
				anyPassed = true
			case Fail, Error:
				why = append(why, r.Check.ID+": "+r.Reason)
			}
		}
		switch {
		case (ov.Verdict == Pass || ov.Verdict == Warn) && !shown(v, d.Profile.Name):
			// Healthy, but nothing showed it at work: not carried, and the
			// verdict says what would show it.
			ov.Verdict = Fail
			ov.Reason = "installed and healthy, but not shown at work: " + strings.Join(shownByReasons(v, d.Profile.Name), "; ")
			idle = append(idle, d.Profile.Title)
		case ov.Verdict == Pass || ov.Verdict == Warn:
			ov.Reason = "every check passed"
			if by := shownBy(v, d.Profile.Name); len(by) > 0 {
				// Said, since it is what the requirement rests on.
				ov.Reason += ", shown at work by " + strings.Join(by, " and ")
			}
			ov.Reason += inapplicable(v.Results, d.Profile.Name) + unprobed(v.Results, d.Profile.Name)
		case ov.Verdict == Fail || ov.Verdict == Error:
			ov.Reason = strings.Join(why, "; ")
		case !d.Found:
			ov.Reason = "not installed"
		default:
			ov.Reason = "no check could judge it"
		}
		if d.Found {
			anyFound = true
			found = append(found, d.Profile.Title)
		}
		v.Operators = append(v.Operators, ov)
	}
	for _, ov := range v.Operators {
		if ov.Verdict == Pass || ov.Verdict == Warn {
			carry(v, ov)
			return
		}
	}
	var judged []string
	v.Result = Skip
	for _, ov := range v.Operators {
		if ov.Verdict == Fail || ov.Verdict == Error {
			judged = append(judged, fmt.Sprintf("%s: %s", ov.Title, ov.Reason))
			v.Result = Worst(v.Result, ov.Verdict)
		}
	}
	switch {
	case len(judged) == 0 && !anyFound:
		v.Result, v.Status = Fail, NotImplemented
		v.Conclusion = "no " + v.Requirement.Solution + " was found (looked for: " + titles(v.Operators) + ")"
	case len(judged) == 0:
		v.Result, v.Status = Fail, NotImplemented
		v.Conclusion = "found " + strings.Join(found, ", ") + ", but no check could judge it"
	case len(idle) == len(judged):
		// A solution at rest is not a solution partly at work.
		v.Status = NotImplemented
		v.Conclusion = "not shown: " + strings.Join(judged, "; ")
	case anyPassed:
		v.Status = PartiallyImplemented
		v.Conclusion = "no operator passed every check: " + strings.Join(judged, "; ")
	default:
		v.Status = NotImplemented
		v.Conclusion = "no operator passed every check: " + strings.Join(judged, "; ")
	}
	if v.Result == Error {
		v.Conclusion = "could not be fully evaluated: " + v.Conclusion
	}
}

// shown is true when the requirement asks for nothing beyond its checks
// passing, or when one of its shownBy checks passed for operator.
func shown(v *Verdict, operator string) bool {
	return len(v.Requirement.ShownBy) == 0 || len(shownBy(v, operator)) > 0
}

// shownBy are the shownBy checks that passed for operator.
func shownBy(v *Verdict, operator string) []string {
	var ids []string
	for _, r := range v.Results {
		if r.Operator == operator && Contains(v.Requirement.ShownBy, r.Check.ID) && (r.Status == Pass || r.Status == Warn) {
			ids = append(ids, r.Check.ID)
		}
	}
	return ids
}

// shownByReasons are why each shownBy check of operator did not show it.
func shownByReasons(v *Verdict, operator string) []string {
	var out []string
	for _, r := range v.Results {
		if r.Operator == operator && Contains(v.Requirement.ShownBy, r.Check.ID) {
			out = append(out, r.Check.ID+": "+r.Reason)
		}
	}
	return out
}

// carry records that ov met the requirement, and why the others did not.
func carry(v *Verdict, ov OperatorVerdict) {
	v.Operator, v.Result, v.Status = ov.Operator, ov.Verdict, Implemented
	var passed, others []string
	for _, r := range v.Results {
		if r.Operator == ov.Operator && (r.Status == Pass || r.Status == Warn) && r.Check.Title != "" {
			passed = append(passed, strings.ToLower(r.Check.Title[:1])+r.Check.Title[1:])
		}
	}
	for _, o := range v.Operators {
		if o.Operator != ov.Operator && o.Verdict != Skip {
			// Probes are on or off for the whole run: the conclusion says
			// so once, not once per operator.
			reason, _, _ := strings.Cut(o.Reason, notProbed)
			others = append(others, fmt.Sprintf("%s: %s", o.Title, reason))
		}
	}
	v.Conclusion = fmt.Sprintf("%s meets it: %s", ov.Title, strings.Join(passed, "; "))
	// Said in the conclusion, since it is what a reviewer asks next: a leg
	// that does not apply (no webhook to operate) and behaviour unprobed.
	v.Conclusion += inapplicable(v.Results, ov.Operator) + unprobed(v.Results, ov.Operator)
	if len(others) > 0 {
		v.Conclusion += " (others: " + strings.Join(others, "; ") + ")"
	}
}

// notProbed starts what a verdict adds when probe checks were skipped.
const notProbed = "; behaviour not probed"

// ProbesOff starts the reason of a probe check skipped because the run has
// no --probe, as against one skipped because it does not apply.
const ProbesOff = "probes are off"

// probesOff is true for a probe check skipped for want of --probe.
func probesOff(r Result) bool {
	return r.Check.Probe && r.Status == Skip && strings.HasPrefix(r.Reason, ProbesOff)
}

// inapplicable says which of an operator's checks did not apply, and why
// (an operator that registers no webhook has none to operate): "; not
// applicable: a: why; b: why", "" for none. A probe skipped for want of
// --probe is unprobed, not inapplicable.
func inapplicable(rs []Result, operator string) string {
	var parts []string
	for _, r := range rs {
		if r.Operator == operator && r.Status == Skip && !probesOff(r) {
			parts = append(parts, r.Check.ID+": "+r.Reason)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; not applicable: " + strings.Join(parts, "; ")
}

// unprobed says which of an operator's probe checks were skipped and what
// runs them, "" for none: "; behaviour not probed (a, b: run with --probe;
// c: run with --probe --probe-scale-up)".
func unprobed(rs []Result, operator string) string {
	var flags []string
	ids := map[string][]string{}
	for _, r := range rs {
		if r.Operator == operator && probesOff(r) {
			f := strings.TrimSpace("--probe " + r.Check.OptIn)
			if _, ok := ids[f]; !ok {
				flags = append(flags, f)
			}
			ids[f] = append(ids[f], r.Check.ID)
		}
	}
	if len(flags) == 0 {
		return ""
	}
	var parts []string
	for _, f := range flags {
		parts = append(parts, strings.Join(ids[f], ", ")+": run with "+f)
	}
	return notProbed + " (" + strings.Join(parts, "; ") + ")"
}

// notRun lists the requirement's checks that have no result.
func notRun(req Requirement, rs []Result) []string {
	var missing []string
	for _, id := range req.Checks {
		ran := false
		for _, r := range rs {
			ran = ran || r.Check.ID == id
		}
		if !ran {
			missing = append(missing, id)
		}
	}
	return missing
}

func titles(ovs []OperatorVerdict) string {
	var t []string
	for _, ov := range ovs {
		t = append(t, ov.Title)
	}
	return strings.Join(t, ", ")
}

func joinReasons(rs []Result) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.Reason)
	}
	return strings.Join(s, "; ")
}
