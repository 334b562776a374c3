package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/fleet"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// Where the coordinator's pod reads the fleet file (a ConfigMap) and the
// fleet's kubeconfig (a Secret): podproc, the sim's kubelet, mounts only
// under /var/run, as the in-cluster run's plan is.
const (
	fleetFileDir       = "/var/run/nodeupgrade/fleet"
	fleetFileKey       = "fleet.yaml"
	fleetKubeconfigDir = "/var/run/nodeupgrade/fleet-kubeconfig"
	fleetKubeconfigKey = "kubeconfig"
)

// coordinatorJob is the name of the Job of fleet name's coordinator, as
// of its record (another kind); its file's ConfigMap and its kubeconfig's
// Secret add "-file" and "-kubeconfig".
func coordinatorJob(name string) string { return fleet.ObjectName(name) }

// earlierPod names the lease holders an in-cluster coordinator waits out:
// the earlier pods of its Job (killed, their lease runs out); nil
// elsewhere, where any other live coordinator is refused.
func (ic *inClusterOptions) earlierPod() func(string) bool {
	if ic.Job == "" {
		return nil
	}
	return func(holder string) bool {
		host, _, _ := strings.Cut(holder, "/")
		return strings.HasPrefix(host, ic.Job+"-")
	}
}

// hookFlags are the run flags whose commands the Job's image cannot run.
var hookFlags = []string{"--pre-drain-hook=", "--post-drain-hook=", "--pre-terminate-hook="}

// validateInCluster refuses what the coordinator's Job cannot do before
// any cluster is asked: its image holds only the plugin (no exec: gate,
// no command hook), and its name must fit a Job's.
func (o *FleetRunOptions) validateInCluster() error {
	if err := o.ic.validate(o.given, false); err != nil || !o.ic.InCluster {
		return err
	}
	if name := coordinatorJob(o.fleet.Name); len(name) > 63 {
		return usageErrorf("--in-cluster: metadata.name %q is too long for the coordinator's Job %q (at most 63 characters)", o.fleet.Name, name)
	}
	for _, st := range o.fleet.Stages {
		for _, g := range st.Gates {
			if strings.HasPrefix(g, "exec:") {
				return usageErrorf("--in-cluster: stage %q gate %q runs a command, and the coordinator's image holds only the plugin; use prometheus: or alertmanager: gates, or run the fleet without --in-cluster", st.Name, g)
			}
		}
		for _, t := range st.Targets {
			for _, a := range t.Args {
				if i := slices.IndexFunc(hookFlags, func(h string) bool { return strings.HasPrefix(a, h) }); i >= 0 {
					return usageErrorf("--in-cluster: target %q runs %s, a command the coordinator's image does not hold; hold nodes with the annotation hooks instead (docs/hooks.md)", t.ID(), strings.TrimSuffix(hookFlags[i], "="))
				}
			}
		}
	}
	return nil
}

// submit hands the fleet's coordinator to a Job in the management cluster
// (--context) once everything a start can be refused for was checked, and
// follows it.
func (o *FleetRunOptions) submit(ctx context.Context) error {
	mgmtContext := o.managementContext()
	mgmt, err := o.clientOf(mgmtContext, "--context")
	if err != nil {
		return err
	}
	store, err := o.recordStore(o.fleet.Name)
	if err != nil {
		return err
	}
	if err := o.readyToSubmit(ctx, store); err != nil {
		return err
	}
	kubeconfig, err := o.coordinatorKubeconfig()
	if err != nil {
		return err
	}
	job, err := o.startCoordinator(ctx, mgmt, kubeconfig)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "submitted: Job %s/%s of context %q runs the fleet's coordinator with image %s; following it as \"kubectl nodeupgrade fleet status -f %s -w\" does (Ctrl-C stops following, not the fleet)\n",
		job.Namespace, job.Name, mgmtContext, o.ic.image(), o.File)
	return o.followCoordinator(ctx, mgmt, job)
}

