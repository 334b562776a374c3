package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// InCluster is how run --in-cluster hands a reviewed plan to a Job.
type InCluster struct {
	// Image is the plugin's image the Job runs.
	Image string
	// ServiceAccount is the Job's, in the state namespace
	// (deploy/in-cluster.yaml).
	ServiceAccount string
	// NodeSelector keeps the Job's pods on the nodes it selects (a system
	// node pool), on top of never on the group's; nil: any other node.
	NodeSelector map[string]string
}

// The Job's parts.
const (
	// ContainerName is the Job's one container.
	ContainerName = "nodeupgrade"
	// PlanKey is the saved plan's key in its ConfigMap, and its file name.
	PlanKey = "plan.json"
	// PlanDir is where the Job's pod mounts its plan.
	PlanDir = "/var/run/nodeupgrade/plan"
	// PodPlanFile is the plan file of the Job's pod, which its record
	// keeps; resume from elsewhere plans the recorded request again.
	PodPlanFile = PlanDir + "/" + PlanKey
	// ImagePath is the plugin in the image (hack/image.sh).
	ImagePath = "/kubectl-nodeupgrade"
	// JobFlag names, in the Job's command line, the Job the process is a
	// pod of: it waits out the lock of the Job's earlier pods and checks
	// its rights before it starts.
	JobFlag = "in-cluster-job"
	// RollbackFlag, in the Job's command line, makes its run the rollback
	// of the recorded run (the rollback command's), not a run forward.
	RollbackFlag = "in-cluster-rollback"
	// DefaultServiceAccount is deploy/in-cluster.yaml's.
	DefaultServiceAccount = "kubectl-nodeupgrade"
	// jobBackoffLimit counts the pods that failed on their own (killed,
	// out of memory, the API server away): each next one resumes the run.
	// Pods taken away (evicted, node gone) do not count.
	jobBackoffLimit = 20
)

// finalExitCodes are the plugin's exit codes a new pod would only repeat:
// bad input or rights (2), a drain or new nodes that timed out (3, 7), a
// plan refused (5), another run's lock (6), a stop on purpose (8: cancel,
// --no-wait), a hook (10). The Job fails at once on them; other failures
// (4: interrupted, API errors; 9, 11: the API server or a cloud's API
// unreachable) start a new pod, which resumes. Kept in step with the plugin's exit codes by its tests.
var finalExitCodes = []int32{2, 3, 5, 6, 7, 8, 10}

// JobName is the name of the Job (and its plan's ConfigMap is this plus
// "-plan") of group's in-cluster run in the state namespace: one at a
// time per group, as its lock.
func JobName(group string) string { return state.ObjectName(group) }

func planConfigMapName(group string) string { return JobName(group) + "-plan" }

// JobOfHolder reports whether a lock's holder ("host/pid") is a pod of
// group's Job (named after it, and its hostname is its name); pod names
// the pod.
func JobOfHolder(group, holder string) (pod string, ok bool) {
	host, _, _ := strings.Cut(holder, "/")
	return host, strings.HasPrefix(host, JobName(group)+"-")
}

// BuildJob is the Job that runs pl as r asks, in namespace ns.
func BuildJob(pl *Planned, r *Request, ic InCluster, ns string) (*batchv1.Job, error) {
	return buildJob(pl.Plan, r.RecordName(), WorkerArgs(r, pl.Strategy, JobName(r.RecordName()), ns), ic, ns, true)
}

// buildJob is the Job of group's in-cluster work on plan p in namespace
// ns, its pod running the plugin with args; withPlan mounts the plan's
// ConfigMap.
func buildJob(p *plan.Plan, group string, args []string, ic InCluster, ns string, withPlan bool) (*batchv1.Job, error) {
	taint, err := plan.ParseTaint(p.Taint)
	if err != nil {
		return nil, err
	}
	affinity, err := notOnGroup(p)
	if err != nil {
		return nil, err
	}
	job := WorkerJob(JobName(group), ns, args, ic)
	job.Annotations = map[string]string{state.GroupAnnotation: group}
	job.Spec.Template.Annotations = job.Annotations
	pod := &job.Spec.Template.Spec
	pod.Affinity = affinity
	// Its own taint: never on the group's nodes, but a custom --taint
	// may be put on others.
	pod.Tolerations = []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: taint.Value, Effect: taint.Effect}}
	if withPlan {
		pod.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "plan", MountPath: PlanDir, ReadOnly: true}}
		pod.Volumes = []corev1.Volume{{Name: "plan", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: planConfigMapName(group)},
		}}}}
	}
	return job, nil
}

