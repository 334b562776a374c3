package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// Record is the fleet's own decisions, kept in the coordinator context:
// what no target's record can say. Each target's record stays the truth
// for that target.
type Record struct {
	Name string `json:"name"`
	// Hash is the plan's hash the fleet started with.
	Hash string `json:"hash"`
	// Started is when this record was made: a target's record stamped
	// with the fleet's name and hash but older is an earlier start's
	// (before a "fleet abort").
	Started *time.Time    `json:"started,omitempty"`
	Stages  []StageRecord `json:"stages"`
}

// StageRecord is what the fleet decided about one stage.
type StageRecord struct {
	Name string `json:"name"`
	// Hash is the stage's content when the fleet started.
	Hash    string     `json:"hash"`
	Entered *time.Time `json:"entered,omitempty"`
	// TargetsDone is when every target of the stage finished.
	TargetsDone *time.Time `json:"targetsDone,omitempty"`
	SoakFrom    *time.Time `json:"soakFrom,omitempty"`
	// Verdicts are the after-stage gates' last evaluation.
	Verdicts    []gate.Verdict `json:"verdicts,omitempty"`
	GatesPassed *time.Time     `json:"gatesPassed,omitempty"`
	Approved    *time.Time     `json:"approved,omitempty"`
	ApprovedBy  string         `json:"approvedBy,omitempty"`
	// Skipped are the targets (Target.ID) the fleet found already at
	// their target when their turn came: their own record, if any, is an
	// earlier run's, so only the fleet can say so.
	Skipped []string `json:"skipped,omitempty"`
}

// Stage is the record of the stage named name, or nil.
func (r *Record) Stage(name string) *StageRecord {
	for i := range r.Stages {
		if r.Stages[i].Name == name {
			return &r.Stages[i]
		}
	}
	return nil
}

// MarkSkipped sets the status of the rows of targets the record says the
// fleet skipped, where the target's own record has nothing newer to say
// (no run, or an earlier run that finished).
func (r *Record) MarkSkipped(rows []Row) {
	if r == nil {
		return
	}
	for i, row := range rows {
		sr := r.Stage(row.Stage)
		if sr != nil && slices.Contains(sr.Skipped, row.Cluster+"/"+row.Group) && !row.Alive && (row.Status == StatusNotStarted || row.Status == string(state.StateFinished)) {
			rows[i].Status = StatusSkipped
		}
	}
}

// NewRecord is the record of a fleet that has not started.
func NewRecord(f *Fleet) *Record {
	r := &Record{Name: f.Name, Hash: f.Hash}
	for _, s := range f.Stages {
		r.Stages = append(r.Stages, StageRecord{Name: s.Name, Hash: s.Hash})
	}
	return r
}

// Changed says what of f differs from the fleet the record started, ""
// when nothing does.
func (r *Record) Changed(f *Fleet) string {
	if r.Hash == f.Hash {
		return ""
	}
	if len(r.Stages) != len(f.Stages) {
		return fmt.Sprintf("the stages: %d in flight, %d in the file", len(r.Stages), len(f.Stages))
	}
	for i, s := range f.Stages {
		if r.Stages[i].Name != s.Name {
			return fmt.Sprintf("stage %d: %q in flight, %q in the file", i+1, r.Stages[i].Name, s.Name)
		}
		if r.Stages[i].Hash != s.Hash {
			return fmt.Sprintf("stage %q (its targets, limits, run flags or afterStage)", s.Name)
		}
	}
	return "the plan"
}

// Store keeps the record in a ConfigMap of the coordinator context.
type Store struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string // the fleet's name
}

const recordKey = "fleet.json"

// ObjectName is the ConfigMap holding fleet name's record.
func ObjectName(name string) string { return "nodeupgrade-fleet-" + name }

// Load returns the record, or nil when the fleet has none.
func (s *Store) Load(ctx context.Context) (*Record, error) {
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, ObjectName(s.Name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the fleet's record %s/%s: %w", s.Namespace, ObjectName(s.Name), err)
	}
	var r Record
	if err := json.Unmarshal([]byte(cm.Data[recordKey]), &r); err != nil {
		return nil, fmt.Errorf("cannot decode the fleet's record %s/%s: %w", s.Namespace, ObjectName(s.Name), err)
	}
	return &r, nil
}

// Create writes a new record; an existing one is an error.
func (s *Store) Create(ctx context.Context, r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ObjectName(s.Name), Namespace: s.Namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "kubectl-nodeupgrade"}},
		Data: map[string]string{recordKey: string(b)},
	}
	_, err = s.Client.CoreV1().ConfigMaps(s.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	return err
}

// Update applies change to the stored record, retrying on conflict: the
// coordinator and "fleet approve" write it from different processes.
func (s *Store) Update(ctx context.Context, change func(*Record) error) (*Record, error) {
	var out *Record
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cms := s.Client.CoreV1().ConfigMaps(s.Namespace)
		cm, err := cms.Get(ctx, ObjectName(s.Name), metav1.GetOptions{})
		if err != nil {
			return err
		}
		var r Record
		if err := json.Unmarshal([]byte(cm.Data[recordKey]), &r); err != nil {
			return err
		}
		if err := change(&r); err != nil {
			return err
		}
		b, err := json.Marshal(&r)
		if err != nil {
			return err
		}
		cm.Data[recordKey] = string(b)
		if _, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err == nil {
			out = &r
		}
		return err
	})
	if err == nil && out == nil {
		// RetryOnConflict answers nil for an error that wraps a context's
		// end (wait.Interrupted): the record was not written.
		err = fmt.Errorf("cannot update the fleet's record %s/%s: %w", s.Namespace, ObjectName(s.Name), context.Cause(ctx))
	}
	return out, err
}

// Delete removes the record and the coordinators' lease: the fleet may
// start again, with any plan. A record already gone is not an error.
func (s *Store) Delete(ctx context.Context) error {
	err := s.Client.CoreV1().ConfigMaps(s.Namespace).Delete(ctx, ObjectName(s.Name), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cannot delete the fleet's record %s/%s: %w", s.Namespace, ObjectName(s.Name), err)
	}
	err = s.Client.CoordinationV1().Leases(s.Namespace).Delete(ctx, state.ObjectName(s.lease("").Group), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cannot delete the lease of fleet %q: %w", s.Name, err)
	}
	return nil
}