// readyToSubmit refuses, with nothing changed, a fleet the coordinator
// would refuse: a new one its plan refuses, one in flight with another
// file, one another live coordinator runs.
func (o *FleetRunOptions) readyToSubmit(ctx context.Context, store *fleet.Store) error {
	rec, err := store.Load(ctx)
	switch {
	case err != nil:
		return err
	case rec == nil:
		if err := o.startNew(ctx); err != nil {
			return err
		}
	case rec.Changed(o.fleet) != "":
		return fleetError(&fleet.ChangedError{Name: o.fleet.Name, What: rec.Changed(o.fleet)})
	}
	held, err := store.Holder(ctx)
	if err != nil {
		return err
	}
	if held != nil {
		return fleetError(held)
	}
	return nil
}

// managementContext is --context, or the kubeconfig's current context.
func (o *fleetOptions) managementContext() string {
	if c := o.configFlags.Context; c != nil && *c != "" {
		return *c
	}
	raw, err := o.configFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return ""
	}
	return raw.CurrentContext
}

// coordinatorKubeconfig is the kubeconfig the coordinator's pod uses:
// every context the fleet names and --record-context, flattened (their
// certificates inline), with their credentials; the record's context
// current. A context that signs in with a command the image does not
// hold is refused, and so is a file whose contextSelectors would select
// other targets among these contexts than among the kubeconfig's.
func (o *FleetRunOptions) coordinatorKubeconfig() ([]byte, error) {
	raw, err := o.configFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, usageErrorf("cannot read the kubeconfig: %v", err)
	}
	names := clustersOf(o.fleet)
	if !slices.Contains(names, o.RecordContext) {
		names = append(names, o.RecordContext)
	}
	out := clientcmdapi.NewConfig()
	for _, name := range names {
		c := raw.Contexts[name]
		if c == nil {
			return nil, usageErrorf("unknown --record-context %q: the kubeconfig has no such context", name)
		}
		auth := raw.AuthInfos[c.AuthInfo]
		if auth != nil && (auth.Exec != nil || auth.AuthProvider != nil) {
			return nil, usageErrorf("--in-cluster: context %q signs in with a command or auth provider, which the coordinator's image does not hold; give its user a token or client certificate in the kubeconfig", name)
		}
		out.Contexts[name] = c.DeepCopy()
		if cl := raw.Clusters[c.Cluster]; cl != nil {
			out.Clusters[c.Cluster] = cl.DeepCopy()
		}
		if auth != nil {
			out.AuthInfos[c.AuthInfo] = auth.DeepCopy()
		}
	}
	out.CurrentContext = o.RecordContext
	if err := clientcmdapi.FlattenConfig(out); err != nil {
		return nil, usageErrorf("--in-cluster: cannot inline the kubeconfig's files: %v", err)
	}
	slices.Sort(names)
	again, err := fleet.Resolve(o.file, fleet.Options{Contexts: names, CheckRun: o.checkRun})
	if err != nil || again.Hash != o.fleet.Hash {
		return nil, usageErrorf("--in-cluster: a contextSelector selects --record-context %q too once the kubeconfig holds only the fleet's contexts; name the targets' contexts, or keep the record in one of them", o.RecordContext)
	}
	return clientcmd.Write(*out)
}

// coordinatorArgs is the command line of the coordinator's pod: the fleet
// run from its record, the fleet's file and kubeconfig mounted.
func (o *FleetRunOptions) coordinatorArgs(job string) []string {
	return []string{"fleet", "run", "-f", fleetFileDir + "/" + fleetFileKey, "--yes",
		"--record-context=" + o.RecordContext, "--state-namespace=" + o.StateNamespace, "--" + session.JobFlag + "=" + job}
}

