package checks

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/aiconform/aiconform/cluster"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RunOptions bound a run.
type RunOptions struct {
	// Concurrency is how many checks run at once.
	Concurrency int
	// Timeout bounds each check.
	Timeout time.Duration
	// Progress, when set, is told of each finished result.
	Progress func(done, total int, r Result)
	// JudgeAt is the time verdicts are judged at (certificate expiry,
	// recent restarts): the clock for a live cluster, the recording's time
	// for a recording, so a fixture gives the same verdicts whenever it is
	// replayed. Nil means the run's clock.
	JudgeAt func() time.Time
}

// Detection says whether an operator profile was found on the cluster.
type Detection struct {
	Profile *Profile
	Found   bool
	// CRDs are the CRDs of the profile's groups that the cluster serves.
	CRDs []string
}

// Outcome is what a run found: which operators, and every result in
// registry order (per-operator results in profile order).
type Outcome struct {
	Detections []Detection
	Results    []Result
}

type task struct {
	check   Check
	profile *Profile
}

// Run detects operators and runs the checks concurrently, each under its own
// timeout. A check that panics or errors becomes an Error result carrying the
// evidence it had gathered.
func Run(ctx context.Context, c *cluster.Cache, profiles []*Profile, selected []Check, opts RunOptions, now func() time.Time) Outcome {
	var out Outcome
	dets, detErr := Detect(ctx, c, profiles)
	out.Detections = dets

	var tasks []task
	for _, ch := range selected {
		if !ch.Meta().PerOperator {
			tasks = append(tasks, task{check: ch})
			continue
		}
		for _, p := range profiles {
			tasks = append(tasks, task{check: ch, profile: p})
		}
	}
	results := make([]Result, len(tasks))
	if opts.Concurrency < 1 {
		opts.Concurrency = 1
	}
	sem := make(chan struct{}, opts.Concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i, t := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = runOne(ctx, c, t, dets, detErr, opts, now)
			if opts.Progress != nil {
				mu.Lock()
				done++
				opts.Progress(done, len(tasks), results[i])
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	out.Results = results
	return out
}

func runOne(ctx context.Context, c *cluster.Cache, t task, dets []Detection, detErr error, opts RunOptions, now func() time.Time) (r Result) {
	timeout := opts.Timeout
	meta := t.check.Meta()
	start := now()
	if t.profile != nil {
		switch {
		case detErr != nil:
			return Result{Check: meta, Operator: t.profile.Name, Status: Error, Started: start, Finished: now(),
				Reason: fmt.Sprintf("cannot tell whether %s is installed: %v", t.profile.Title, detErr)}
		case !detected(dets, t.profile):
			return Result{Check: meta, Operator: t.profile.Name, Status: Skip, Started: start, Finished: now(),
				Reason: fmt.Sprintf("%s is not installed: the cluster serves no CRD of %v", t.profile.Title, t.profile.Groups)}
		}
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	env := &Env{Cluster: c, Profile: t.profile, Now: now}
	if opts.JudgeAt != nil {
		env.Now = opts.JudgeAt
	}
	defer func() {
		if p := recover(); p != nil {
			r = Result{Check: meta, Status: Error, Reason: fmt.Sprintf("check panicked: %v", p), Details: []string{string(debug.Stack())}}
		}
		r.Check = meta
		if t.profile != nil {
			r.Operator = t.profile.Name
		}
		r.Started, r.Finished = start, now()
	}()
	res, err := t.check.Run(ctx, env)
	if err != nil {
		res.Status = Error
		res.Reason = err.Error()
		if ctx.Err() != nil {
			res.Reason = fmt.Sprintf("not finished within %s: %v", timeout, err)
		}
	}
	if res.Status == "" {
		res.Status = Error
		res.Reason = "check returned no verdict"
	}
	return res
}

func detected(dets []Detection, p *Profile) bool {
	for _, d := range dets {
		if d.Profile == p {
			return d.Found
		}
	}
	return false
}

// Detect finds which profiles' operators are installed, from the CRD groups
// the cluster serves.
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
			if contains(p.Groups, crd.Spec.Group) {
				dets[i].Found = true
				dets[i].CRDs = append(dets[i].CRDs, crd.Name)
			}
		}
	}
	return dets, nil
}

func listCRDs(ctx context.Context, c *cluster.Cache) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	objs, _, err := c.List(ctx, cluster.Query{Resource: cluster.CRDs})
	if err != nil {
		return nil, err
	}
	return typed[*apiextensionsv1.CustomResourceDefinition](objs, cluster.CRDs)
}

// typed asserts every object of a list is of type T: live typed clients
// and recordings both give built-in kinds their Go type.
func typed[T any](objs []runtime.Object, r cluster.Resource) ([]T, error) {
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

// Record runs every check so that the cache reads what the checks read, and
// returns that as a recording to replay with a fixture. info is saved as the
// recording's header.
func Record(ctx context.Context, c *cluster.Cache, info cluster.Info, profiles []*Profile, timeout time.Duration, now func() time.Time) (*cluster.Recording, error) {
	info.RecordedAt = now().UTC()
	Run(ctx, c, profiles, Registry(), RunOptions{Concurrency: 4, Timeout: timeout}, now)
	return c.Recording(info)
}
