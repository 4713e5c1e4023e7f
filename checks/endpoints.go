package checks

import discoveryv1 "k8s.io/api/discovery/v1"

// ReadyEndpoints counts the endpoints of slices ready to serve: what a
// Service behind a webhook or an endpoint picker can answer with. The API
// defines a missing ready condition as ready.
func ReadyEndpoints(slices []*discoveryv1.EndpointSlice) int {
	n := 0
	for _, s := range slices {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				n++
			}
		}
	}
	return n
}