// coordinatorJobSpec is the Job of the coordinator: the in-cluster Job
// every run uses, with the fleet's file and kubeconfig mounted.
func (o *FleetRunOptions) coordinatorJobSpec() *batchv1.Job {
	name := coordinatorJob(o.fleet.Name)
	job := session.WorkerJob(name, o.StateNamespace, o.coordinatorArgs(name), o.ic.job())
	job.Annotations = map[string]string{fleetAnnotation: o.fleet.Name}
	pod := &job.Spec.Template.Spec
	c := &pod.Containers[0]
	c.Env = []corev1.EnvVar{{Name: "KUBECONFIG", Value: fleetKubeconfigDir + "/" + fleetKubeconfigKey}}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "fleet", MountPath: fleetFileDir, ReadOnly: true}, {Name: "kubeconfig", MountPath: fleetKubeconfigDir, ReadOnly: true}}
	pod.Volumes = []corev1.Volume{
		{Name: "fleet", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name + "-file"}}}},
		{Name: "kubeconfig", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name + "-kubeconfig"}}},
	}
	return job
}

// fleetAnnotation names, on a coordinator's Job, its fleet.
const fleetAnnotation = "nodeupgrade.dev/fleet"

// startCoordinator makes the coordinator's Job suspended, its file's
// ConfigMap and kubeconfig's Secret owned by it, then starts it; a start
// that fails deletes all three. An ended Job of an earlier coordinator is
// deleted first; one still running refuses the start.
func (o *FleetRunOptions) startCoordinator(ctx context.Context, c kubernetes.Interface, kubeconfig []byte) (*batchv1.Job, error) {
	job := o.coordinatorJobSpec()
	if err := clearCoordinator(ctx, c, job.Namespace, job.Name, o.ic.ServiceAccount, o.fleet.Name); err != nil {
		return nil, err
	}
	job.Spec.Suspend = ptr.To(true)
	jobs := c.BatchV1().Jobs(job.Namespace)
	created, err := jobs.Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("cannot run the fleet in the cluster: error when creating Job %q: %w", job.Name, err)
	}
	owned := metav1.ObjectMeta{Namespace: job.Namespace, Labels: job.Labels, Annotations: job.Annotations,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: created.Name, UID: created.UID}}}
	cm := &corev1.ConfigMap{ObjectMeta: owned, Data: map[string]string{fleetFileKey: string(o.data)}}
	cm.Name = job.Name + "-file"
	secret := &corev1.Secret{ObjectMeta: *owned.DeepCopy(), Data: map[string][]byte{fleetKubeconfigKey: kubeconfig}}
	secret.Name = job.Name + "-kubeconfig"
	if _, err = c.CoreV1().ConfigMaps(job.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err == nil {
		if _, err = c.CoreV1().Secrets(job.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err == nil {
			created, err = jobs.Patch(ctx, created.Name, types.MergePatchType, []byte(`{"spec":{"suspend":false}}`), metav1.PatchOptions{})
		}
	}
	if err != nil {
		return nil, undoCoordinator(context.WithoutCancel(ctx), c, job, fmt.Errorf("cannot run the fleet in the cluster: error when starting Job %q: %w", job.Name, err))
	}
	return created, nil
}

// undoCoordinator deletes what a failed start made: the Job, and its
// ConfigMap and Secret at once rather than when the garbage collector
// gets to them (the Secret holds credentials).
func undoCoordinator(ctx context.Context, c kubernetes.Interface, job *batchv1.Job, err error) error {
	errs := []error{
		c.BatchV1().Jobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}),
		c.CoreV1().ConfigMaps(job.Namespace).Delete(ctx, job.Name+"-file", metav1.DeleteOptions{}),
		c.CoreV1().Secrets(job.Namespace).Delete(ctx, job.Name+"-kubeconfig", metav1.DeleteOptions{}),
	}
	errs = slices.DeleteFunc(errs, func(e error) bool { return e == nil || apierrors.IsNotFound(e) })
	if len(errs) > 0 {
		return fmt.Errorf("%w; and deleting what it made failed: %v; delete it with \"kubectl -n %s delete job,configmap,secret -l %s\"", err, errors.Join(errs...), job.Namespace, fleetAnnotation)
	}
	return err
}

