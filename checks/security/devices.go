package security

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
)

// The device isolation probe's containers run devicesScript and print two
// sections, each headed by the command as a shell prompt shows it: what
// `ls -l` lists of /dev and of the folders under it that hold a vendor's
// device nodes (accelerators.yaml), and what `nvidia-smi -L` lists of the
// GPUs (where NVIDIA's runtime put it in the container).
const smiCommand = "nvidia-smi -L"

// lsCommand lists /dev and the folders of a's device nodes.
func lsCommand(a *hardware.Accelerators) string {
	return strings.Join(append([]string{"ls -l /dev"}, a.DeviceFolders()...), " ")
}

// devicesScript prints both sections (checks.CommandsScript).
func devicesScript(a *hardware.Accelerators) string {
	return checks.CommandsScript(lsCommand(a), smiCommand)
}

// charDevice is a character device of `ls -l` (GNU or BusyBox): its
// major and minor numbers, then its name last.
var charDevice = regexp.MustCompile(`^c\S*\s+\d+\s+\S+\s+\S+\s+(\d+),\s*(\d+)\s+.*\s(\S+)$`)

// smiGPU is a GPU line of `nvidia-smi -L`.
var smiGPU = regexp.MustCompile(`^GPU \d+: .*\(UUID: (GPU-[0-9a-fA-F-]+)\)`)

// device is one accelerator device node a container sees.
type device struct {
	path  string
	major string
	minor string
}

func (d device) String() string { return fmt.Sprintf("%s (%s:%s)", d.path, d.major, d.minor) }

// deviceView is what one container printed: the accelerator device nodes
// it has, the vendor's control nodes, and the GPUs nvidia-smi lists.
type deviceView struct {
	devices []device
	control []string
	gpus    []string
	// listed is false when the output has no `ls` section: the container
	// did not run the script, and nothing can be concluded from it.
	listed bool
}

// parseDevices reads a container's output, the device nodes known by a:
// those of one accelerator each, and the vendors' control nodes.
func parseDevices(a *hardware.Accelerators, out string) deviceView {
	var v deviceView
	sections := checks.CommandOutputs(out)
	ls, listed := sections[lsCommand(a)]
	v.listed = listed
	dir := "/dev"
	for _, line := range strings.Split(ls, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.HasPrefix(line, "/") && strings.HasSuffix(line, ":") {
			dir = strings.TrimSuffix(line, ":")
			continue
		}
		m := charDevice.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		path := dir + "/" + m[3]
		switch {
		case a.IsPerDevice(path):
			v.devices = append(v.devices, device{path: path, major: m[1], minor: m[2]})
		case a.IsControl(path):
			v.control = append(v.control, path)
		}
	}
	for _, line := range strings.Split(sections[smiCommand], "\n") {
		if m := smiGPU.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			v.gpus = append(v.gpus, m[1])
		}
	}
	return v
}

// count is how many accelerators the view shows: by device node, or by
// nvidia-smi where it lists more (a runtime that hides the nodes' names).
func (v deviceView) count() int { return max(len(v.devices), len(v.gpus)) }

// seen says what the view shows, for a verdict.
func (v deviceView) seen() string {
	var parts []string
	for _, d := range v.devices {
		parts = append(parts, d.String())
	}
	parts = append(parts, v.gpus...)
	if len(parts) == 0 {
		return "no accelerator"
	}
	return strings.Join(parts, ", ")
}

// shares names what two views have in common: a device node of the same
// numbers, or a GPU of the same UUID.
func shares(a, b deviceView) []string {
	var out []string
	for _, d := range a.devices {
		if slices.ContainsFunc(b.devices, func(e device) bool { return e.major == d.major && e.minor == d.minor }) {
			out = append(out, d.String())
		}
	}
	for _, g := range a.gpus {
		if slices.Contains(b.gpus, g) {
			out = append(out, g)
		}
	}
	return out
}