// WorkerJob is a Job named name in ns whose one pod runs the plugin with
// args as ic says: the identity, security, resources and failure policy
// of every in-cluster Job (a group's run, a fleet's coordinator).
func WorkerJob(name, ns string, args []string, ic InCluster) *batchv1.Job {
	meta := metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{state.ManagedByLabel: "kubectl-nodeupgrade"}}
	pod := corev1.PodSpec{
		ServiceAccountName: ic.ServiceAccount,
		RestartPolicy:      corev1.RestartPolicyNever,
		NodeSelector:       ic.NodeSelector,
		// Time for a run stopped by SIGTERM to record where it stopped
		// and give its lock up.
		TerminationGracePeriodSeconds: ptr.To[int64](60),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532),
			// The workload identities' token files readable by that user.
			FSGroup:        ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{workerContainer(args, ic.Image)},
	}
	return &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{
		// No activeDeadlineSeconds: a run takes as long as its
		// PodDisruptionBudgets let it.
		BackoffLimit:     ptr.To[int32](jobBackoffLimit),
		PodFailurePolicy: podFailurePolicy(),
		Template:         corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: meta.Labels}, Spec: pod},
	}}
}

// workerContainer runs the plugin with args as the Job's pod, non-root
// on a read-only root.
func workerContainer(args []string, image string) corev1.Container {
	return corev1.Container{
		Name: ContainerName, Image: image,
		Command: []string{ImagePath},
		Args:    args,
		// The run's last lines are the pod's message when it fails.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("256Mi"),
		}},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
}

// podFailurePolicy ends the Job on an exit that another pod would repeat
// (bad input, refused, failed for good) and does not count pods taken
// away (evicted, their node gone) against its backoff.
func podFailurePolicy() *batchv1.PodFailurePolicy {
	return &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			ContainerName: ptr.To(ContainerName), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: finalExitCodes,
		}},
		{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
			{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue},
		}},
	}}
}

// notOnGroup keeps the Job's pods off the nodes of the group it upgrades
// and off a blue/green run's green nodes, which a rollback drains: for
// each, the nodes one of its requirements does not select (NotIn the
// node-group label's value, or each requirement of a selector negated).
// Terms are ORed and the expressions of a term ANDed: one term for each
// way of being off all of them.
func notOnGroup(p *plan.Plan) (*corev1.Affinity, error) {
	group, err := offSelector(p.Selector)
	if err != nil {
		return nil, err
	}
	if p.Selector == "" {
		group = []corev1.NodeSelectorRequirement{{Key: p.NodeGroupLabel, Operator: corev1.NodeSelectorOpNotIn, Values: []string{p.NodeGroup}}}
	}
	offs := [][]corev1.NodeSelectorRequirement{group}
	if bg := p.BlueGreen; bg != nil && bg.GreenSelector != "" {
		green, err := offSelector(bg.GreenSelector)
		if err != nil {
			return nil, err
		}
		offs = append(offs, green)
	} else if bg != nil && bg.GreenLabel != "" && bg.Green != "" {
		offs = append(offs, []corev1.NodeSelectorRequirement{{Key: bg.GreenLabel, Operator: corev1.NodeSelectorOpNotIn, Values: []string{bg.Green}}})
	}
	terms := []corev1.NodeSelectorTerm{{}}
	for _, off := range offs {
		var next []corev1.NodeSelectorTerm
		for _, t := range terms {
			for _, req := range off {
				next = append(next, corev1.NodeSelectorTerm{MatchExpressions: append(slices.Clone(t.MatchExpressions), req)})
			}
		}
		terms = next
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
	}}, nil
}

