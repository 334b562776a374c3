package session

import (
	"context"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// recordSubmitted records group's run as handed to Job job, keeping the
// record as it was to put back should no pod take the run.
func (s Jobs) recordSubmitted(ctx context.Context, pl *Planned, job string) error {
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
	if rec.NodesTotal == 0 {
		// What is left until the pod plans again: the submitter's plan.
		rec.NodesTotal, rec.Batches = pl.Nodes.Outdated, len(pl.Batches)
	}
	rec.State = state.StateSubmitted
	rec.Submission = &state.Submission{Job: job, At: time.Now().UTC().Truncate(time.Second), Earlier: earlier}
	return store.Save(ctx, rec)
}

// Unsubmit puts group's record back as it was before its run was handed
// to Job job, when no pod took the run: the Job ended first, could not
// start, or was withdrawn. It reports whether it did; a record that is
// no longer that submission (a pod took the run) is left alone.
func (s Jobs) Unsubmit(ctx context.Context, group, job string) (bool, error) {
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
func (s Jobs) Withdraw(ctx context.Context, group string) (*state.Record, error) {
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
func (s Jobs) deleteSubmittedJob(ctx context.Context, group string) error {
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

// JobPod is where a submitted run's Job stands: its pod, and why that pod
// has not started the run yet (Unschedulable, ImagePullBackOff …), in the
// words of the pod's own status.
type JobPod struct {
	Job     string `json:"job"`
	Pod     string `json:"pod,omitempty"`
	Phase   string `json:"phase,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

func (p JobPod) String() string {
	if p.Pod == "" && p.Message != "" {
		return fmt.Sprintf("Job %s (%s)", p.Job, p.Message)
	}
	if p.Pod == "" {
		return fmt.Sprintf("Job %s has no pod yet (see \"kubectl describe job\")", p.Job)
	}
	line := fmt.Sprintf("Job %s, pod %s %s", p.Job, p.Pod, p.Phase)
	if p.Reason != "" {
		line += ": " + p.Reason
	}
	if p.Message != "" {
		line += ": " + p.Message
	}
	return line
}

// SubmittedPod is the pod of the Job rec's submitted run was handed to,
// the newest where the Job made several; nil for a run not submitted.
func (s Jobs) SubmittedPod(ctx context.Context, rec *state.Record) *JobPod {
	if rec.State != state.StateSubmitted || rec.Submission == nil {
		return nil
	}
	ns, job := s.StateNamespace, rec.Submission.Job
	jp := &JobPod{Job: ns + "/" + job}
	// The Job controller labels its pods with the Job's name
	// (batch.kubernetes.io/job-name, Kubernetes 1.27+).
	pods, err := s.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil {
		// status goes on without them: the rights to read records need
		// not include the pods of the state namespace.
		jp.Message = fmt.Sprintf("error when listing its pods: %v", err)
		return jp
	}
	var newest *corev1.Pod
	for i := range pods.Items {
		if p := &pods.Items[i]; newest == nil || newest.CreationTimestamp.Before(&p.CreationTimestamp) {
			newest = p
		}
	}
	if newest != nil {
		jp.Pod, jp.Phase = newest.Name, string(newest.Status.Phase)
		jp.Reason, jp.Message = whyNotRunning(newest)
	}
	return jp
}

// whyNotRunning is what holds a pod back: not scheduled, or a container
// waiting (its image not pulled, its config missing …).
func whyNotRunning(p *corev1.Pod) (reason, message string) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Reason, c.Message
		}
	}
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" {
			return w.Reason, w.Message
		}
	}
	return "", ""
}
