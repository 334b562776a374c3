package upgrade

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// The capacity of the scale-ups, reserved before each (--reserve-surge,
// cloud.SurgeReserver): planned and recorded before the cloud is asked,
// each reservation's ID recorded once made, released once the new nodes
// are Ready, at the run's end and by abort.

// reserver is the provider where the run reserves its scale-ups.
func (cg *cloudGroup) reserver() cloud.SurgeReserver {
	if r, ok := cg.cfg.Provider.(cloud.SurgeReserver); ok && r.ReservesSurge() {
		return r
	}
	return nil
}

// reserveSurge reserves what a raise to the recorded sizes plus by
// launches, unless reservations the run holds already serve it (an
// interrupted run's are made sure of, never planned twice). A zone
// without the capacity fails it, with those made cancelled: the raise is
// not made.
func (cg *cloudGroup) reserveSurge(ctx context.Context, by int32) error {
	rs := cg.reserver()
	if rs == nil || by <= 0 {
		return nil
	}
	sr := &cg.cloudRecord().ScaleRecord
	if !slices.ContainsFunc(sr.Reservations, held) {
		added, err := cg.toRaise(ctx, by)
		if err != nil || added <= 0 {
			return err
		}
		planned, err := rs.PlanReservations(ctx, added, cg.reserveToken(len(sr.Reservations)))
		if err != nil {
			return err
		}
		sr.Reservations = append(sr.Reservations, planned...)
		if err := cg.save(ctx); err != nil {
			return err
		}
	}
	for i := range sr.Reservations {
		r := &sr.Reservations[i]
		if !held(*r) || r.ID != "" {
			continue
		}
		id, err := rs.Reserve(ctx, *r)
		if err != nil {
			return cg.unreserve(ctx, err)
		}
		r.ID = id
		cg.logf("reserved %d %s in zone %q for the scale-up (capacity reservation %s)", r.Count, r.InstanceType, r.Zone, id)
		if err := cg.save(ctx); err != nil {
			return err
		}
	}
	return nil
}

func held(r plan.Reservation) bool { return !r.Released }

// toRaise is how many machines a raise to the recorded sizes (the
// group's now, before the run recorded them) plus by adds.
func (cg *cloudGroup) toRaise(ctx context.Context, by int32) (int32, error) {
	sizes, err := cg.pool.Sizes(ctx)
	if err != nil {
		return 0, err
	}
	base := sizes.Desired
	if o := cg.cloudRecord().Original; o != nil {
		base = o.Desired
	}
	return base + by - sizes.Desired, nil
}

// reserveToken names the run's nth set of reservations to the cloud:
// the group and the run's start, so that no other run's is taken for it.
func (cg *cloudGroup) reserveToken(n int) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(cg.pool.GroupName()))
	return fmt.Sprintf("nodeupgrade-%08x-%d-%d", h.Sum32(), cg.cfg.Record.StartedAt.Unix(), n)
}

// unreserve cancels what a failed reservation left made and says so.
func (cg *cloudGroup) unreserve(ctx context.Context, cause error) error {
	if err := cg.releaseSurge(ctx); err != nil {
		return fmt.Errorf("%w; and %w", cause, err)
	}
	return fmt.Errorf("%w; the reservations made are cancelled and the group was not raised: run again once EC2 has the capacity, or leave out --reserve-surge", cause)
}

// releaseSurge cancels the reservations the run holds, each recorded
// released; those never made are found by their token, or are none.
func (cg *cloudGroup) releaseSurge(ctx context.Context) error {
	cr := cg.cfg.Record.Cloud
	rs, ok := cg.cfg.Provider.(cloud.SurgeReserver)
	if cr == nil || !ok {
		return nil
	}
	for i := range cr.Reservations {
		r := &cr.Reservations[i]
		if !held(*r) {
			continue
		}
		if err := rs.Release(ctx, *r); err != nil {
			return err
		}
		r.Released = true
		if r.ID != "" {
			cg.logf("released capacity reservation %s (%d %s in zone %q)", r.ID, r.Count, r.InstanceType, r.Zone)
		}
		if err := cg.save(ctx); err != nil {
			return err
		}
	}
	return nil
}
