package state

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// ControlAsk is a control an operator's command asked of a run (cancel,
// complete, rollback, resume), recorded before the command acts: a
// command killed, a call that failed or a live run that has not read the
// request yet leave the record saying what was asked, by whom and when.
type ControlAsk struct {
	Control string `json:"control"`
	// By is the asking command's process (HolderIdentity).
	By string    `json:"by"`
	At time.Time `json:"at"`
	// Update is the service's update the control acts on, where the
	// cloud's service runs it (EKS managed node groups, GKE node pools).
	Update string `json:"update,omitempty"`
	// Answered says the act was done: the request left for the live run,
	// the service's answer recorded, or the run under way again.
	Answered bool `json:"answered,omitempty"`
}

// NewAsk is control asked now by this process.
func NewAsk(control, update string) ControlAsk {
	return ControlAsk{Control: control, By: HolderIdentity(), At: time.Now().UTC(), Update: update}
}

// after reports whether a was asked after b, or is b answered since.
func (a *ControlAsk) after(b *ControlAsk) bool {
	if b == nil {
		return true
	}
	return a.At.After(b.At) || a.At.Equal(b.At) && a.Answered && !b.Answered
}

// Ask records ask in group's stored record, read afresh and written back
// with its resourceVersion (again on a conflict), so nothing a live run
// wrote meanwhile is lost; the run's own next Save keeps ask (keepAsked).
// It returns the record as stored.
func (s *Store) Ask(ctx context.Context, group string, ask ControlAsk) (*Record, error) {
	var rec *Record
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, ObjectName(group), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if rec, err = decode(cm); err != nil {
			return err
		}
		rec.Asked = &ask
		data, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return s.updateData(ctx, cm, data)
	})
	if err != nil {
		return nil, fmt.Errorf("error when recording %s in the record of %q: %w", ask.Control, group, err)
	}
	return rec, nil
}

// keepAsked carries into r the control a command recorded (Ask) in base,
// the stored record r replaces, when it is of the same run and newer than
// r's: a live run's writes, from its copy of the record, must not drop
// what was asked of it.
func keepAsked(r *Record, base *corev1.ConfigMap) {
	if base == nil {
		return
	}
	var stored struct {
		StartedAt time.Time   `json:"startedAt"`
		Asked     *ControlAsk `json:"asked"`
	}
	if json.Unmarshal([]byte(base.Data[recordKey]), &stored) != nil || stored.Asked == nil || !stored.StartedAt.Equal(r.StartedAt) {
		return
	}
	if stored.Asked.after(r.Asked) {
		r.Asked = stored.Asked
	}
}
