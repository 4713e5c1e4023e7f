package builtin_test

import (
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/stretchr/testify/require"
)

// catalog is the built-in catalog checked against the registry.
func catalog(t *testing.T) []checks.Requirement {
	t.Helper()
	reqs, err := checks.Catalog(builtin.Registry())
	require.NoError(t, err)
	return reqs
}