// offSelector is, for each requirement of selector, the node selector
// requirement of the nodes it does not select; none for "".
func offSelector(selector string) ([]corev1.NodeSelectorRequirement, error) {
	if selector == "" {
		return nil, nil
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, err
	}
	reqs, _ := sel.Requirements()
	var out []corev1.NodeSelectorRequirement
	for _, req := range reqs {
		term, err := negated(req)
		if err != nil {
			return nil, err
		}
		out = append(out, term)
	}
	return out, nil
}

// negated is the node selector requirement of the nodes req does not
// select.
func negated(req labels.Requirement) (corev1.NodeSelectorRequirement, error) {
	out := corev1.NodeSelectorRequirement{Key: req.Key(), Values: req.ValuesUnsorted()}
	slices.Sort(out.Values)
	switch req.Operator() {
	case selection.In, selection.Equals, selection.DoubleEquals:
		out.Operator = corev1.NodeSelectorOpNotIn
	case selection.NotIn, selection.NotEquals:
		out.Operator = corev1.NodeSelectorOpIn
	case selection.Exists:
		out.Operator, out.Values = corev1.NodeSelectorOpDoesNotExist, nil
	case selection.DoesNotExist:
		out.Operator, out.Values = corev1.NodeSelectorOpExists, nil
	default:
		return out, Usagef("cannot keep the in-cluster run off the group's nodes: selector %q uses %q; use NODEGROUP or a selector of =, !=, in, notin and exists", req.String(), req.Operator())
	}
	return out, nil
}

// WorkerArgs is the command line of the Job's pod: run the saved plan,
// with the run's own settings as r resolved them (the plan carries the
// planning ones); a setting only some strategies take (--max-age,
// --no-wait) only where strategy takes it, as a run refuses it otherwise.
func WorkerArgs(r *Request, strategy, job, ns string) []string {
	var takes []string
	if s, err := plan.LookupStrategy(strategy); err == nil {
		takes = s.Flags()
	}
	owned := func(flag string) bool {
		return !slices.Contains([]string{"max-age", "no-wait"}, flag) || slices.Contains(takes, flag)
	}
	args := []string{"run", "--plan-file=" + PodPlanFile, "--yes", "--" + JobFlag + "=" + job, "--state-namespace=" + ns}
	if r.Rollback {
		args = append(args, "--"+RollbackFlag)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"drain-timeout", r.DrainTimeout}, {"post-drain-wait", r.PostDrainWait}, {"node-ready-timeout", r.NodeReadyTimeout},
		{"terminate-timeout", r.TerminateTimeout}, {"deregistration-timeout", r.DeregistrationTimeout}, {"max-age", r.MaxAge},
	} {
		if (d.v > 0 || d.flag == "post-drain-wait") && owned(d.flag) {
			args = append(args, "--"+d.flag+"="+d.v.String())
		}
	}
	for _, b := range []struct {
		flag string
		v    bool
	}{
		// --force and --delete-emptydir-data travel in the plan's
		// options (plan.OptionFlags), which --plan-file refuses again.
		{"no-wait", r.NoWait},
		{"delete-node", r.DeleteNode}, {LeaveMachinesRunningFlag, r.LeaveMachinesRunning},
	} {
		if owned(b.flag) {
			args = append(args, "--"+b.flag+"="+strconv.FormatBool(b.v))
		}
	}
	for _, c := range r.IgnoreChecks {
		args = append(args, "--ignore-check="+c)
	}
	return args
}

