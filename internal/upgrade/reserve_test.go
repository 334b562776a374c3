package upgrade

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// reservingGroup is a fake group whose cloud reserves capacity: one
// reservation per zone of the fake's, found again by its token.
type reservingGroup struct {
	*fakeGroup
	noCapacity string            // a zone whose reservation fails
	byToken    map[string]string // token -> ID, those made
	active     map[string]bool   // ID -> not cancelled
}

var _ cloud.SurgeReserver = (*reservingGroup)(nil)

func (g *reservingGroup) ReservesSurge() bool { return true }

func (g *reservingGroup) PlanReservations(_ context.Context, added int32, token string) ([]plan.Reservation, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, fmt.Sprintf("PlanReservations %d", added))
	var out []plan.Reservation
	for i, z := range g.zones {
		n := added / int32(len(g.zones))
		if int32(i) < added%int32(len(g.zones)) {
			n++
		}
		if n > 0 {
			out = append(out, plan.Reservation{Zone: z, InstanceType: "m5.large", Count: n, Token: token + "-" + z})
		}
	}
	return out, nil
}

func (g *reservingGroup) Reserve(_ context.Context, r plan.Reservation) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, "Reserve "+r.Zone)
	if r.Zone == g.noCapacity {
		return "", errors.New(`cannot reserve 1 m5.large in zone "` + r.Zone + `" for the scale-up (--reserve-surge): InsufficientInstanceCapacity: Insufficient capacity`)
	}
	if id, ok := g.byToken[r.Token]; ok && g.active[id] {
		return id, nil
	}
	id := fmt.Sprintf("cr-%d", len(g.byToken)+1)
	g.byToken[r.Token], g.active[id] = id, true
	return id, nil
}

func (g *reservingGroup) Release(_ context.Context, r plan.Reservation) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, "Release "+r.Zone)
	id := r.ID
	if id == "" {
		id = g.byToken[r.Token]
	}
	delete(g.active, id)
	return nil
}

func (g *reservingGroup) held() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.active)
}

// TestReserveSurge: with --reserve-surge the eks run reserves its
// scale-up before it changes the group, releases it once the new nodes
// are Ready; a zone without the capacity refuses the run before anything
// changes; a run killed after it recorded a reservation, before it
// recorded its ID, finds it again and reserves nothing twice; the surge
// strategy reserves each batch's surge before it raises the group and
// releases it once the batch's new node is Ready, before the next.
func TestReserveSurge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		surge      bool // --strategy surge --max-surge 1, else eks
		wantMade   int  // reservations made, 2 unless set
		noCapacity string
		// recorded is what an interrupted run left in the record.
		recorded []plan.Reservation
		made     map[string]string
		wantErr  string
		want     []string // the calls, Sizes left out
	}{
		{name: "reserved, then released once the new nodes are Ready",
			want: []string{"PlanReservations 4", "Reserve z1", "Reserve z2", "Setup", "SetDesiredAndMax 7 8", "Release z1", "Release z2"}},
		{name: "a zone without the capacity: nothing changes", noCapacity: "z2", wantErr: "InsufficientInstanceCapacity",
			want: []string{"PlanReservations 4", "Reserve z1", "Reserve z2", "Release z1", "Release z2"}},
		{name: "killed before the ID was recorded: found by its token",
			recorded: []plan.Reservation{{Zone: "z1", InstanceType: "m5.large", Count: 2, Token: "t-z1", ID: "cr-1"}, {Zone: "z2", InstanceType: "m5.large", Count: 2, Token: "t-z2"}},
			made:     map[string]string{"t-z1": "cr-1", "t-z2": "cr-2"},
			want:     []string{"Reserve z2", "Setup", "SetDesiredAndMax 7 8", "Release z1", "Release z2"}},
		{name: "surge: each batch reserved before its raise, released before the next", surge: true,
			want: []string{"PlanReservations 1", "Reserve z1", "Setup", "SetDesiredAndMax 4 5", "Release z1",
				"PlanReservations 1", "Reserve z1", "SetDesiredAndMax 4 5", "Release z1",
				"PlanReservations 1", "Reserve z1", "SetDesiredAndMax 4 5", "Release z1"}, wantMade: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, group := cloudCluster(plan.Sizes{Min: 1, Desired: 3, Max: 4}, threeOldNodes()...)
			g := &reservingGroup{fakeGroup: group, noCapacity: tc.noCapacity, byToken: map[string]string{}, active: map[string]bool{}}
			for tok, id := range tc.made {
				g.byToken[tok], g.active[id] = id, true
			}
			in := plan.Input{Strategy: "eks", MaxUnavailable: "2", Cloud: group.cloudGroup()}
			if tc.surge {
				in = plan.Input{Strategy: "surge", MaxSurge: 1, MaxUnavailable: "0", Cloud: group.cloudGroup()}
			}
			p := buildPlan(t, client, in)
			cfg := cloudRun(p, client, g)
			cfg.Drain = drainOpts()
			cfg.Record.StartedAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			if tc.recorded != nil {
				cfg.Record.Cloud = &state.CloudRecord{ScaleRecord: state.ScaleRecord{Reservations: slices.Clone(tc.recorded)}}
			}
			got := runEngine(t, cfg, nil, group)
			if tc.wantErr == "" && got.err != nil || tc.wantErr != "" && (got.err == nil || !strings.Contains(got.err.Error(), tc.wantErr) || !strings.Contains(got.err.Error(), "the group was not raised")) {
				t.Fatalf("run: %v, want %q\n%s", got.err, tc.wantErr, got.out)
			}
			calls := slices.DeleteFunc(group.callsNow(), func(c string) bool {
				return !strings.HasPrefix(c, "Reserve") && !strings.HasPrefix(c, "Release") && !strings.HasPrefix(c, "Plan") && c != "Setup" && !strings.HasPrefix(c, "SetDesiredAndMax")
			})
			if !slices.Equal(calls, tc.want) {
				t.Errorf("calls %q, want %q", calls, tc.want)
			}
			if n := g.held(); n != 0 {
				t.Errorf("%d reservations left held", n)
			}
			for _, r := range cfg.Record.Cloud.Reservations {
				if !r.Released || (tc.wantErr == "" && r.ID == "") {
					t.Errorf("recorded reservation %+v: want made and released", r)
				}
			}
			if made := cmp.Or(tc.wantMade, 2); tc.wantErr == "" && len(g.byToken) != made {
				t.Errorf("%d reservations made, want %d", len(g.byToken), made)
			}
		})
	}
}