// clearCoordinator refuses a start the Job could not make (no
// ServiceAccount) or that would run two coordinators (its Job still
// runs), and deletes the ended Job of an earlier coordinator, with its
// ConfigMap and Secret.
func clearCoordinator(ctx context.Context, c kubernetes.Interface, ns, name, sa, fleetName string) error {
	if _, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, sa, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return usageErrorf("--in-cluster: no ServiceAccount %q in namespace %q; apply deploy/in-cluster.yaml there (docs/in-cluster.md), or name one with --service-account", sa, ns)
	} else if err != nil {
		return fmt.Errorf("cannot run the fleet in the cluster: error when reading ServiceAccount %q: %w", sa, err)
	}
	old, err := c.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("cannot run the fleet in the cluster: error when reading Job %q: %w", name, err)
	case !session.JobEnded(old):
		return usageErrorf("--in-cluster: Job %q in namespace %q still runs the coordinator of fleet %q; follow it with \"kubectl nodeupgrade fleet status -w\", or stop it with \"fleet cancel\" or \"fleet abort\"", name, ns, fleetName)
	}
	return deleteJob(ctx, c, old)
}

// deleteJob deletes job with its pods, ConfigMap and Secret, and waits
// until it is gone: its pods have stopped.
func deleteJob(ctx context.Context, c kubernetes.Interface, job *batchv1.Job) error {
	jobs := c.BatchV1().Jobs(job.Namespace)
	if err := jobs.Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("error when deleting Job %q: %w", job.Name, err)
	}
	for {
		if _, err := jobs.Get(ctx, job.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		if err := transport.Sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
}

// followCoordinator says what becomes of the coordinator's pods and shows
// the fleet as "fleet status -w" does, until the Job ends: complete is the
// fleet finished; failed, its last pod's exit code and last line.
func (o *FleetRunOptions) followCoordinator(ctx context.Context, c kubernetes.Interface, job *batchv1.Job) error {
	f := &jobFollower{status: &StatusOptions{IOStreams: o.IOStreams, now: time.Now}, sess: &session.Session{Client: c}, job: job, seen: map[string]string{}}
	st := &FleetStatusOptions{fleetOptions: o.fleetOptions, Watch: true}
	var last *FleetStatus
	err := func() error {
		for {
			j, err := f.look(ctx)
			if err != nil {
				return err
			}
			if last, err = st.printChanged(ctx, last); err != nil {
				return err
			}
			if failed, ended := session.JobEnd(j); ended && failed == nil {
				return nil
			} else if ended {
				code, msg := f.lastExit(ctx, j)
				return &fleetExit{code: code, msg: fmt.Sprintf("the coordinator of fleet %q stopped: Job %s/%s failed (%s: %s)%s", o.fleet.Name, j.Namespace, j.Name, failed.Reason, failed.Message, msg)}
			}
			if err := transport.Sleep(ctx, 2*time.Second); err != nil {
				return err
			}
		}
	}()
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(o.ErrOut, "stopped following fleet %q; its coordinator goes on in the cluster (Job %s/%s); follow it again with \"kubectl nodeupgrade fleet status -f %s -w\"\n", o.fleet.Name, job.Namespace, job.Name, o.File)
		return nil
	case errors.Is(err, errJobGone):
		return &fleetExit{code: ExitFailure, msg: fmt.Sprintf("the coordinator of fleet %q is gone: Job %s/%s was deleted (\"fleet abort\" deletes it); \"fleet status -f %s\" shows where each target is", o.fleet.Name, job.Namespace, job.Name, o.File)}
	}
	return err
}

// deleteCoordinator deletes the Job of the fleet's coordinator in the
// management cluster (--context), if it has one, and waits until its pod
// has stopped: it would start the targets an abort puts back. A Job the
// user may not read is none this command can see.
func (o *FleetFanOutOptions) deleteCoordinator(ctx context.Context) (bool, error) {
	c, err := o.clientOf(o.managementContext(), "--context")
	if err != nil {
		return false, err
	}
	job, err := c.BatchV1().Jobs(o.StateNamespace).Get(ctx, coordinatorJob(o.fleet.Name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("cannot read the coordinator's Job %q: %w", coordinatorJob(o.fleet.Name), err)
	}
	fmt.Fprintf(o.Out, "deleting Job %s/%s, the coordinator of fleet %q, so that it starts no target again\n", job.Namespace, job.Name, o.fleet.Name)
	return true, deleteJob(ctx, c, job)
}