// Submit hands the reviewed plan to a Job in the state namespace: the Job
// created suspended, the plan saved in a ConfigMap the Job owns, then the
// Job started. A submission refused or failed leaves no Job, no plan and
// no record change; a finished Job of an earlier run is deleted first.
func (s Jobs) Submit(ctx context.Context, pl *Planned, ic InCluster) (*batchv1.Job, error) {
	r := pl.Request
	if pl.Hooks != nil && pl.Hooks.Any() {
		return nil, Usagef("cannot run in the cluster: the plan runs command hooks, and the Job's image holds only the plugin; plan again without them, or hold nodes with the annotation hooks (docs/hooks.md)")
	}
	job, err := BuildJob(pl, r, ic, s.StateNamespace)
	if err != nil {
		return nil, err
	}
	data, err := planJSON(pl.Plan)
	if err != nil {
		return nil, err
	}
	group := r.RecordName()
	if err := s.clearForJob(ctx, group, ic, false); err != nil {
		return nil, err
	}
	// Recorded before the Job starts, so its pod finds the submission.
	started, err := s.startJob(ctx, job, data, func(ctx context.Context) error { return s.recordSubmitted(ctx, pl, job.Name) })
	if err != nil {
		if _, rerr := s.Unsubmit(ctx, group, job.Name); rerr != nil {
			return nil, errors.Join(err, rerr)
		}
		return nil, err
	}
	return started, nil
}

// AbortArgs is the command line of the pod of an abort Job: abort group's
// recorded run, planned again from its record as abort from a terminal
// plans it.
func AbortArgs(req *plan.Request, job, ns string) []string {
	args := []string{"abort", req.NodeGroup}
	if req.Selector != "" {
		args = []string{"abort", "--selector=" + req.Selector}
	}
	return append(args, "--yes", "--"+JobFlag+"="+job, "--state-namespace="+ns)
}

// SubmitAbort hands the abort of rec's stopped run to a Job in the state
// namespace, whose pod puts the group back in service as abort from a
// terminal does. The Job of the stopped run, if it has not ended, is
// deleted first: abort takes its place. Refused, it leaves no Job.
func (s Jobs) SubmitAbort(ctx context.Context, rec *state.Record, ic InCluster) (*batchv1.Job, error) {
	pl, err := s.Replan(ctx, rec, "abort")
	if err != nil {
		return nil, err
	}
	group := pl.Request.RecordName()
	job, err := buildJob(pl.Plan, group, AbortArgs(&pl.Request.Request, JobName(group), s.StateNamespace), ic, s.StateNamespace, false)
	if err != nil {
		return nil, err
	}
	if err := s.clearForJob(ctx, group, ic, true); err != nil {
		return nil, err
	}
	return s.startJob(ctx, job, nil, nil)
}

