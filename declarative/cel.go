package declarative

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// The variables the expressions see: one object, or the list of them, as the
// API server serves them (maps, not Go types), as a ValidatingAdmissionPolicy
// sees its object.
const (
	objectVar  = "object"
	objectsVar = "objects"
)

// Cost limits, in CEL's cost units (about one per elementary operation).
// The API server's own per-call limit bounds one expression on one object;
// a check's budget bounds all of them together, since a check judges every
// object of a cluster, which admission never does at once: a runaway
// expression ends as Error, not a hung run.
const (
	perCallLimit = celconfig.PerCallLimit
	checkBudget  = 100 * celconfig.RuntimeCELCostBudget
)

// interruptEvery is how many comprehension iterations pass between looks at
// the context, so that a check's timeout also stops a long evaluation.
const interruptEvery = 100

// envs are the two CEL environments, built once: building one costs tens of
// milliseconds, and every file shares them. StoredExpressions is the
// environment the API server keeps for expressions written before an
// upgrade; its doc names configuration files as its other use, and it
// accepts every library a cluster's version might (a user's file is not
// checked against one cluster's version).
var envs = sync.OnceValues(func() (*envPair, error) {
	base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	build := func(opts ...cel.EnvOption) (*cel.Env, error) {
		set, err := base.Extend(environment.VersionedOptions{
			IntroducedVersion: version.MajorMinor(1, 0),
			EnvOptions:        opts,
		})
		if err != nil {
			return nil, err
		}
		return set.Env(environment.StoredExpressions)
	}
	object, err := build(cel.Variable(objectVar, cel.DynType))
	if err != nil {
		return nil, fmt.Errorf("CEL environment of %s: %w", objectVar, err)
	}
	list, err := build(cel.Variable(objectsVar, cel.ListType(cel.DynType)))
	if err != nil {
		return nil, fmt.Errorf("CEL environment of %s: %w", objectsVar, err)
	}
	return &envPair{object: object, list: list}, nil
})

type envPair struct{ object, list *cel.Env }

// Which environment an expression is compiled in.
type envKind int

const (
	objectEnv envKind = iota
	listEnv
)

// The result types an expression may have. Dyn is accepted too, since
// fields of an object are dyn: `object.spec.enabled` is checked at run time.
var (
	boolResult   = cel.BoolType
	stringResult = cel.StringType
)

// program is a compiled expression and what it is, for messages.
type program struct {
	field, source string
	want          *cel.Type
	prg           cel.Program
}

// compile compiles source (the value of field at node n) in env; a Problem
// at n when it does not compile or cannot have the wanted type.
func (d *decoder) compile(which envKind, n *yaml.Node, field, source string, want *cel.Type) *program {
	pair, err := envs()
	if err != nil {
		d.errorf(n, "%s: %v", field, err)
		return nil
	}
	env := pair.object
	if which == listEnv {
		env = pair.list
	}
	ast, iss := env.Compile(source)
	if iss.Err() != nil {
		d.errorf(n, "%s does not compile:\n%v", field, iss.Err())
		return nil
	}
	if out := ast.OutputType(); !out.IsExactType(want) && !out.IsExactType(cel.DynType) {
		d.errorf(n, "%s: want a %s, got a %s", field, want, out)
		return nil
	}
	prg, err := env.Program(ast, cel.CostLimit(perCallLimit), cel.InterruptCheckFrequency(interruptEvery))
	if err != nil {
		d.errorf(n, "%s: %v", field, err)
		return nil
	}
	return &program{field: field, source: source, want: want, prg: prg}
}

// budget is what a check may still spend on evaluation.
type budget struct{ left uint64 }

// eval runs p on vars within b, and says what it returned, of p's type.
func (p *program) eval(ctx context.Context, b *budget, vars map[string]any) (ref.Val, error) {
	out, det, err := p.prg.ContextEval(ctx, vars)
	if det != nil && det.ActualCost() != nil {
		cost := *det.ActualCost()
		if cost > b.left {
			b.left = 0
			return nil, fmt.Errorf("%s: the check's CEL cost budget (%d) is spent", p.field, uint64(checkBudget))
		}
		b.left -= cost
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.field, err)
	}
	want := types.BoolType
	if p.want == stringResult {
		want = types.StringType
	}
	if out.Type() != want {
		return nil, fmt.Errorf("%s returned a %s, not a %s", p.field, out.Type().TypeName(), want.TypeName())
	}
	return out, nil
}
