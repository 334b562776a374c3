package upgrade

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// defaultPin keeps a group that launches its template's default
// (cloud.DefaultFollower) following it: the target made the default for
// the run, the default before it recorded first and restored by abort
// and rollback.
type defaultPin struct {
	*cloudGroup
	// defaultBack says abort made the template's default before the run
	// the default again.
	defaultBack bool
}

// keepDefault makes version its template's default when the group
// launches the default (cloud.DefaultFollower), so the group keeps
// following it after the run rather than being pinned. The default before
// the run is recorded first, once, so that abort and rollback (a run back
// to it) restore it whatever stops the run.
func (p *defaultPin) keepDefault(ctx context.Context, version string) error {
	f, ok := p.pool.(cloud.DefaultFollower)
	if !ok {
		return nil
	}
	follows, current, err := f.TemplateDefault(ctx)
	if err != nil || !follows || current == version {
		return err
	}
	cr := p.cloudRecord()
	if cr.DefaultWas == "" {
		cr.DefaultWas = current
		if err := p.save(ctx); err != nil {
			return err
		}
	}
	if err := f.SetTemplateDefault(ctx, version); err != nil {
		return err
	}
	p.logf("made %s the default (was %s): %s %q launches the default", p.words.templateVersion(version), current, p.words.groupKind(), p.pool.GroupName())
	return nil
}

// abortDefault is restoreDefault for abort, before its scale-down, except
// when every node of the group runs the target already (a run stopped in
// its scale-down): the old default back would have the group launch what
// none of its nodes runs. The target stays the default.
func (p *defaultPin) abortDefault(ctx context.Context) (bool, error) {
	cr := p.cfg.Record.Cloud
	if cr == nil || cr.DefaultWas == "" || !p.allOnTarget() {
		return p.restoreDefault(ctx)
	}
	return false, nil
}

// allOnTarget reports whether no node of an in-place run is left to
// upgrade; blue/green's rollback of green settles its default itself.
func (p *defaultPin) allOnTarget() bool {
	return !p.wholeGroup && len(p.cfg.Plan.Outdated()) == 0 && len(p.cfg.Plan.Deferred) == 0
}

// settleDefault looks again, once abort's scale-down is over, at what the
// group's machines run, rather than trusting the look before it. With
// none left on another version than the target, the target is (again)
// the default, so the group launches what its nodes run and a run after
// abort rightly finds nothing to do; otherwise the old default stays and
// a run upgrades the rest. The note says which.
func (p *defaultPin) settleDefault(ctx context.Context) error {
	cr := p.cfg.Record.Cloud
	if cr.TargetVersion == "" {
		return nil // the run stopped before it pointed the group anywhere
	}
	onTarget, others, err := p.machineVersions(ctx, cr.TargetVersion)
	if err != nil {
		return err
	}
	group := fmt.Sprintf("%s %q", p.words.groupKind(), p.pool.GroupName())
	switch {
	case others == 0 && onTarget > 0 && cr.DefaultWas != "":
		return p.keepTargetDefault(ctx, onTarget)
	case p.defaultBack && onTarget == 0:
		p.tally.note = joinNote(p.tally.note, fmt.Sprintf("%s launches %s again, the default before the run, which every node of it runs", group, p.words.templateVersion(cr.DefaultWas)))
	case p.defaultBack:
		p.tally.note = joinNote(p.tally.note, fmt.Sprintf("%s launches %s again, the default before the run; the %s already on version %s stay: \"kubectl nodeupgrade run\" upgrades the rest",
			group, p.words.templateVersion(cr.DefaultWas), plan.Count(onTarget, "node"), cr.TargetVersion))
	case others > 0 && cr.FromVersion != "" && cr.TargetVersion != cr.FromVersion:
		p.tally.note = joinNote(p.tally.note, fmt.Sprintf("%s still launches %s; \"kubectl nodeupgrade run\" upgrades the rest, %s brings the upgraded nodes back",
			group, p.words.templateVersion(cr.TargetVersion), p.runBackTo(cr.FromVersion)))
	}
	return nil
}

