package upgrade

import (
	"context"
	"fmt"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// keepDefault makes version its template's default when the group
// launches the default (cloud.DefaultFollower), so the group keeps
// following it after the run rather than being pinned. The default before
// the run is recorded first, once, so that abort and rollback (a run back
// to it) restore it whatever stops the run.
func (e *Engine) keepDefault(ctx context.Context, version string) error {
	f, ok := e.group.(cloud.DefaultFollower)
	if !ok {
		return nil
	}
	follows, current, err := f.TemplateDefault(ctx)
	if err != nil || !follows || current == version {
		return err
	}
	cr := e.cloudRecord()
	if cr.DefaultWas == "" {
		cr.DefaultWas = current
		if err := e.save(ctx); err != nil {
			return err
		}
	}
	if err := f.SetTemplateDefault(ctx, version); err != nil {
		return err
	}
	e.logf("made %s version %s the default (was %s): %s %q launches the default", e.templateKind(), version, current, e.groupKind(), e.group.GroupName())
	return nil
}

// abortDefault is restoreDefault for abort, except when every node of the
// group runs the target already (a run stopped in its scale-down): the old
// default back would have the group launch what none of its nodes runs,
// and a fresh run find nothing to upgrade. The target stays the default.
func (e *Engine) abortDefault(ctx context.Context) (bool, error) {
	cr := e.cfg.Record.Cloud
	if cr == nil || cr.DefaultWas == "" || !e.allOnTarget() {
		return e.restoreDefault(ctx)
	}
	e.note = joinNote(e.note, fmt.Sprintf("every node of %s %q runs %s version %s, which stays the default (it was %s before the run)",
		e.groupKind(), e.group.GroupName(), e.templateKind(), cr.TargetVersion, cr.DefaultWas))
	e.logf("%s", e.note)
	return false, nil
}

// allOnTarget reports whether no node of an in-place run is left to
// upgrade; blue/green's rollback of green settles its default itself.
func (e *Engine) allOnTarget() bool {
	return !e.traits.WholeGroup && len(e.cfg.Plan.Outdated()) == 0
}

// restoreDefault makes the recorded default before the run the default
// again (abort, and a blue/green rollback, which puts blue back). A
// default someone changed since the run set it is theirs and stays. It
// reports whether the old default is the default now.
func (e *Engine) restoreDefault(ctx context.Context) (bool, error) {
	cr := e.cfg.Record.Cloud
	if cr == nil || cr.DefaultWas == "" {
		return false, nil
	}
	f, ok := e.group.(cloud.DefaultFollower)
	if !ok {
		e.note = joinNote(e.note, fmt.Sprintf("the run made version %s the default of the %s of %s %q (it was %s) but cannot reach the group to change it back: do it by hand", cr.TargetVersion, cr.TemplateKind, cr.GroupKind, cr.Group, cr.DefaultWas))
		e.logf("%s", e.note)
		return false, nil
	}
	_, current, err := f.TemplateDefault(ctx)
	switch {
	case err != nil:
		return false, err
	case current == cr.DefaultWas:
		return true, nil
	case current != cr.TargetVersion:
		e.note = joinNote(e.note, fmt.Sprintf("the default of the %s is version %s, set since the run made it %s: left so (it was %s before the run)", e.templateKind(), current, cr.TargetVersion, cr.DefaultWas))
		e.logf("%s", e.note)
		return false, nil
	}
	if err := f.SetTemplateDefault(ctx, cr.DefaultWas); err != nil {
		return false, err
	}
	e.logf("made %s version %s the default again (the run had made it %s)", e.templateKind(), cr.DefaultWas, current)
	return true, nil
}
