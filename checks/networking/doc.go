// Package networking holds the checks of the catalog category networking:
// ai_inference (a Gateway API implementation accepts gateways and routes
// that split traffic by weight and match headers).
package networking
