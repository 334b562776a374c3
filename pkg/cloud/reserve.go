package cloud

import (
	"context"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// SurgeReserver is a Scaler whose cloud reserves the capacity of a
// scale-up before it is made (aws: On-Demand Capacity Reservations,
// --reserve-surge): a cloud without the capacity refuses the reservation
// before the run changes anything, and the scale-up's launches use it.
type SurgeReserver interface {
	Scaler
	// ReservesSurge says the user asked for reservations.
	ReservesSurge() bool
	// PlanReservations are the reservations a raise of the group by
	// added machines needs (one per zone and type, where the cloud
	// launches them), each named after token; it changes nothing.
	PlanReservations(ctx context.Context, added int32, token string) ([]plan.Reservation, error)
	// Reserve makes a planned reservation, or finds the one made with its
	// token, and returns its ID.
	Reserve(ctx context.Context, r plan.Reservation) (id string, err error)
	// Release cancels a reservation (found by its token where ID is
	// empty); one gone, or never made, is released.
	Release(ctx context.Context, r plan.Reservation) error
}
