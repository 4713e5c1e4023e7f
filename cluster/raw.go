package cluster

import (
	"context"
	"fmt"
	"regexp"
	"time"
)

// GetRaw is one `kubectl get --raw PATH`: a GET of an API server path (a
// pod's port through the proxy subresource, say), its body printed as the
// server sent it, maybe piped through grep.
type GetRaw struct {
	Path string
	// Grep is an extended regular expression the body is piped through
	// (`| grep -E`): a few series of a long exposition.
	Grep string
}

// Command is the kubectl command line.
func (g GetRaw) Command() string {
	s := "kubectl get --raw " + shellQuote(g.Path)
	if g.Grep != "" {
		s += " | grep -E " + shellQuote(g.Grep)
	}
	return s
}

// PrintRaw renders what g's command prints on the cluster, from the run's
// one GET of the path: the body, or kubectl's line for the error.
func (c *Cache) PrintRaw(ctx context.Context, g GetRaw) (string, time.Time, error) {
	body, at, err := c.Raw(ctx, g.Path)
	if err != nil {
		return kubectlError(err), at, err
	}
	out := string(body)
	if g.Grep != "" {
		re, err := regexp.Compile(g.Grep)
		if err != nil {
			return "", at, fmt.Errorf("grep -E %q: %w", g.Grep, err)
		}
		out = grep(out, re)
	}
	return out, at, nil
}
