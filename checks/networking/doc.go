// Package networking holds the checks of the catalog category networking:
// ai_inference (a Gateway API implementation accepts gateways and routes
// that split traffic by weight and match headers), advanced_inference_ingress
// (the Inference Extension's pools, their endpoint pickers and the routes to
// them), disaggregated_inference (serving stacks that run prefill and decode
// apart) and high_performance_networking (network devices as schedulable,
// described resources, and secondary networks for pods). The stacks and
// devices they know are data: disaggregated.yaml, network_devices.yaml.
package networking
