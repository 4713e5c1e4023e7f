package accelerators

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
)

// The solutions of the accelerator checks, each derived from the data file
// the check reads (docs/solutions.md).

// Solutions are the accelerator vendors of accelerators.yaml.
func (c GPUAllocatable) Solutions() ([]checks.Solution, error) {
	t, err := hardware.AcceleratorTable()
	if err != nil {
		return nil, err
	}
	var out []checks.Solution
	for _, v := range t.Vendors {
		out = append(out, row(c, v.Name, "node resources "+strings.Join(v.Resources, ", ")))
	}
	return out, nil
}

// Solutions are the device plugins of device_plugins.yaml.
func (c GPUDevicePlugin) Solutions() ([]checks.Solution, error) {
	ds, err := devicePlugins()
	if err != nil {
		return nil, err
	}
	var out []checks.Solution
	for _, d := range ds {
		detected := fmt.Sprintf("DaemonSet pods labelled %s, any namespace, on nodes with %s", labelList(d.PodLabels), strings.Join(d.Resources, ", "))
		if len(d.PodLabels) == 0 {
			detected = fmt.Sprintf("no pod: nodes labelled %s with %s allocatable", labelList(d.NodeLabels), strings.Join(d.Resources, ", "))
		}
		out = append(out, row(c, d.Name, detected))
	}
	return out, nil
}

// Solutions are the accelerator DRA drivers of dra_drivers.yaml.
func (c DRADevices) Solutions() ([]checks.Solution, error) {
	ds, err := hardware.DRADrivers()
	if err != nil {
		return nil, err
	}
	var out []checks.Solution
	for _, d := range ds {
		if d.Accelerator {
			out = append(out, row(c, d.Name, "ResourceSlices of driver "+d.Driver))
		}
	}
	return out, nil
}

// Solutions are the labellers of node_labels.yaml, and the DRA drivers
// whose devices' driverVersion attribute stands in for them.
func (c AcceleratorDrivers) Solutions() ([]checks.Solution, error) {
	vs, err := nodeLabels()
	if err != nil {
		return nil, err
	}
	var out []checks.Solution
	for _, v := range vs {
		var how []string
		if keys := v.labelKeys(append([]string{v.DriverVersion}, v.DriverVersionParts...)...); len(keys) > 0 {
			how = append(how, "node labels "+strings.Join(keys, ", "))
		}
		if len(v.DRADrivers) > 0 {
			how = append(how, "attribute driverVersion of the ResourceSlices of driver "+strings.Join(v.DRADrivers, ", "))
		}
		out = append(out, row(c, v.Vendor+": "+v.Labeller, strings.Join(how, "; or ")))
	}
	return out, nil
}

// Solutions are the platforms of sharing_labels.yaml and the vendors of
// node_labels.yaml that label their nodes' sharing.
func (c GPUSharing) Solutions() ([]checks.Solution, error) {
	ps, err := sharingLabels()
	if err != nil {
		return nil, err
	}
	var out []checks.Solution
	for _, p := range ps {
		out = append(out, row(c, p.Platform+" GPU sharing", "node labels "+strings.Join(p.keys(), ", ")))
	}
	vs, err := nodeLabels()
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		if keys := v.labelKeys(v.SharingStrategy, v.Replicas, v.MIGStrategy); len(keys) > 0 {
			out = append(out, row(c, v.Vendor+" time-slicing and MIG ("+v.Labeller+")",
				"node labels "+strings.Join(keys, ", ")+"; MIG resources "+strings.Join(migResources(v), ", ")))
		}
	}
	return out, nil
}

// Solutions are the vendors of node_labels.yaml that label virtualized
// accelerators.
func (c VirtualizedAccelerators) Solutions() ([]checks.Solution, error) {
	vs, err := nodeLabels()
	if err != nil {
		return nil, err
	}
	var out []checks.Solution
	for _, v := range vs {
		var how []string
		if v.VGPUPresent != "" {
			how = append(how, "node label "+v.VGPUPresent+"=true")
		}
		if v.Workload != "" {
			how = append(how, "node label "+v.Workload+"=vm-vgpu or vf-passthrough")
		}
		if len(how) > 0 {
			out = append(out, row(c, v.Vendor+" virtualized accelerators", strings.Join(how, "; ")))
		}
	}
	return out, nil
}

func migResources(v vendorLabels) []string {
	var out []string
	for _, r := range v.Resources {
		if strings.Contains(r, "mig-") {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

func row(c checks.Check, name, detected string) checks.Solution {
	m := c.Meta()
	return checks.Solution{Requirement: m.Requirement, Name: name, Detected: detected, Checks: []string{m.ID}}
}

// labelList prints labels as k=v, sorted by key.
func labelList(ls map[string]string) string {
	var out []string
	for k, v := range ls {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
