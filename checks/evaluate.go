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
			if contains(req.Checks, r.Check.ID) {
				rs = append(rs, r)
			}
		}
		v := Verdict{Requirement: req, Results: rs}
		if req.PerOperator {
			judgeOperators(&v, out.Detections)
		} else {
			judgeAll(&v)
		}
		vs = append(vs, v)
	}
	return vs
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
	if agg == Error {
		v.Conclusion = "could not be fully evaluated: " + v.Conclusion
	}
}

// judgeOperators: met when one detected operator passes all its checks.
func judgeOperators(v *Verdict, dets []Detection) {
	anyPassed := false
	worstFound := Skip
	for _, d := range dets {
		ov := OperatorVerdict{Operator: d.Profile.Name, Title: d.Profile.Title, Verdict: Skip}
		var why []string
		for _, r := range v.Results {
			if r.Operator != d.Profile.Name {
				continue
			}
			ov.Verdict = Worst(ov.Verdict, r.Status)
			if r.Status == Pass || r.Status == Warn {
				anyPassed = true
			}
			if r.Status == Fail || r.Status == Error {
				why = append(why, r.Check.ID+": "+r.Reason)
			}
		}
		switch {
		case !d.Found:
			ov.Verdict = Skip
			ov.Reason = "not installed"
		case ov.Verdict == Pass || ov.Verdict == Warn:
			ov.Reason = "every check passed"
		case ov.Verdict == Skip:
			ov.Reason = "no check ran"
		default:
			ov.Reason = strings.Join(why, "; ")
		}
		if d.Found {
			worstFound = Worst(worstFound, ov.Verdict)
		}
		v.Operators = append(v.Operators, ov)
	}
	for _, ov := range v.Operators {
		if (ov.Verdict == Pass || ov.Verdict == Warn) && v.Operator == "" {
			v.Operator = ov.Operator
			v.Result = ov.Verdict
		}
	}
	if v.Operator != "" {
		var others []string
		for _, ov := range v.Operators {
			if ov.Operator != v.Operator && ov.Verdict != Skip {
				others = append(others, fmt.Sprintf("%s: %s", ov.Title, ov.Reason))
			}
		}
		v.Status = Implemented
		v.Conclusion = fmt.Sprintf("%s meets it: CRDs established, controller Ready, webhooks served, custom resources reconciled", titleOf(v.Operators, v.Operator))
		if len(others) > 0 {
			v.Conclusion += " (others: " + strings.Join(others, "; ") + ")"
		}
		return
	}
	var tried []string
	for _, ov := range v.Operators {
		if ov.Verdict != Skip {
			tried = append(tried, fmt.Sprintf("%s: %s", ov.Title, ov.Reason))
		}
	}
	switch {
	case len(tried) == 0 && worstFound == Skip:
		v.Result, v.Status = Fail, NotImplemented
		v.Conclusion = "no AI operator with CRDs was found (looked for: " + titles(v.Operators) + ")"
	case anyPassed:
		v.Result, v.Status = worstFound, PartiallyImplemented
		v.Conclusion = "no operator passed every check: " + strings.Join(tried, "; ")
	default:
		v.Result, v.Status = worstFound, NotImplemented
		v.Conclusion = "no operator passed every check: " + strings.Join(tried, "; ")
	}
}

func titleOf(ovs []OperatorVerdict, name string) string {
	for _, ov := range ovs {
		if ov.Operator == name {
			return ov.Title
		}
	}
	return name
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
