package hardware

import (
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
)

//go:embed accelerators.yaml
var acceleratorsYAML []byte

var _ = checks.RegisterData[[]AcceleratorVendor]("accelerators.yaml", acceleratorsYAML)

// AcceleratorVendor is one entry of accelerators.yaml: a vendor's
// accelerator resources, device nodes and device variables.
type AcceleratorVendor struct {
	Name      string   `yaml:"name"`
	Resources []string `yaml:"resources"`
	Devices   struct {
		PerDevice []string `yaml:"perDevice"`
		Control   []string `yaml:"control"`
	} `yaml:"devices"`
	VisibleDevices []string `yaml:"visibleDevices"`
	// Sharing and Virtualization are "unsupported" for a vendor whose
	// accelerators have no static sharing (no partitions, no time-slicing)
	// or no virtualized form: the requirements that ask for them only of
	// accelerators that support them do not apply to its nodes.
	Sharing        string `yaml:"sharing"`
	Virtualization string `yaml:"virtualization"`
}

// Unsupported is the value of Sharing or Virtualization for a vendor
// whose accelerators have no such form.
const Unsupported = "unsupported"

// serves says whether res is one of the vendor's resources: a name in
// Resources, or a prefix ending in "*".
func (v *AcceleratorVendor) serves(res string) bool {
	for _, r := range v.Resources {
		if prefix, ok := strings.CutSuffix(r, "*"); (ok && strings.HasPrefix(res, prefix)) || r == res {
			return true
		}
	}
	return false
}

// Accelerators is accelerators.yaml, checked and compiled.
type Accelerators struct {
	Vendors []AcceleratorVendor
	// perDevice and control match the device nodes of every vendor.
	perDevice, control *regexp.Regexp
	// hostPaths start the paths of a host that hold device nodes: a
	// vendor's node by its stem (/dev/nvidia), or the folder under /dev
	// that holds one (/dev/dri).
	hostPaths []string
	// shown is hostPaths as a description names them: /dev/nvidia*,
	// /dev/dri.
	shown []string
}

// loadAccelerators reads and checks a vendor file: a bad entry is an
// error naming it.
func loadAccelerators(name string, data []byte) (*Accelerators, error) {
	vendors, err := checks.Data[[]AcceleratorVendor](name, data)
	if err != nil {
		return nil, err
	}
	if len(vendors) == 0 {
		return nil, fmt.Errorf("%s: no vendor", name)
	}
	a := &Accelerators{Vendors: vendors}
	var perDevice, control []string
	seen := map[string]bool{}
	for i := range vendors {
		v := &vendors[i]
		entry := fmt.Sprintf("%s: entry %d (%s)", name, i+1, v.Name)
		if err := checkVendor(v, seen); err != nil {
			return nil, fmt.Errorf("%s: %w", entry, err)
		}
		for _, group := range []struct {
			paths []string
			into  *[]string
		}{{v.Devices.PerDevice, &perDevice}, {v.Devices.Control, &control}} {
			for _, p := range group.paths {
				re, err := devicePattern(p)
				if err != nil {
					return nil, fmt.Errorf("%s: device %q: %w", entry, p, err)
				}
				*group.into = append(*group.into, re)
				a.addHostPath(p)
			}
		}
	}
	a.perDevice = regexp.MustCompile("^(" + strings.Join(perDevice, "|") + ")$")
	a.control = regexp.MustCompile("^(" + strings.Join(control, "|") + ")$")
	return a, nil
}

// checkVendor checks one entry; seen are the names before it.
func checkVendor(v *AcceleratorVendor, seen map[string]bool) error {
	switch {
	case v.Name == "":
		return fmt.Errorf("needs a name")
	case seen[v.Name]:
		return fmt.Errorf("a second vendor of that name")
	case len(v.Resources) == 0:
		return fmt.Errorf("needs resources")
	case len(v.Devices.PerDevice) == 0:
		return fmt.Errorf("needs devices.perDevice, the device nodes of one accelerator each")
	}
	seen[v.Name] = true
	for _, f := range []struct{ name, value string }{{"sharing", v.Sharing}, {"virtualization", v.Virtualization}} {
		if f.value != "" && f.value != Unsupported {
			return fmt.Errorf("%s %q: only %q, or nothing when the vendor's accelerators may have it", f.name, f.value, Unsupported)
		}
	}
	for _, r := range v.Resources {
		domain, rest, ok := strings.Cut(strings.TrimSuffix(r, "*"), "/")
		if !ok || domain == "" || (rest == "" && !strings.HasSuffix(r, "*")) || strings.Contains(strings.TrimSuffix(r, "*"), "*") {
			return fmt.Errorf("resource %q: not an extended resource name (domain/name, or a prefix ending in *)", r)
		}
	}
	for _, e := range v.VisibleDevices {
		if !strings.HasSuffix(e, cluster.VisibleDevicesSuffix) || e == cluster.VisibleDevicesSuffix {
			return fmt.Errorf("visibleDevices %q: must end in %s, or the cluster's reads drop it from pods", e, cluster.VisibleDevicesSuffix)
		}
	}
	return nil
}

// devicePathChars are those a device path may hold besides <N> and a
// trailing *.
var devicePathChars = regexp.MustCompile(`^[A-Za-z0-9_./-]*$`)

// devicePattern is the regular expression of a device path: <N> a number,
// a trailing * any rest.
func devicePattern(p string) (string, error) {
	if !strings.HasPrefix(p, "/dev/") || len(p) == len("/dev/") {
		return "", fmt.Errorf("not a path under /dev/")
	}
	body, star := strings.CutSuffix(p, "*")
	parts := strings.Split(body, "<N>")
	var re strings.Builder
	for i, part := range parts {
		if !devicePathChars.MatchString(part) || strings.Contains(part, "..") || strings.Contains(part, "//") {
			return "", fmt.Errorf("only letters, digits, _ . / -, <N> and a trailing * are allowed")
		}
		re.WriteString(regexp.QuoteMeta(part))
		if i < len(parts)-1 {
			re.WriteString(`\d+`)
		}
	}
	if star {
		re.WriteString(".*")
	}
	return re.String(), nil
}

