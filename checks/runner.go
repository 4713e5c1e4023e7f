package checks

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RunOptions bound a run.
type RunOptions struct {
	// Concurrency is how many checks run at once.
	Concurrency int
	// Timeout bounds each check.
	Timeout time.Duration
	// Started, when set, is told of each check as it starts (the operator
	// empty for a cluster-wide check) and how many the run has, and
	// Progress of each finished result: what a progress line shows while a
	// long probe runs.
	Started  func(check Meta, operator string, total int)
	Progress func(done, total int, r Result)
	// JudgeAt is the time verdicts are judged at (certificate expiry,
	// recent restarts): the clock for a live cluster, the recording's time
	// for a recording, so a fixture gives the same verdicts whenever it is
	// replayed. Nil means the run's clock.
	JudgeAt func() time.Time
	// Probe, when set, lets probe checks write (--probe); their time limit
	// is the session's, twice over (reconcile, then collection) plus a
	// minute, not Timeout.
	Probe *probe.Session
}

// Detection says whether an operator profile was found on the cluster, and
// where. An operator installed in two namespaces is two candidates, each
// judged: a Detection each, its Profile a copy named for its namespace.
type Detection struct {
	Profile *Profile
	Found   bool
	// CRDs are the CRDs of the profile's groups that the cluster serves.
	CRDs []string
	// Install is where the operator's controller was found; nil when it
	// was found nowhere, or the operator is not installed.
	Install *Install
	// LocateErr is why the controller could not be looked for (a read
	// refused): its checks are Errors then, never a Fail.
	LocateErr error
}

// Outcome is what a run found: which operators, and every result in
// registry order (per-operator results in profile order).
type Outcome struct {
	Detections []Detection
	Results    []Result
}

// servesFor is true when the per-operator check m has something to say of
// the operator p: p may carry m's own requirement, or one of reqs that
// lists m.
func servesFor(m Meta, p *Profile, reqs []Requirement) bool {
	if p.CandidateFor(m.Requirement) {
		return true
	}
	for _, r := range reqs {
		if Contains(r.Checks, m.ID) && p.CandidateFor(r.ID) {
			return true
		}
	}
	return false
}

type task struct {
	check   Check
	profile *Profile
	det     *Detection
}

