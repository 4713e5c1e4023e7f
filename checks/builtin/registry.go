// Package builtin holds the list of aiconform's built-in checks, gathered
// from the packages of the checklist's categories.
package builtin

import (
	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/accelerators"
	"github.com/aiconform/aiconform/checks/networking"
	"github.com/aiconform/aiconform/checks/observability"
	"github.com/aiconform/aiconform/checks/operator"
	"github.com/aiconform/aiconform/checks/scheduling"
	"github.com/aiconform/aiconform/checks/security"
)

// Registry returns the built-in checks in report order. It is an explicit
// list: adding a check is one line here, and nothing registers itself.
func Registry() []checks.Check {
	return []checks.Check{
		operator.CRDsEstablished{},
		operator.ControllerReady{},
		operator.ControllerLease{},
		operator.WebhooksServed{},
		operator.CRsReconciled{},
		operator.CRsEvents{},
		operator.WebhooksAnswer{},
		operator.CanaryReconciled{},
		accelerators.GPUAllocatable{},
		accelerators.GPUDevicePlugin{},
		accelerators.DRAAPIs{},
		accelerators.DRADevices{},
		accelerators.DRAClaimsAllocated{},
		accelerators.DRAProbe{},
		accelerators.AcceleratorDrivers{},
		accelerators.DriverVersionProbe{},
		accelerators.GPUSharing{},
		accelerators.GPUSharingProbe{},
		accelerators.VirtualizedAccelerators{},
		networking.GatewayAPICRDs{},
		networking.GatewaysProgrammed{},
		networking.HTTPRoutesAccepted{},
		networking.RouteProbe{},
		networking.InferenceExtensionCRDs{},
		networking.InferencePoolsReady{},
		networking.InferenceRoutesAccepted{},
		networking.NetworkDevices{},
		networking.MultiNetwork{},
		networking.DisaggregatedServing{},
		scheduling.GangQueues{},
		scheduling.GangsAdmitted{},
		scheduling.GangProbe{},
		scheduling.MetricsAPIs{},
		scheduling.HPAsActive{},
		scheduling.HPAProbe{},
		scheduling.AutoscalerFound{},
		scheduling.AcceleratorNodeGroups{},
		scheduling.AcceleratorScaleUps{},
		scheduling.ScaleUpProbe{},
		observability.AcceleratorMetrics{},
		observability.MonitoringSystem{},
		observability.MonitoringTargets{},
		observability.MonitoringProbe{},
		observability.AcceleratorLoadProbe{},
		security.DeviceAccessMediated{},
		security.DeviceIsolationProbe{},
		security.SandboxRuntimes{},
		security.SandboxProbe{},
	}
}
