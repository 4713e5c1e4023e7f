package checks_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/probe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// TestProbingRunsNameTheirResult holds every probe to what Probing's
// deferred Stop needs: the Result it was started with is Run's named
// result. With an unnamed one, Stop sets the timeline on a copy the
// caller never sees, and the probe's evidence loses its table (the
// canary did, caught only on the rig).
func TestProbingRunsNameTheirResult(t *testing.T) {
	fset := token.NewFileSet()
	found := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || !isStartProbing(call.Fun) || len(call.Args) < 3 {
					return true
				}
				found++
				arg, ok := call.Args[2].(*ast.UnaryExpr)
				if !ok || arg.Op != token.AND {
					return true // a pointer handed in: its owner's result
				}
				id, _ := arg.X.(*ast.Ident)
				named := false
				for _, res := range fn.Type.Results.List {
					for _, name := range res.Names {
						named = named || id != nil && name.Name == id.Name
					}
				}
				assert.True(t, named, "%s: %s starts Probing with &%s, which is not its named result", fset.Position(call.Pos()), fn.Name.Name, exprName(arg.X))
				return true
			})
		}
		return nil
	})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, found, 9, "the probes that start Probing, and PrintingPods")
}

func isStartProbing(e ast.Expr) bool {
	switch f := e.(type) {
	case *ast.Ident:
		return f.Name == "StartProbing"
	case *ast.SelectorExpr:
		return f.Sel.Name == "StartProbing"
	}
	return false
}

func exprName(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}

// What a probe's write answers: created, it is evidence and an event of
// the timeline; refused by the cluster, Fail with its words; a kind the
// session cannot map is no refusal of the cluster's, and an Error.
func TestProbingCreate(t *testing.T) {
	f := checkstest.NewWorld(t).Serve()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	env := &checks.Env{Now: checkstest.FixedNow, Probe: probe.NewSession(f.Dyn, mapper, "r", time.Minute)}
	object := func(kind, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind(kind)
		u.SetName(name)
		return u
	}
	var r checks.Result
	p, err := checks.StartProbing(context.Background(), env, &r)
	require.NoError(t, err)
	_, err = p.Create(context.Background(), object("Pod", "made"), "a pod")
	require.NoError(t, err)
	p.Stop()
	require.NotNil(t, r.Table)
	assert.Equal(t, "created pods/made", r.Table.Rows[0][0])
	require.Len(t, r.Evidence, 1)
	assert.Equal(t, "a pod", r.Evidence[0].Note)

	f.Dyn.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewBadRequest("no configmaps here")
	})
	_, err = p.Create(context.Background(), object("ConfigMap", "refused"), "a config map")
	got, err := p.Refused(err)
	require.NoError(t, err)
	assert.Equal(t, checks.Fail, got.Status)
	assert.Contains(t, got.Reason, "the probe's ConfigMap refused could not be created: no configmaps here")

	_, err = p.Create(context.Background(), object("Secret", "unmapped"), "a kind not mapped")
	_, err = p.Refused(err)
	assert.ErrorContains(t, err, "resolve /v1, Kind=Secret")
}
