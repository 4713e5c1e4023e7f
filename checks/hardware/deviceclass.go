package hardware

import (
	"regexp"

	resourcev1 "k8s.io/api/resource/v1"
)

// classDriver reads the driver a DeviceClass's CEL selectors compare
// device.driver with, in either quoting.
var classDriver = regexp.MustCompile(`device\.driver\s*==\s*["']([^"']+)["']`)

// ClassDrivers are the drivers a DeviceClass's CEL selectors compare
// device.driver with; none may mean any driver. Accelerator and network
// checks alike ask which class a driver's devices are requested through.
func ClassDrivers(c *resourcev1.DeviceClass) []string {
	var out []string
	for _, s := range c.Spec.Selectors {
		if s.CEL == nil {
			continue
		}
		for _, m := range classDriver.FindAllStringSubmatch(s.CEL.Expression, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// ClassesByDriver names the DeviceClasses whose selectors name each driver;
// "" holds those that name none, which may select any device.
func ClassesByDriver(classes []*resourcev1.DeviceClass) map[string][]string {
	out := map[string][]string{}
	for _, c := range classes {
		drivers := ClassDrivers(c)
		if len(drivers) == 0 {
			drivers = []string{""}
		}
		for _, d := range drivers {
			out[d] = append(out[d], c.Name)
		}
	}
	return out
}
