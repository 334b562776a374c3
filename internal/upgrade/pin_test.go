package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// defaultGroup is a fake group that may launch its template's default
// version; each SetTemplateDefault call is logged with whether the record
// held the old default when it came.
type defaultGroup struct {
	*fakeGroup
	follows bool
	def     string
	rec     *state.Record
	log     []string
}

var _ cloud.DefaultFollower = (*defaultGroup)(nil)

func (d *defaultGroup) TemplateDefault(context.Context) (bool, string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.follows, d.def, nil
}

func (d *defaultGroup) SetTemplateDefault(_ context.Context, version string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	was := ""
	if d.rec.Cloud != nil {
		was = d.rec.Cloud.DefaultWas
	}
	d.log = append(d.log, fmt.Sprintf("default %s (recorded %q)", version, was))
	d.def = version
	return nil
}

func TestDefaultFollowedAfterTheRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		follows bool
		// killAt kills the run there; abort then ends it, after someone
		// else sets the default to changedTo if given.
		killAt, changedTo string
		wantLog           []string
		wantDefault       string
	}{
		{name: "follows the default: the target made the default, the old one recorded first", follows: true,
			wantLog: []string{`default 2 (recorded "1")`}, wantDefault: "2"},
		{name: "pinned to a number: the default is not touched", follows: false, wantDefault: "1"},
		{name: "abort restores the old default", follows: true, killAt: "Surge 2",
			wantLog: []string{`default 2 (recorded "1")`, `default 1 (recorded "1")`}, wantDefault: "1"},
		{name: "abort leaves a default someone set since", follows: true, killAt: "Surge 2", changedTo: "5",
			wantLog: []string{`default 2 (recorded "1")`}, wantDefault: "5"},
		// Killed in the scale-down, every node runs the target: making
		// the old version the default again would have the group launch
		// it, with no node left for a run to upgrade (issue 32).
		{name: "abort after the last batch keeps the target the default", follows: true, killAt: "ScaleDown",
			wantLog: []string{`default 2 (recorded "1")`}, wantDefault: "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := plan.Sizes{Min: 1, Desired: 3, Max: 4}
			client, fg := cloudCluster(before, threeOldNodes()...)
			in := plan.Input{Strategy: "surge", MaxSurge: 1, MaxUnavailable: "0", Cloud: fg.cloudGroup()}
			p := buildPlan(t, client, in)
			group := &defaultGroup{fakeGroup: fg, follows: tc.follows, def: "1"}
			cfg := cloudRun(p, client, group)
			cfg.Drain = drainOpts()
			rec := cfg.Record
			group.rec = rec
			if tc.killAt != "" {
				cfg.OnProgress = killAt(rec, p, tc.killAt)
			}
			got := runEngine(t, cfg, nil, fg)
			if tc.killAt == "" && got.err != nil {
				t.Fatalf("run: %v\n%s", got.err, got.out)
			}
			if tc.killAt != "" {
				if !errors.Is(got.err, errKilled) {
					t.Fatalf("first run: %v, want it killed\n%s", got.err, got.out)
				}
				if tc.changedTo != "" {
					group.def = tc.changedTo
				}
				again := buildPlan(t, client, plan.Input{Strategy: "surge", MaxSurge: 1, MaxUnavailable: "0", Cloud: fg.cloudGroup(), Resume: plan.Resume{Recorded: rec.Cloud.Original}})
				acfg := cloudRun(again, client, group)
				acfg.Record = rec
				if out, _, err := abortRun(t, acfg, fg); err != nil {
					t.Fatalf("abort: %v\n%s", err, out)
				}
			}
			if !slices.Equal(group.log, tc.wantLog) {
				t.Errorf("calls %q, want %q", group.log, tc.wantLog)
			}
			if group.def != tc.wantDefault {
				t.Errorf("default %s, want %s", group.def, tc.wantDefault)
			}
		})
	}
}
