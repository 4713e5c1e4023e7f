package checks

// Registry returns the built-in checks in report order. It is an explicit
// list: adding a check is one line here, and nothing registers itself.
func Registry() []Check {
	return []Check{
		CRDsEstablished{},
		ControllerReady{},
		ControllerLease{},
		WebhooksServed{},
		CRsReconciled{},
		CRsEvents{},
		WebhooksAnswer{},
		CanaryReconciled{},
		GPUAllocatable{},
		GPUDevicePlugin{},
	}
}
