package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// ImageRepository is where releases publish the plugin's image
// (hack/image.sh builds it); --image-ref defaults to its tag of this
// version.
const ImageRepository = "ghcr.io/nodeupgrade/kubectl-nodeupgrade"

// inClusterOptions are the flags of a run handed to a Job in the cluster,
// and the flag that makes this process that Job's pod.
type inClusterOptions struct {
	InCluster      bool
	ImageRef       string
	ServiceAccount string
	// NodeSelector is --job-node-selector: where the Job's pods may run.
	NodeSelector map[string]string
	// Job is the Job this process is a pod of (hidden; the Job sets it).
	Job string

	given map[string]bool
}

func (ic *inClusterOptions) addFlags(f *pflag.FlagSet) {
	f.BoolVar(&ic.InCluster, "in-cluster", false, "Run the reviewed plan in the cluster, as a Job in --state-namespace that outlives this terminal, and follow it as \"status -w\" does (Ctrl-C stops following, not the run); see docs/in-cluster.md")
	f.StringVar(&ic.ImageRef, "image-ref", "", "With --in-cluster: the plugin's image the Job runs (default "+ImageRepository+":<this version>)")
	f.StringVar(&ic.ServiceAccount, "service-account", session.DefaultServiceAccount, "With --in-cluster: the Job's ServiceAccount in --state-namespace (deploy/in-cluster.yaml)")
	f.StringToStringVar(&ic.NodeSelector, "job-node-selector", nil, "With --in-cluster: labels of the nodes the Job's pods may run on, such as a system node pool's (key=value,...); it never runs on the group's nodes either way")
	f.StringVar(&ic.Job, session.JobFlag, "", "Set by an in-cluster run's Job: this process is its pod")
	_ = f.MarkHidden(session.JobFlag)
}

// validate refuses the in-cluster flags where they do not apply.
func (ic *inClusterOptions) validate(given map[string]bool, hooks bool) error {
	ic.given = given
	for _, name := range []string{"image-ref", "service-account", "job-node-selector"} {
		if given[name] && !ic.InCluster {
			return usageErrorf("--%s is only used with --in-cluster", name)
		}
	}
	if given[session.RollbackFlag] && ic.Job == "" {
		return usageErrorf("--%s is only used by an in-cluster rollback's own pod; roll back with \"kubectl nodeupgrade rollback\"", session.RollbackFlag)
	}
	switch {
	case !ic.InCluster:
		return nil
	case ic.Job != "":
		return usageErrorf("--in-cluster cannot be used by the in-cluster run's own pod (--%s)", session.JobFlag)
	case hooks:
		return usageErrorf("--in-cluster cannot run command hooks: the Job's image holds only the plugin; hold nodes with the annotation hooks instead (docs/hooks.md)")
	case ic.ImageRef == "" && version() == "dev":
		return usageErrorf("--in-cluster: this build has no release image (version dev); give --image-ref, such as one built by hack/image.sh")
	}
	return nil
}

// job is what the Job is made with.
func (ic *inClusterOptions) job() session.InCluster {
	return session.InCluster{Image: ic.image(), ServiceAccount: ic.ServiceAccount, NodeSelector: ic.NodeSelector}
}

func (ic *inClusterOptions) image() string {
	if ic.ImageRef != "" {
		return ic.ImageRef
	}
	return ImageRepository + ":" + version()
}

// prepare sets up the session of the Job's pod: it waits out the lock of
// the Job's earlier pods (a new pod after one was killed resumes the
// run), and checks its rights before anything changes.
func (ic *inClusterOptions) prepare(ctx context.Context, sess *session.Session, group string) error {
	sess.WaitsOutLock = func(holder string) bool {
		_, ok := session.JobOfHolder(group, holder)
		return ok
	}
	host, _ := os.Hostname()
	fmt.Fprintf(sess.Out, "in-cluster run of %q: Job %s/%s, pod %s\n", group, sess.StateNamespace, ic.Job, host)
	return sess.Jobs().CheckRights(ctx)
}

// submitter hands the agreed plan to a Job and follows it.
func (ic *inClusterOptions) submitter(sess *session.Session, streams genericiooptions.IOStreams, client kubernetes.Interface) func(context.Context, *session.Planned) error {
	return func(ctx context.Context, pl *session.Planned) error {
		submitted := time.Now().Add(-time.Second).UTC().Truncate(time.Second)
		job, err := sess.Jobs().Submit(ctx, pl, ic.job())
		if err != nil {
			return err
		}
		group := pl.Request.RecordName()
		fmt.Fprintf(streams.Out, "submitted: Job %s/%s runs the plan with image %s; following it as \"kubectl nodeupgrade status %s -w\" does (Ctrl-C stops following, not the run)\n",
			job.Namespace, job.Name, ic.image(), group)
		return ic.follow(ctx, sess, streams, client, job, group, submitted)
	}
}

