package security

import (
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
)

// The solutions of the security checks, each derived from the data file
// the check reads (docs/solutions.md).

// Solutions are the sandboxes of sandboxes.yaml.
func (c SandboxRuntimes) Solutions() ([]checks.Solution, error) { return sandboxRows(c) }

// Solutions are the sandboxes of sandboxes.yaml, whose RuntimeClasses the
// probe runs its pod in.
func (c SandboxProbe) Solutions() ([]checks.Solution, error) { return sandboxRows(c) }

// Solutions are the vendors of accelerators.yaml, whose device files a pod
// must reach only through a resource request.
func (c DeviceAccessMediated) Solutions() ([]checks.Solution, error) { return vendorRows(c) }

// Solutions are the vendors of accelerators.yaml, whose device files and
// visible-devices variables the probe reads in its container.
func (c DeviceIsolationProbe) Solutions() ([]checks.Solution, error) { return vendorRows(c) }

func sandboxRows(c checks.Check) ([]checks.Solution, error) {
	known, err := sandboxes()
	if err != nil {
		return nil, err
	}
	m := c.Meta()
	var out []checks.Solution
	for _, s := range known {
		how := "RuntimeClass handler " + strings.Join(s.Handlers, " or ")
		if len(s.Prefixes) > 0 {
			how += ", or one starting " + strings.Join(s.Prefixes, " or ")
		}
		out = append(out, checks.Solution{Requirement: m.Requirement, Name: s.Name, Detected: how, Checks: []string{m.ID}})
	}
	return out, nil
}

func vendorRows(c checks.Check) ([]checks.Solution, error) {
	t, err := hardware.AcceleratorTable()
	if err != nil {
		return nil, err
	}
	m := c.Meta()
	var out []checks.Solution
	for _, v := range t.Vendors {
		files := append(append([]string{}, v.Devices.PerDevice...), v.Devices.Control...)
		how := "device files " + strings.Join(files, ", ") + " of nodes with " + strings.Join(v.Resources, ", ")
		out = append(out, checks.Solution{Requirement: m.Requirement, Name: v.Name, Detected: how, Checks: []string{m.ID}})
	}
	return out, nil
}