// Run detects operators and runs the checks concurrently, each under its own
// timeout. A check that panics or errors becomes an Error result carrying the
// evidence it had gathered.
//
// Reads come before writes: every read-only check has finished before the
// first probe check starts. The cache keeps the first answer to each query,
// so the probes' reads see the same cluster, and no read-only check can list
// what a probe of this run created. Without this a check would judge the
// cluster with or without the canary depending on which goroutine ran first.
//
// A per-operator check runs once for each operator that may carry a
// requirement it serves: its own, or one of sel's requirements that lists
// it. A controller's health belongs to robust_controller and is listed by
// gang_scheduling too, so a gang scheduler that carries only the latter
// has it judged; a check of gang_scheduling says nothing of a serving
// operator and does not run for one.
func Run(ctx context.Context, c *cluster.Cache, profiles []*Profile, sel Selection, opts RunOptions, now func() time.Time) Outcome {
	var out Outcome
	dets, detErr := Detect(ctx, c, profiles)
	out.Detections = dets

	var tasks []task
	for _, ch := range sel.Checks {
		if !ch.Meta().PerOperator {
			tasks = append(tasks, task{check: ch})
			continue
		}
		for i := range dets {
			if d := &dets[i]; servesFor(ch.Meta(), d.Profile, sel.Requirements) {
				tasks = append(tasks, task{check: ch, profile: d.Profile, det: d})
			}
		}
	}
	results := make([]Result, len(tasks))
	if opts.Concurrency < 1 {
		opts.Concurrency = 1
	}
	var mu sync.Mutex
	done := 0
	phase := func(writes bool) {
		queue := make(chan int, len(tasks))
		for _, i := range startOrder(tasks, writes) {
			queue <- i
		}
		close(queue)
		var wg sync.WaitGroup
		for range opts.Concurrency {
			wg.Go(func() {
				for i := range queue {
					t := tasks[i]
					if opts.Started != nil {
						operator := ""
						if t.profile != nil {
							operator = t.profile.Name
						}
						mu.Lock()
						opts.Started(t.check.Meta(), operator, len(tasks))
						mu.Unlock()
					}
					results[i] = runOne(ctx, c, t, detErr, opts, now)
					if opts.Progress != nil {
						mu.Lock()
						done++
						opts.Progress(done, len(tasks), results[i])
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
	}
	phase(false)
	phase(true)
	out.Results = results
	return out
}

// startOrder is the order a phase starts its tasks in (the probes' phase
// when writes is set): the checks that read every accelerator node's pods
// first, then the others, each in the order selected.
func startOrder(tasks []task, writes bool) []int {
	var first, rest []int
	for i, t := range tasks {
		switch m := t.check.Meta(); {
		case m.Probe != writes:
		case m.ReadsNodePods:
			first = append(first, i)
		default:
			rest = append(rest, i)
		}
	}
	return append(first, rest...)
}

// abandonAfter is how long a check past its deadline may take to return.
const abandonAfter = 2 * time.Second

func runOne(ctx context.Context, c *cluster.Cache, t task, detErr error, opts RunOptions, now func() time.Time) Result {
	timeout := opts.Timeout
	meta := t.check.Meta()
	if meta.Probe && opts.Probe != nil {
		timeout = 2*opts.Probe.Timeout + time.Minute
	}
	start := now()
	if t.profile != nil {
		switch {
		case detErr != nil:
			return Result{Check: meta, Operator: t.profile.Name, Status: Error, Started: start, Finished: now(),
				Reason: fmt.Sprintf("cannot tell whether %s is installed: %v", t.profile.Title, detErr)}
		case !t.det.Found:
			why := fmt.Sprintf("the cluster serves no CRD of %s", strings.Join(t.profile.Groups, ", "))
			if len(t.profile.CRDs) > 0 {
				why = "the cluster serves none of its CRDs"
			}
			return Result{Check: meta, Operator: t.profile.Name, Status: Skip, Started: start, Finished: now(),
				Reason: fmt.Sprintf("%s is not installed: %s", t.profile.Title, why)}
		}
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	env := &Env{Cluster: c, Profile: t.profile, Now: now, Probe: opts.Probe}
	if t.det != nil {
		env.Install, env.LocateErr = t.det.Install, t.det.LocateErr
	}
	if opts.JudgeAt != nil {
		env.Now = opts.JudgeAt
	}
	type answer struct {
		res Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- answer{err: fmt.Errorf("check panicked: %v", p)}
			}
		}()
		res, err := t.check.Run(ctx, env)
		done <- answer{res, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		// A check that ignores its context must not hold up the run: give it
		// a moment to return what it has, then leave it behind.
		select {
		case a = <-done:
		case <-time.After(abandonAfter):
			a = answer{err: fmt.Errorf("did not stop when its time was up: %w", ctx.Err())}
		}
	}
	res, err := a.res, a.err
	if err != nil {
		res.Status = Error
		res.Reason = err.Error()
		if ctx.Err() != nil && timeout > 0 {
			res.Reason = fmt.Sprintf("not finished within %s: %v", timeout, err)
		}
	}
	if res.Status == "" {
		res.Status = Error
		res.Reason = "check returned no verdict"
	}
	res.Check = meta
	if t.profile != nil {
		res.Operator = t.profile.Name
	}
	res.Started, res.Finished = start, now()
	return res
}

// Detect finds which profiles' operators are installed, from the CRD groups
// the cluster serves, and where each one's controller runs (Locate), in any
// namespace. A profile comes out once, or once per install when its
// controller runs in several namespaces.
func Detect(ctx context.Context, c *cluster.Cache, profiles []*Profile) ([]Detection, error) {
	dets := make([]Detection, len(profiles))
	for i, p := range profiles {
		dets[i] = Detection{Profile: p}
	}
	crds, err := listCRDs(ctx, c)
	if err != nil {
		return dets, err
	}
	for i, p := range profiles {
		for _, crd := range crds {
			if Contains(p.Groups, crd.Spec.Group) {
				dets[i].CRDs = append(dets[i].CRDs, crd.Name)
				// A group can be shared (kubeflow.org holds training jobs,
				// notebooks and Katib): a profile that names its CRDs is
				// found by them, not by its group alone.
				if len(p.CRDs) == 0 || Contains(p.CRDs, crd.Name) && serves(crd, p.Served[crd.Name]) {
					dets[i].Found = true
				}
			}
		}
	}
	// The operators are located side by side: their reads are the
	// cache's, shared, and the first (every Deployment) is the longest.
	installs := make([][]Install, len(dets))
	var wg sync.WaitGroup
	for i := range dets {
		if !dets[i].Found {
			continue
		}
		wg.Go(func() {
			installs[i], dets[i].LocateErr = Locate(ctx, c, dets[i].Profile, crds)
		})
	}
	wg.Wait()
	var out []Detection
	for i, d := range dets {
		switch ins := installs[i]; {
		case len(ins) == 1:
			d.Install = &ins[0]
			out = append(out, d)
		case len(ins) > 1:
			for j := range ins {
				one := d
				one.Install = &ins[j]
				one.Profile = d.Profile.At(ins[j].Namespace)
				out = append(out, one)
			}
		default:
			out = append(out, d)
		}
	}
	return out, nil
}

// serves is true when the CRD serves version, or when no version is asked
// for.
func serves(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	if version == "" {
		return true
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Served {
			return true
		}
	}
	return false
}

func listCRDs(ctx context.Context, c *cluster.Cache) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	objs, _, err := c.List(ctx, cluster.Query{Resource: cluster.CRDs})
	if err != nil {
		return nil, err
	}
	return Typed[*apiextensionsv1.CustomResourceDefinition](objs, cluster.CRDs)
}

// Typed asserts every object of a list is of type T: live typed clients
// and recordings both give built-in kinds their Go type.
func Typed[T any](objs []runtime.Object, r cluster.Resource) ([]T, error) {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		t, ok := o.(T)
		if !ok {
			return nil, fmt.Errorf("list %s: got %T, want %T", r, o, *new(T))
		}
		out = append(out, t)
	}
	return out, nil
}

// Record runs every check of registry, for every operator any requirement
// of the catalog could judge it for, so that the cache reads what the
// checks read, and returns that as a recording to replay with a fixture.
// info is saved as the recording's header.
func Record(ctx context.Context, c *cluster.Cache, info cluster.Info, profiles []*Profile, registry []Check, timeout time.Duration, now func() time.Time) (*cluster.Recording, error) {
	reqs, err := Catalog(registry)
	if err != nil {
		return nil, err
	}
	info.RecordedAt = now().UTC()
	Run(ctx, c, profiles, Selection{Requirements: reqs, Checks: registry}, RunOptions{Concurrency: 4, Timeout: timeout}, now)
	return c.Recording(info)
}
