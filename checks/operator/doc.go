// Package operator holds the robust_controller checks (catalog category
// operator): an AI operator's CRDs, controller, webhooks and custom
// resources, and under --probe its webhooks' answers and a reconciled canary.
package operator
