package session

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// recordSubmitted records group's run as handed to Job job, keeping the
// record as it was to put back should no pod take the run.
func (s *Session) recordSubmitted(ctx context.Context, pl *Planned, job string) error {
	store, group := s.store(), pl.Request.RecordName()
	earlier, err := store.Load(ctx, group)
	if err != nil {
		return err
	}
	rec := nextRecord(earlier, group, time.Now().UTC().Truncate(time.Second))
	if earlier != nil && earlier.FinishedAt == nil {
		copied := *earlier
		rec = &copied
	}
	rec.Strategy = pl.Strategy
	recordRequest(rec, pl)
	rec.State = state.StateSubmitted
	rec.Submission = &state.Submission{Job: job, At: time.Now().UTC().Truncate(time.Second), Earlier: earlier}
	return store.Save(ctx, rec)
}

// Unsubmit puts group's record back as it was before its run was handed
// to Job job, when no pod took the run: the Job ended first, could not
// start, or was withdrawn. It reports whether it did; a record that is
// no longer that submission (a pod took the run) is left alone.
func (s *Session) Unsubmit(ctx context.Context, group, job string) (bool, error) {
	store := s.store()
	rec, err := store.Load(ctx, group)
	if err != nil || rec == nil || rec.State != state.StateSubmitted || rec.Submission == nil || rec.Submission.Job != job {
		return false, err
	}
	if earlier := rec.Submission.Earlier; earlier != nil {
		return true, store.Save(ctx, earlier)
	}
	return true, store.Delete(ctx, group)
}

// Withdraw takes back the Job of group's submitted run whose pod has not
// started it (cancel): under the group's lock, so the pod cannot start
// the run meanwhile, the Job and its pods are deleted and the record is
// put back as it was before the submission. It returns that record (nil:
// none).
func (s *Session) Withdraw(ctx context.Context, group string) (*state.Record, error) {
	ctx, _, release, err := s.HoldLock(ctx, group)
	if err != nil {
		return nil, err
	}
	defer release()
	rec, err := s.store().Load(ctx, group)
	if err != nil || rec == nil || rec.State != state.StateSubmitted || rec.Submission == nil {
		return rec, err
	}
	if err := s.deleteSubmittedJob(ctx, group); err != nil {
		return nil, err
	}
	if _, err := s.Unsubmit(ctx, group, rec.Submission.Job); err != nil {
		return nil, err
	}
	return rec.Submission.Earlier, nil
}

// deleteSubmittedJob deletes the Job of group's submitted run, with its
// pods and plan, and says so; the caller holds the group's lock.
func (s *Session) deleteSubmittedJob(ctx context.Context, group string) error {
	ns, name := s.StateNamespace, JobName(group)
	err := s.Client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
	switch {
	case apierrors.IsNotFound(err):
		fmt.Fprintf(s.Out, "Job %s/%s of the submitted run is gone already\n", ns, name)
		return nil
	case err != nil:
		return fmt.Errorf("error when deleting Job %s/%s of the submitted run: %w", ns, name, err)
	}
	fmt.Fprintf(s.Out, "deleted Job %s/%s, whose pod had not started the run\n", ns, name)
	return nil
}