// follow follows group's Job, submitted at since, until its work ends.
func (ic *inClusterOptions) follow(ctx context.Context, sess *session.Session, streams genericiooptions.IOStreams, client kubernetes.Interface, job *batchv1.Job, group string, since time.Time) error {
	f := &jobFollower{
		status: &StatusOptions{IOStreams: streams, NodeGroup: group, StateNamespace: sess.StateNamespace, client: client, now: time.Now, recheck: 5 * time.Second},
		sess:   sess, job: job, group: group, since: since, seen: map[string]string{}, poll: time.Second,
	}
	return f.run(ctx)
}

// jobFollower follows an in-cluster run: its pods as they come, and the
// run each one drives, as status -w does, until the run stops and the
// Job starts no other pod.
type jobFollower struct {
	status *StatusOptions
	sess   *session.Session
	job    *batchv1.Job
	group  string
	since  time.Time         // the submission: records older are an earlier run's
	seen   map[string]string // what was said of each pod
	ran    map[string]bool   // the pods whose run was followed
	poll   time.Duration
	// lastEnd is the latest container end seen of the Job's pods, and
	// lastEndPod its pod: kept, as the pod may be gone (abort deletes
	// the Job it supersedes) by the time the Job's end is told.
	lastEnd    *corev1.ContainerStateTerminated
	lastEndPod string
}

// errJobGone is a followed Job deleted (abort supersedes the Job of a run
// it stopped), or replaced by another of its name.
var errJobGone = errors.New("the Job is gone")

func (f *jobFollower) run(ctx context.Context) error {
	err := f.loop(ctx)
	if errors.Is(err, errJobGone) && ctx.Err() == nil {
		// Its run is what the record says: how it stopped, or, taken on
		// by another Job, where it is.
		fmt.Fprintf(f.status.Out, "%s Job %s/%s is gone (deleted, or an abort's took its place); the run as its record has it:\n", f.status.now().Format("15:04:05"), f.job.Namespace, f.job.Name)
		err = f.status.follow(ctx)
	}
	if ctx.Err() != nil {
		fmt.Fprintf(f.status.ErrOut, "stopped following the run on %q; it goes on in the cluster (Job %s/%s); follow it again with \"kubectl nodeupgrade status %s -w\"\n",
			f.group, f.job.Namespace, f.job.Name, f.group)
		return nil
	}
	return err
}

// loop follows each pod's run; a run that stops without the Job ending is
// followed on in the next pod.
func (f *jobFollower) loop(ctx context.Context) error {
	f.ran = map[string]bool{}
	for {
		pod, job, err := f.untilRunStarts(ctx)
		if err != nil {
			return err
		}
		if pod == "" { // the Job ended before a pod was seen running
			return f.ended(ctx, job)
		}
		f.ran[pod] = true
		err = f.status.follow(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		// Stopped: the Job either ends, or starts a pod that resumes.
		job, err = f.untilPodGone(ctx, pod)
		if err != nil {
			return err
		}
		if session.JobEnded(job) {
			return f.ended(ctx, job)
		}
		fmt.Fprintf(f.status.Out, "%s pod %s stopped; the Job starts another, which resumes the run\n", f.status.now().Format("15:04:05"), pod)
	}
}

// untilRunStarts waits, telling what becomes of the Job's pods, until a
// pod not followed yet holds the run's lock and has recorded the run, or
// the Job ended (pod "").
func (f *jobFollower) untilRunStarts(ctx context.Context) (string, *batchv1.Job, error) {
	for {
		job, err := f.look(ctx)
		if err != nil || session.JobEnded(job) {
			return "", job, err
		}
		held, err := f.sess.Holder(ctx, f.group)
		if err != nil {
			return "", nil, err
		}
		if held != nil {
			pod, ours := session.JobOfHolder(f.group, held.Holder)
			rec, err := f.sess.Record(ctx, f.group)
			if err != nil {
				return "", nil, err
			}
			if ours && !f.ran[pod] && rec != nil && rec.Holder == held.Holder && rec.FinishedAt == nil {
				return pod, job, nil
			}
		}
		if err := transport.Sleep(ctx, f.poll); err != nil {
			return "", nil, err
		}
	}
}

// untilPodGone waits until pod has ended and the Job has either ended or
// gone on.
func (f *jobFollower) untilPodGone(ctx context.Context, pod string) (*batchv1.Job, error) {
	for {
		job, err := f.look(ctx)
		if err != nil || session.JobEnded(job) {
			return job, err
		}
		if phase, ok := f.seen[pod]; !ok || strings.HasPrefix(phase, "exited") || phase == "gone" {
			return job, nil
		}
		if err := transport.Sleep(ctx, f.poll); err != nil {
			return nil, err
		}
	}
}

// look reads the Job and its pods, and says what changed of each pod.
func (f *jobFollower) look(ctx context.Context) (*batchv1.Job, error) {
	job, err := f.sess.Client.BatchV1().Jobs(f.job.Namespace).Get(ctx, f.job.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || err == nil && job.UID != f.job.UID:
		return nil, errJobGone
	case err != nil:
		return nil, fmt.Errorf("cannot follow Job %q: %w", f.job.Name, err)
	}
	pods, err := f.sess.Client.CoreV1().Pods(f.job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + f.job.Name})
	if err != nil {
		return nil, fmt.Errorf("cannot follow the pods of Job %q: %w", f.job.Name, err)
	}
	now := map[string]bool{}
	for _, p := range pods.Items {
		if !slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == job.UID }) {
			continue // a pod of an earlier Job of the same name, going away
		}
		now[p.Name] = true
		f.noteEnd(&p)
		f.say(p.Name, podState(&p))
	}
	for name, said := range f.seen {
		if !now[name] && said != "gone" && !strings.HasPrefix(said, "exited") {
			f.say(name, "gone")
		}
	}
	return job, nil
}

