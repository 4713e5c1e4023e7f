package checks_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
