// Package dns stands in for lego's providers/dns in the rig's Traefik
// build (tools/build copies lego and puts this file in place of the
// package's own): the factory that names its ~190 DNS providers imports
// each one's SDK, 846 of Traefik's 2,512 packages, and the rig asks ACME
// for no certificate. It refuses every provider name.
package dns

import (
	"fmt"

	"github.com/go-acme/lego/v4/challenge"
)

// NewDNSChallengeProviderByName has the signature of lego's factory, which
// Traefik's ACME provider calls when a resolver names a DNS challenge.
func NewDNSChallengeProviderByName(name string) (challenge.Provider, error) {
	return nil, fmt.Errorf("DNS challenge provider %q: the rig's Traefik is built without lego's DNS providers", name)
}
