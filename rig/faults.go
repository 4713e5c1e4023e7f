package rig

// StopServer stops the operator's process but leaves its webhook
// configurations registered: a webhook server that is down while the API
// server still calls it, which fails closed (failurePolicy Fail). Start
// brings it back and registers the webhooks at their new address.
func (o *Operator) StopServer() error {
	return o.stopProcess()
}