func planJSON(p *plan.Plan) ([]byte, error) {
	var b bytes.Buffer
	if err := output.Print(&b, output.FormatJSON, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// clearForJob refuses what the Job would fail on (no ServiceAccount, a
// live run, a Job still running) and deletes the finished Job of an
// earlier run; supersede (abort) deletes a Job of a run that holds no
// lock even where it has not ended: the new Job takes its place.
func (s Jobs) clearForJob(ctx context.Context, group string, ic InCluster, supersede bool) error {
	ns := s.StateNamespace
	if _, err := s.Client.CoreV1().ServiceAccounts(ns).Get(ctx, ic.ServiceAccount, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return Usagef("cannot run in the cluster: no ServiceAccount %q in namespace %q; apply deploy/in-cluster.yaml (docs/in-cluster.md) or name one with --service-account", ic.ServiceAccount, ns)
	} else if err != nil {
		return fmt.Errorf("cannot run in the cluster: error when reading ServiceAccount %q: %w", ic.ServiceAccount, err)
	}
	held, err := s.Holder(ctx, group)
	if err != nil {
		return err
	}
	if held != nil {
		return held
	}
	jobs := s.Client.BatchV1().Jobs(ns)
	old, err := jobs.Get(ctx, JobName(group), metav1.GetOptions{})
	if err == nil && !JobEnded(old) && supersede {
		// A run that stopped as asked (cancel) ends its Job: who follows
		// it sees it end, not vanish.
		old, err = s.awaitJobEnd(ctx, old, jobEndWait)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("cannot run in the cluster: error when reading Job %q: %w", JobName(group), err)
	case !JobEnded(old) && !supersede:
		return Usagef("cannot run in the cluster: Job %q in namespace %q still runs the last run of %q; follow it with \"kubectl nodeupgrade status %s -w\", or stop it with \"kubectl nodeupgrade cancel %s\"", old.Name, ns, group, group, group)
	case !JobEnded(old):
		fmt.Fprintf(s.Out, "deleting Job %s/%s of the stopped run, which would start it again\n", ns, old.Name)
	}
	// Its pods and its plan go with it, before the new Job takes the names.
	if err := jobs.Delete(ctx, old.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cannot run in the cluster: error when deleting Job %q of the last run: %w", old.Name, err)
	}
	for {
		if _, err := jobs.Get(ctx, old.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// jobEndWait is how long abort gives the Job of a run that stopped to end
// on its own (its pod exited 8) before it deletes it.
var jobEndWait = 20 * time.Second

// awaitJobEnd waits up to d for job to end, and returns it as it is then.
func (s Jobs) awaitJobEnd(ctx context.Context, job *batchv1.Job, d time.Duration) (*batchv1.Job, error) {
	deadline := time.Now().Add(d)
	for !JobEnded(job) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		var err error
		if job, err = s.Client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{}); err != nil {
			return nil, err
		}
	}
	return job, nil
}

// startJob creates job suspended, its plan (data; nil: none), has record
// (nil: none) record the submission, and starts it; on a failure it
// deletes the Job, and the plan goes with it.
func (s Jobs) startJob(ctx context.Context, job *batchv1.Job, data []byte, record func(context.Context) error) (*batchv1.Job, error) {
	jobs := s.Client.BatchV1().Jobs(job.Namespace)
	job.Spec.Suspend = ptr.To(true)
	created, err := jobs.Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot run in the cluster: error when creating Job %q: %w", job.Name, err)
	}
	cmName := planConfigMapName(job.Annotations[state.GroupAnnotation])
	undo := func(err error) (*batchv1.Job, error) {
		// Even when ctx was cancelled: nothing stays behind. The plan goes
		// with its Job, but only once the garbage collector gets to it.
		ctx := context.WithoutCancel(ctx)
		derr := jobs.Delete(ctx, created.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		if cerr := s.Client.CoreV1().ConfigMaps(job.Namespace).Delete(ctx, cmName, metav1.DeleteOptions{}); !apierrors.IsNotFound(cerr) {
			derr = errors.Join(derr, cerr)
		}
		if derr != nil && !apierrors.IsNotFound(derr) {
			return nil, fmt.Errorf("%w; and deleting Job %q and ConfigMap %q failed: %v; delete them with \"kubectl -n %s delete job %s\"", err, created.Name, cmName, derr, created.Namespace, created.Name)
		}
		return nil, err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: cmName, Namespace: job.Namespace, Labels: job.Labels, Annotations: job.Annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: created.Name, UID: created.UID}},
		},
		Data: map[string]string{PlanKey: string(data)},
	}
	if data != nil {
		if _, err := s.Client.CoreV1().ConfigMaps(job.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return undo(fmt.Errorf("cannot run in the cluster: error when saving the plan in ConfigMap %q: %w", cm.Name, err))
		}
	}
	if record != nil {
		if err := record(ctx); err != nil {
			return undo(fmt.Errorf("cannot run in the cluster: error when recording the run submitted to Job %q: %w", created.Name, err))
		}
	}
	started, err := jobs.Patch(ctx, created.Name, types.MergePatchType, []byte(`{"spec":{"suspend":false}}`), metav1.PatchOptions{})
	if err != nil {
		return undo(fmt.Errorf("cannot run in the cluster: error when starting Job %q: %w", created.Name, err))
	}
	return started, nil
}

// JobEnded reports whether job has completed or failed.
func JobEnded(job *batchv1.Job) bool {
	_, ended := JobEnd(job)
	return ended
}

// JobEnd says how job ended (its Complete or Failed condition), if it has.
func JobEnd(job *batchv1.Job) (failed *batchv1.JobCondition, ended bool) {
	for i, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return nil, true
		case batchv1.JobFailed:
			return &job.Status.Conditions[i], true
		}
	}
	return nil, false
}
