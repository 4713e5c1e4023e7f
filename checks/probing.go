package checks

import (
	"context"
	"errors"
	"time"

	"github.com/aiconform/aiconform/probe"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Probing is the shape every probe that watches what it made shares: it
// writes its objects (each a step of the evidence and an event of its
// timeline), watches what happens to them from the first write on, waits
// in phases each bounded by the probe timeout, and ends with its timeline
// as the result's table. What it made is the session's to clean up, after
// every probe of the run, whatever became of this one.
//
// A probe starts one with StartProbing once it has decided to write, and
// defers Stop; its Run names its Result r, so that what the deferred Stop
// adds reaches the answer whichever way Run returns:
//
//	p, err := checks.StartProbing(ctx, env, &r)
//	if err != nil { return r, err }
//	defer p.Stop()
//	if _, err := p.Create(ctx, obj, "what it is for"); err != nil { return p.Refused(err) }
//	if err := p.Watch(ctx, w.apply, sources...); err != nil { return r, err }
//	ok, err := p.Phase(ctx, w.done)
type Probing struct {
	// Timeline is the probe's story, from StartProbing on; its watch's
	// apply adds to it what it sees.
	Timeline probe.Timeline

	env *Env
	r   *Result
	// from is the resourceVersion of the first object written since the
	// last watch started, where the next watch starts.
	from string
	// events and apply are the watch's, once Watch started it.
	events <-chan probe.Event
	apply  func(probe.Event)
	stop   func()
}

// StartProbing makes sure the run's namespace exists and starts the
// probe's timeline.
func StartProbing(ctx context.Context, env *Env, r *Result) (*Probing, error) {
	if _, err := env.Probe.EnsureNamespace(ctx); err != nil {
		return nil, err
	}
	return &Probing{Timeline: probe.Timeline{T0: env.Now()}, env: env, r: r}, nil
}

// Create writes one object of the probe's own: labelled with the run, in
// the run's namespace (or named after the run when it is cluster-scoped),
// added to the evidence as the `kubectl create -f -` it is, with what
// kubectl answers, and to the timeline once created. obj is changed in
// place. The first object's resourceVersion is where Watch starts, so
// that nothing that happens to any of them is missed. A write the cluster
// refused is a *CreateError.
func (p *Probing) Create(ctx context.Context, obj *unstructured.Unstructured, note string) (*unstructured.Unstructured, error) {
	s := p.env.Probe
	m, err := s.Mapping(obj.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	s.Label(obj, m)
	cmd, err := probe.CreateCommand(s.NamespaceOf(m), obj, false, false)
	if err != nil {
		return nil, err
	}
	created, cerr := s.Create(ctx, m, obj)
	out := probe.ErrorText("creating", "STDIN", cerr)
	if cerr == nil {
		if out, err = probe.CreatedText(obj, false); err != nil {
			return nil, err
		}
		p.Timeline.Add(p.env.Now(), "created %s/%s", m.Resource.Resource, obj.GetName())
	}
	p.r.Evidence = append(p.r.Evidence, Step{Command: cmd, Output: out, CapturedAt: p.env.Now().UTC(), Note: note})
	if cerr != nil {
		return nil, &CreateError{Object: obj, Err: cerr}
	}
	if p.from == "" {
		p.from = created.GetResourceVersion()
	}
	return created, nil
}

// Delete deletes one of the probe's objects before the session's cleanup
// does, when what follows its deletion is part of what the probe judges,
// and adds the `kubectl delete` it is to the evidence, with what kubectl
// answers, and to the timeline once deleted.
func (p *Probing) Delete(ctx context.Context, gvk schema.GroupVersionKind, name, note string) error {
	s := p.env.Probe
	m, err := s.Mapping(gvk)
	if err != nil {
		return err
	}
	err = s.Delete(ctx, m, name)
	out := probe.DeletedText(m, s.Namespace, name)
	if err != nil {
		out = probe.ErrorText("deleting", "", err)
	} else {
		p.Timeline.Add(p.env.Now(), "deleted %s/%s", m.Resource.Resource, name)
	}
	p.r.Evidence = append(p.r.Evidence, Step{Command: probe.DeleteCommand(s.Namespace, m, name), Output: out, CapturedAt: p.env.Now().UTC(), Note: note})
	return err
}

// Watch follows sources from the first object written since the last
// watch started on, handing each event to apply as the phases wait.
// Objects written after Watch are seen too: the watch started before
// them. One watch runs at a time: Watch ends the one before.
func (p *Probing) Watch(ctx context.Context, apply func(probe.Event), sources ...probe.Source) error {
	if p.from == "" {
		return errors.New("probe: nothing written since the last watch to watch from")
	}
	p.EndWatch()
	events, stop, err := p.env.Probe.WatchAll(ctx, p.from, sources)
	if err != nil {
		return err
	}
	p.events, p.apply, p.stop, p.from = events, apply, stop, ""
	return nil
}

// Phase waits, within the probe timeout, until done holds; false when the
// time ran out. The error is the run's own end (Ctrl-C, its deadline).
func (p *Probing) Phase(ctx context.Context, done func() bool) (bool, error) {
	return p.env.Probe.Phase(ctx, p.events, p.apply, done)
}

// Until is Phase within d rather than the probe timeout: a window the
// probe keeps open to see that something does not happen.
func (p *Probing) Until(ctx context.Context, d time.Duration, done func() bool) (bool, error) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	ok := probe.Until(wctx, p.events, p.apply, done)
	return ok, ctx.Err()
}

// Events is the watch's channel, for a probe that reads something else
// between its events (a metric polled while the watch goes on); it hands
// each event to apply itself.
func (p *Probing) Events() <-chan probe.Event { return p.events }

// Refused is the check's answer when a step failed with err (Refused).
func (p *Probing) Refused(err error) (Result, error) {
	return Refused(*p.r, err)
}

// EndWatch ends the watch, when the probe goes on to something it does
// not watch (or watches otherwise).
func (p *Probing) EndWatch() {
	if p.stop != nil {
		p.stop()
	}
	p.stop, p.events, p.apply = nil, nil, nil
}

// Stop ends the watch and makes the timeline the result's table; a probe
// defers it. It may be called more than once: the last call's timeline is
// the table.
func (p *Probing) Stop() {
	p.EndWatch()
	p.r.Table = TimelineTable(&p.Timeline)
}