// addHostPath adds the host path that holds a device node: the folder
// under /dev it is in, or its stem before the first <N> or *.
func (a *Accelerators) addHostPath(p string) {
	stem, shown := p, p
	if i := strings.IndexAny(p, "<*"); i >= 0 {
		stem, shown = p[:i], p[:i]+"*"
	}
	if dir, _, ok := strings.Cut(strings.TrimPrefix(stem, "/dev/"), "/"); ok {
		stem, shown = "/dev/"+dir, "/dev/"+dir
	}
	if slices.ContainsFunc(a.hostPaths, func(h string) bool { return strings.HasPrefix(stem, h) }) {
		return
	}
	a.hostPaths = append(a.hostPaths, stem)
	a.shown = append(a.shown, shown)
}

// loadedAccelerators is accelerators.yaml, read once per overlay: which
// resource is an accelerator is asked of every resource of every node and
// pod container.
var loadedAccelerators struct {
	sync.Mutex
	generation int
	table      *Accelerators
	err        error
}

// AcceleratorTable is the embedded accelerators.yaml, with a user's
// overlay of it. Its error is that of a bad entry, which the checks that
// read accelerators return (the package's tests load the file, so a
// release never has one).
func AcceleratorTable() (*Accelerators, error) {
	l := &loadedAccelerators
	l.Lock()
	defer l.Unlock()
	if g := checks.DataGeneration(); l.table == nil && l.err == nil || l.generation != g {
		l.table, l.err = loadAccelerators("accelerators.yaml", acceleratorsYAML)
		l.generation = g
	}
	return l.table, l.err
}

// Vendor is the vendor whose resource res is, nil for none.
func (a *Accelerators) Vendor(res corev1.ResourceName) *AcceleratorVendor {
	for i := range a.Vendors {
		if a.Vendors[i].serves(string(res)) {
			return &a.Vendors[i]
		}
	}
	return nil
}

// DriverVendor is the vendor of a DRA driver, by the domain of the
// vendor's resources the driver's name is in (gpu.nvidia.com is NVIDIA's,
// tpu.google.com Google's), nil for none.
func (a *Accelerators) DriverVendor(driver string) *AcceleratorVendor {
	for i := range a.Vendors {
		for _, r := range a.Vendors[i].Resources {
			domain, _, _ := strings.Cut(r, "/")
			if driver == domain || strings.HasSuffix(driver, "."+domain) {
				return &a.Vendors[i]
			}
		}
	}
	return nil
}

// IsPerDevice is true for a device node that stands for one accelerator.
func (a *Accelerators) IsPerDevice(path string) bool { return a.perDevice.MatchString(path) }

// IsControl is true for a device node a vendor adds beside its
// accelerators', which alone gives none.
func (a *Accelerators) IsControl(path string) bool { return a.control.MatchString(path) }

// IsDevicePath is true for a host path whose hostPath volume puts device
// nodes in a container: the host's root or /dev, a vendor's device node,
// or the folder under /dev that holds one.
func (a *Accelerators) IsDevicePath(path string) bool {
	path = strings.TrimSuffix(path, "/")
	if path == "" || path == "/dev" {
		// "" is the host's root, which holds /dev.
		return true
	}
	return slices.ContainsFunc(a.hostPaths, func(h string) bool { return strings.HasPrefix(path, h) })
}

// DeviceFolders are the folders under /dev that hold the device nodes of
// one accelerator each, in the file's order: what a listing of /dev alone
// does not show.
func (a *Accelerators) DeviceFolders() []string {
	var out []string
	for _, v := range a.Vendors {
		for _, p := range v.Devices.PerDevice {
			if dir, _, ok := strings.Cut(strings.TrimPrefix(p, "/dev/"), "/"); ok && !slices.Contains(out, "/dev/"+dir) {
				out = append(out, "/dev/"+dir)
			}
		}
	}
	return out
}

// VisibleDevices are every vendor's device variables, in the file's order.
func (a *Accelerators) VisibleDevices() []string {
	var out []string
	for _, v := range a.Vendors {
		out = append(out, v.VisibleDevices...)
	}
	return out
}

// HostPaths names the host paths IsDevicePath knows, as a description
// says them: "/dev/nvidia*, /dev/dri, /dev/kfd".
func (a *Accelerators) HostPaths() string { return strings.Join(a.shown, ", ") }

// ResourceNames names every vendor's resources, as a description says
// them: "nvidia.com/gpu, nvidia.com/mig-*, amd.com/gpu".
func (a *Accelerators) ResourceNames() string {
	var out []string
	for _, v := range a.Vendors {
		out = append(out, v.Resources...)
	}
	return strings.Join(out, ", ")
}

// VendorNames names the vendors: "NVIDIA, AMD, Intel GPU".
func (a *Accelerators) VendorNames() string {
	var out []string
	for _, v := range a.Vendors {
		out = append(out, v.Name)
	}
	return strings.Join(out, ", ")
}

// DescribeAccelerators is the table as a check's description names it:
// describe's answer, or, were the file bad, where the table lives. Meta
// has no error to return; the check's Run returns the file's.
func DescribeAccelerators(describe func(a *Accelerators) string) string {
	a, err := AcceleratorTable()
	if err != nil {
		return "those of checks/hardware/accelerators.yaml"
	}
	return describe(a)
}
