package session

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// Withdraw takes back the Job of group's submitted run whose pod has not
// started it (cancel): under the group's lock, so the pod cannot start
// the run meanwhile, the Job and its pods are deleted and the run is
// recorded paused before its first phase; resume starts it.
func (s *Session) Withdraw(ctx context.Context, group string) error {
	ctx, _, release, err := s.HoldLock(ctx, group)
	if err != nil {
		return err
	}
	defer release()
	rec, err := s.Store().Load(ctx, group)
	if err != nil || rec == nil || rec.State != state.StateSubmitted {
		return err
	}
	if err := s.deleteSubmittedJob(ctx, group); err != nil {
		return err
	}
	rec.State = state.StatePaused
	if err := s.Requests(group).Send(ctx, state.RequestCancel); err != nil {
		return err
	}
	return s.Store().Save(ctx, rec)
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