func (f *jobFollower) say(pod, what string) {
	if f.seen[pod] == what {
		return
	}
	f.seen[pod] = what
	fmt.Fprintf(f.status.Out, "%s pod %s: %s\n", f.status.now().Format("15:04:05"), pod, what)
}

// podState is what a pod of the Job is doing, in a few words.
func podState(p *corev1.Pod) string {
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil {
			return fmt.Sprintf("exited %d (%s)", t.ExitCode, output.OrNone(t.Reason))
		}
		if w := c.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" {
			return "waiting: " + w.Reason + ": " + output.OneLine(w.Message, 200)
		}
	}
	switch {
	case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
		return "exited (" + string(p.Status.Phase) + ")"
	case p.Spec.NodeName == "":
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				return "not scheduled: " + output.OneLine(c.Message, 200)
			}
		}
		return "pending"
	case p.Status.Phase == corev1.PodRunning:
		return "running on node " + p.Spec.NodeName
	}
	return "starting on node " + p.Spec.NodeName
}

// ended says how the Job ended: as its run ended where a pod recorded it,
// else with the last pod's exit code and message.
func (f *jobFollower) ended(ctx context.Context, job *batchv1.Job) error {
	// No pod took the run: the record goes back to what it was.
	untaken, err := f.sess.Jobs().Unsubmit(ctx, f.group, job.Name)
	if err != nil {
		return err
	}
	rec, err := f.sess.Record(ctx, f.group)
	if err != nil {
		return err
	}
	failed, _ := session.JobEnd(job)
	if failed == nil {
		if untaken || rec == nil || rec.UpdatedAt.Before(f.since) {
			fmt.Fprintf(f.status.Out, "Job %s completed; the run had nothing to do\n", job.Name)
			return nil
		}
		return f.status.follow(ctx) // prints how the run ended
	}
	code, msg := f.lastExit(ctx, job)
	if !untaken && rec != nil && !rec.UpdatedAt.Before(f.since) && rec.FinishedAt == nil && len(f.ran) > 0 {
		_ = f.status.follow(ctx) // the run's last line, then the Job's failure
	}
	return &watchEnded{fmt.Sprintf("the in-cluster run of %q stopped: Job %s/%s failed (%s: %s)%s", f.group, job.Namespace, job.Name, failed.Reason, failed.Message, msg), code}
}

// noteEnd keeps p's container end where it is the latest seen.
func (f *jobFollower) noteEnd(p *corev1.Pod) {
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil && (f.lastEnd == nil || t.FinishedAt.After(f.lastEnd.FinishedAt.Time)) {
			f.lastEnd, f.lastEndPod = t.DeepCopy(), p.Name
		}
	}
}

// lastExit is the exit code of the Job's last pod that ended, and its
// message: the run's last log lines.
func (f *jobFollower) lastExit(ctx context.Context, job *batchv1.Job) (int, string) {
	pods, err := f.sess.Client.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job.Name})
	if err == nil {
		for _, p := range pods.Items {
			if slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == job.UID }) {
				f.noteEnd(&p)
			}
		}
	}
	last := f.lastEnd
	if last == nil {
		return ExitFailure, ""
	}
	code := ExitFailure
	if last.ExitCode > 0 && last.ExitCode <= ExitHookFailed {
		code = int(last.ExitCode)
	}
	return code, fmt.Sprintf("; pod %s exited %d: %s", f.lastEndPod, last.ExitCode, lastLine(last.Message))
}

// lastLine is the last line of a pod's message that says something: the
// run's error, as it printed it.
func lastLine(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return strings.TrimPrefix(l, "error: ")
		}
	}
	return "no message"
}

// inClusterWhere says, of a live run driven by a pod of its in-cluster
// Job, where it runs; "" for any other run.
func inClusterWhere(s RunStatus, ns string) string {
	pod, ok := session.JobOfHolder(s.NodeGroup, s.Holder)
	if !s.Alive || !ok {
		return ""
	}
	return fmt.Sprintf("runs in the cluster: Job %s/%s, pod %s", ns, session.JobName(s.NodeGroup), pod)
}
