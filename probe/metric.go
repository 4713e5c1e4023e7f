package probe

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Metric is a metric as an HPA names it, external or custom: a name, and
// the labels that select its series.
type Metric struct {
	Name     string
	Selector map[string]string
}

// ParseMetric reads NAME or NAME{label=value,...}.
func ParseMetric(s string) (Metric, error) {
	name, rest, braced := strings.Cut(strings.TrimSpace(s), "{")
	m := Metric{Name: strings.TrimSpace(name)}
	if m.Name == "" {
		return m, fmt.Errorf("%q names no metric", s)
	}
	if braced {
		inner, ok := strings.CutSuffix(strings.TrimSpace(rest), "}")
		if !ok {
			return m, fmt.Errorf("%q: the labels end with }", s)
		}
		set, err := labels.ConvertSelectorToLabelsMap(inner)
		if err != nil {
			return m, fmt.Errorf("%q: %w", s, err)
		}
		m.Selector = set
	}
	return m, nil
}

// LabelSelector is the selector of an HPA's metric identifier, nil for
// none.
func (m Metric) LabelSelector() *metav1.LabelSelector {
	if len(m.Selector) == 0 {
		return nil
	}
	return &metav1.LabelSelector{MatchLabels: m.Selector}
}

// String is the NAME{label=value,...} form ParseMetric reads.
func (m Metric) String() string {
	if len(m.Selector) == 0 {
		return m.Name
	}
	return m.Name + "{" + labels.SelectorFromSet(m.Selector).String() + "}"
}
