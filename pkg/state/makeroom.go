package state

import (
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/makeroom"
)

// Surge is one workload --make-room scales up around a batch's drain:
// the values before (makeroom.Surge: spec.replicas, the HPA's bounds) and
// the extra replicas, written before the change is made, so that a run or
// abort after a kill puts back exactly what was there.
type Surge struct {
	makeroom.Surge
	// Batch is the 1-based batch the surge is for.
	Batch int        `json:"batch"`
	State SurgeState `json:"state"`
	// SurgedAt is when the change was made, ReadyAt when the extra
	// replicas were Ready, RestoredAt when the values before were back.
	SurgedAt   *time.Time `json:"surgedAt,omitempty"`
	ReadyAt    *time.Time `json:"readyAt,omitempty"`
	RestoredAt *time.Time `json:"restoredAt,omitempty"`
	// MinReady is the fewest Ready replicas seen while the surge was up
	// (sampled); -1 when none was seen.
	MinReady int `json:"minReady"`
	// Note says what the restore found (someone else scaled it meanwhile).
	Note string `json:"note,omitempty"`
}

// SurgeState is where a surge is.
type SurgeState string

const (
	// SurgeIntended: recorded, the change may or may not have been made.
	SurgeIntended SurgeState = "Intended"
	// SurgeUp: the workload runs the extra replicas (or is getting them).
	SurgeUp SurgeState = "Surged"
	// SurgeRestored: the values before are back.
	SurgeRestored SurgeState = "Restored"
)

// Surged are the record's surges not restored yet.
func (r *Record) Surged() []*Surge {
	var out []*Surge
	for i := range r.MakeRoom {
		if r.MakeRoom[i].State != SurgeRestored {
			out = append(out, &r.MakeRoom[i])
		}
	}
	return out
}
