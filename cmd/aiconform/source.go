package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/fixtures"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// openSource returns the recording named by fixture (a file path or a
// built-in name), or the live cluster of the kubeconfig flags.
func openSource(flags *cluster.Flags, fixture string, now func() time.Time) (cluster.Source, error) {
	if fixture != "" {
		return loadFixture(fixture)
	}
	live, err := cluster.NewLive(flags, now)
	if err != nil {
		// Nothing was sent yet: the kubeconfig or its flags are wrong.
		return nil, &usageError{fmt.Errorf("kubeconfig: %w", err)}
	}
	return live, nil
}

func loadFixture(fixture string) (cluster.Source, error) {
	data, err := os.ReadFile(fixture)
	if errors.Is(err, os.ErrNotExist) && !looksLikePath(fixture) {
		if data, err = fixtures.Read(fixture); err != nil {
			msg := fmt.Sprintf("fixture: no built-in recording named %q", fixture)
			if n := checks.Nearest(fixture, fixtures.Names()); n != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", n)
			}
			return nil, usageErrorf("%s; built in: %s; or the path of a file `aiconform snapshot` wrote", msg, strings.Join(fixtures.Names(), ", "))
		}
	}
	if err != nil {
		// A path, as the user meant it: say what is wrong with the file.
		return nil, &usageError{fmt.Errorf("fixture: %w", err)}
	}
	rec, err := cluster.LoadRecording(fixture, data)
	if err != nil {
		return nil, &usageError{err}
	}
	return rec, nil
}

// looksLikePath tells a file the user named from a built-in recording's
// name, which has neither a folder nor an extension.
func looksLikePath(s string) bool {
	return strings.ContainsRune(s, os.PathSeparator) || filepath.Ext(s) != ""
}

// clusterInfo reads the header facts, which is also the first contact with
// the cluster: failing here means unreachable or unauthorized.
func clusterInfo(ctx context.Context, c *cluster.Cache) (cluster.Info, error) {
	info, err := c.Info(ctx)
	return info, infoError(info, err)
}

// infoError says why a cluster's identity could not be read, in the words
// of what to do about it; nil for nil.
func infoError(info cluster.Info, err error) error {
	if err == nil {
		return nil
	}
	var netErr net.Error
	switch {
	case apierrors.IsUnauthorized(err), apierrors.IsForbidden(err):
		return &clusterError{fmt.Errorf("the cluster refused us: %w", err)}
	case errors.As(err, &netErr), errors.Is(err, context.DeadlineExceeded):
		if info.Server == "http://localhost:8080" {
			// client-go's fallback when no kubeconfig was found at all.
			return &clusterError{errors.New("no kubeconfig found (use --kubeconfig or KUBECONFIG), and nothing answers " +
				"on localhost:8080; to try aiconform without a cluster: aiconform check all --fixture demo")}
		}
		return &clusterError{fmt.Errorf("cannot reach the cluster: %w", err)}
	default:
		return &clusterError{err}
	}
}

// loadProfiles returns the built-in profiles plus those of files, limited
// to names when given.
func loadProfiles(files, names []string) ([]*checks.Profile, error) {
	ps, err := checks.BuiltinProfiles()
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, &usageError{fmt.Errorf("profile: %w", err)}
		}
		more, err := checks.ParseProfiles(f, data)
		if err != nil {
			return nil, &usageError{err}
		}
		for _, m := range more {
			replaced := false
			for i, p := range ps {
				if p.Name == m.Name {
					ps[i], replaced = m, true
				}
			}
			if !replaced {
				ps = append(ps, m)
			}
		}
	}
	if len(names) == 0 {
		return ps, nil
	}
	var picked []*checks.Profile
	for _, n := range names {
		found := false
		for _, p := range ps {
			if p.Name == n {
				picked = append(picked, p)
				found = true
			}
		}
		if !found {
			var known []string
			for _, p := range ps {
				known = append(known, p.Name)
			}
			msg := fmt.Sprintf("unknown operator %q", n)
			if near := checks.Nearest(n, known); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
			return nil, usageErrorf("%s; known: %s", msg, strings.Join(known, ", "))
		}
	}
	return picked, nil
}