// runBackTo says how a run goes back to version: with the provider's flag
// that names an existing version (--launch-template-version,
// --instance-template).
func (cg *cloudGroup) runBackTo(version string) string {
	if c := cg.cfg.Plan.Cloud; c != nil {
		if flag := cloud.BoundFlags().Version[c.Provider]; flag != "" {
			return fmt.Sprintf("a run with --%s %s", flag, version)
		}
	}
	return "a run back to version " + version
}

// machineVersions counts the group's machines, leaving ones aside, that
// run version and that run another.
func (p *defaultPin) machineVersions(ctx context.Context, version string) (onTarget, others int, err error) {
	nodes, err := p.nodes.groupNodes()
	if err != nil {
		return 0, 0, err
	}
	byNode, pending, err := p.pool.Machines(ctx, nodes)
	if err != nil {
		return 0, 0, err
	}
	for _, m := range append(slices.Collect(maps.Values(byNode)), pending...) {
		switch {
		case m.Leaving():
		case p.pool.Current(m, version):
			onTarget++
		default:
			others++
		}
	}
	return onTarget, others, nil
}

// keepTargetDefault makes the target the default again where abort (this
// one or one killed before) made the old one the default: every machine
// left runs the target. A default someone else set is theirs and stays.
func (p *defaultPin) keepTargetDefault(ctx context.Context, onTarget int) error {
	cr := p.cfg.Record.Cloud
	f, ok := p.pool.(cloud.DefaultFollower)
	if !ok {
		return nil
	}
	_, current, err := f.TemplateDefault(ctx)
	if err != nil {
		return err
	}
	switch current {
	case cr.DefaultWas:
		if err := f.SetTemplateDefault(ctx, cr.TargetVersion); err != nil {
			return err
		}
		p.logf("made %s the default again: the %s left in %s %q run it", p.words.templateVersion(cr.TargetVersion), plan.Count(onTarget, "node"), p.words.groupKind(), p.pool.GroupName())
	case cr.TargetVersion:
	default:
		return nil // restoreDefault named it
	}
	p.defaultBack = false
	kept := fmt.Sprintf("every node of %s %q runs %s, which stays the default (it was %s before the run)",
		p.words.groupKind(), p.pool.GroupName(), p.words.templateVersion(cr.TargetVersion), cr.DefaultWas)
	p.tally.note = joinNote(p.tally.note, kept)
	p.logf("%s", kept)
	return nil
}

// restoreDefault makes the recorded default before the run the default
// again (abort, and a blue/green rollback, which puts blue back). A
// default someone changed since the run set it is theirs and stays. It
// reports whether the old default is the default now.
func (p *defaultPin) restoreDefault(ctx context.Context) (bool, error) {
	cr := p.cfg.Record.Cloud
	if cr == nil || cr.DefaultWas == "" {
		return false, nil
	}
	f, ok := p.pool.(cloud.DefaultFollower)
	if !ok {
		p.tally.note = joinNote(p.tally.note, fmt.Sprintf("the run made version %s the default of the %s of %s %q (it was %s) but cannot reach the group to change it back: do it by hand", cr.TargetVersion, cr.TemplateKind, cr.GroupKind, cr.Group, cr.DefaultWas))
		p.logf("%s", p.tally.note)
		return false, nil
	}
	_, current, err := f.TemplateDefault(ctx)
	switch {
	case err != nil:
		return false, err
	case current == cr.DefaultWas:
		return true, nil
	case current != cr.TargetVersion:
		p.tally.note = joinNote(p.tally.note, fmt.Sprintf("the default of the %s is version %s, set since the run made it %s: left so (it was %s before the run)", p.words.templateKind(), current, cr.TargetVersion, cr.DefaultWas))
		p.logf("%s", p.tally.note)
		return false, nil
	}
	if err := f.SetTemplateDefault(ctx, cr.DefaultWas); err != nil {
		return false, err
	}
	p.logf("made %s the default again (the run had made it %s)", p.words.templateVersion(cr.DefaultWas), current)
	return true, nil
}
