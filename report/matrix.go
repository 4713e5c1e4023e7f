package report

import (
	"fmt"
	"io"
	"strings"

	"k8s.io/cli-runtime/pkg/printers"
)

// Cluster is one column of a Matrix: a cluster's report, or why its run
// made none.
type Cluster struct {
	Name   string
	Report *Report
	Err    error
}

// Matrix writes one row per requirement and one column per cluster, each
// cell the requirement's status there (a dash where the cluster's run made
// no report), and a last row with each cluster's verdict, or why its run
// failed: what `check --all-contexts` prints.
func Matrix(w io.Writer, clusters []Cluster) error {
	// kubectl's own tab writer, as the contexts' names are columns.
	tw := printers.GetNewTabWriter(w)
	header := []string{"REQUIREMENT", "LEVEL"}
	for _, c := range clusters {
		header = append(header, strings.ToUpper(c.Name))
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	// Rows in the order of the first report that has them.
	var ids []string
	level := map[string]string{}
	status := map[string]map[string]string{}
	for _, c := range clusters {
		if c.Report == nil {
			continue
		}
		for _, req := range c.Report.Requirements {
			if _, ok := status[req.ID]; !ok {
				ids = append(ids, req.ID)
				level[req.ID] = req.Level
				status[req.ID] = map[string]string{}
			}
			status[req.ID][c.Name] = req.Status
		}
	}
	for _, id := range ids {
		row := []string{id, level[id]}
		for _, c := range clusters {
			s, ok := status[id][c.Name]
			if !ok {
				s = "-"
			}
			row = append(row, s)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	verdict := []string{"(verdict)", ""}
	for _, c := range clusters {
		switch {
		case c.Err != nil:
			line, _, _ := strings.Cut(c.Err.Error(), "\n")
			verdict = append(verdict, "error: "+line)
		case c.Report.Summary.Passed:
			verdict = append(verdict, "PASSED")
		default:
			verdict = append(verdict, "FAILED")
		}
	}
	fmt.Fprintln(tw, strings.Join(verdict, "\t"))
	return tw.Flush()
}
