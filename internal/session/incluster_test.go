package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

func inClusterPlan() *Planned {
	r := &Request{Request: plan.Request{NodeGroup: "demo", DrainTimeout: 15 * time.Minute, PostDrainWait: 0, MaxAge: time.Hour, IgnoreChecks: []string{"single-replica"}}}
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind, NodeGroup: "demo", NodeGroupLabel: "eks.amazonaws.com/nodegroup",
		Taint: "eks.amazonaws.com/nodegroup=unschedulable:NoSchedule", Strategy: "eks"}
	return &Planned{Plan: p, Request: r}
}

func TestBuildJob(t *testing.T) {
	pl := inClusterPlan()
	job, err := BuildJob(pl, pl.Request, InCluster{Image: "example.com/nu:v1", ServiceAccount: "sa"}, "kube-system")
	if err != nil {
		t.Fatal(err)
	}
	spec, pod := job.Spec, job.Spec.Template.Spec
	c := pod.Containers[0]
	checks := []struct {
		name string
		ok   bool
	}{
		{"named after the group's record", job.Name == "nodeupgrade-demo" && job.Namespace == "kube-system"},
		{"no active deadline", spec.ActiveDeadlineSeconds == nil},
		{"a generous backoff limit", spec.BackoffLimit != nil && *spec.BackoffLimit >= 10},
		{"pods never restarted in place (the failure policy needs it)", pod.RestartPolicy == corev1.RestartPolicyNever},
		{"pods taken away do not count", spec.PodFailurePolicy.Rules[1].Action == "Ignore" && spec.PodFailurePolicy.Rules[1].OnPodConditions[0].Type == corev1.DisruptionTarget},
		{"its ServiceAccount", pod.ServiceAccountName == "sa"},
		{"the image", c.Image == "example.com/nu:v1" && c.Command[0] == ImagePath},
		{"the run's last lines as its message", c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError},
		{"the plan mounted where the args read it", c.VolumeMounts[0].MountPath+"/"+PlanKey == PodPlanFile && pod.Volumes[0].ConfigMap.Name == "nodeupgrade-demo-plan"},
		{"off the group's nodes", equality.Semantic.DeepEqual(pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms,
			[]corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "eks.amazonaws.com/nodegroup", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"demo"}}}}})},
		{"tolerates the run's taint", pod.Tolerations[0] == corev1.Toleration{Key: "eks.amazonaws.com/nodegroup", Operator: corev1.TolerationOpEqual, Value: "unschedulable", Effect: corev1.TaintEffectNoSchedule}},
		{"runs the saved plan as this Job's pod", slices.Contains(c.Args, "--plan-file="+PodPlanFile) && slices.Contains(c.Args, "--"+JobFlag+"=nodeupgrade-demo") && slices.Contains(c.Args, "--yes")},
		{"with the run's settings", slices.Contains(c.Args, "--drain-timeout=15m0s") && slices.Contains(c.Args, "--post-drain-wait=0s") && slices.Contains(c.Args, "--ignore-check=single-replica")},
		{"in the state namespace", slices.Contains(c.Args, "--state-namespace=kube-system")},
		{"no setting eks does not take", !slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--max-age") || strings.HasPrefix(a, "--no-wait") })},
		{"not root", *pod.SecurityContext.RunAsNonRoot && *c.SecurityContext.ReadOnlyRootFilesystem},
	}
	for _, ch := range checks {
		t.Run(ch.name, func(t *testing.T) {
			if !ch.ok {
				t.Errorf("job: %+v", job)
			}
		})
	}
}

// TestRollbackJobRollsBack: a rollback's plan handed to a Job is run by
// its pod rolling back, not forward (which would undo the rollback).
func TestRollbackJobRollsBack(t *testing.T) {
	for _, rollback := range []bool{false, true} {
		t.Run(fmt.Sprintf("rollback %v", rollback), func(t *testing.T) {
			pl := inClusterPlan()
			pl.Request.Rollback = rollback
			job, err := BuildJob(pl, pl.Request, InCluster{Image: "img", ServiceAccount: "sa"}, "kube-system")
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(job.Spec.Template.Spec.Containers[0].Args, "--"+RollbackFlag); got != rollback {
				t.Errorf("args %q: --%s %v, want %v", job.Spec.Template.Spec.Containers[0].Args, RollbackFlag, got, rollback)
			}
		})
	}
}

// TestNotOnGreen: a blue/green run's Job keeps off green too, which its
// rollback drains: every term is off the group and off green.
func TestNotOnGreen(t *testing.T) {
	notIn := func(k, v string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpNotIn, Values: []string{v}}
	}
	tests := []struct {
		name string
		bg   *plan.BlueGreenPlan
		want []corev1.NodeSelectorTerm
	}{
		{"green selected", &plan.BlueGreenPlan{GreenSelector: "pool=green,tier in (a)"}, []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{notIn("ng", "demo"), notIn("pool", "green")}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{notIn("ng", "demo"), notIn("tier", "a")}},
		}},
		{"green labelled with its name", &plan.BlueGreenPlan{Green: "demo-green", GreenLabel: "eks.amazonaws.com/nodegroup"}, []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{notIn("ng", "demo"), notIn("eks.amazonaws.com/nodegroup", "demo-green")}},
		}},
		{"green in the group", &plan.BlueGreenPlan{Green: "demo-v2"}, []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{notIn("ng", "demo")}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			aff, err := notOnGroup(&plan.Plan{NodeGroup: "demo", NodeGroupLabel: "ng", BlueGreen: tt.bg})
			if err != nil {
				t.Fatal(err)
			}
			if got := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms; !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("terms %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestNotOnTheGroupOfASelector(t *testing.T) {
	tests := []struct {
		selector string
		want     []corev1.NodeSelectorRequirement
		refused  bool
	}{
		{"pool=a", []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"a"}}}, false},
		{"pool in (b,a),gpu", []corev1.NodeSelectorRequirement{
			{Key: "gpu", Operator: corev1.NodeSelectorOpDoesNotExist},
			{Key: "pool", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"a", "b"}}}, false},
		{"pool!=a,!spot", []corev1.NodeSelectorRequirement{
			{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}},
			{Key: "spot", Operator: corev1.NodeSelectorOpExists}}, false},
		{"size>3", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.selector, func(t *testing.T) {
			aff, err := notOnGroup(&plan.Plan{Selector: tt.selector})
			if tt.refused {
				if err == nil {
					t.Fatalf("selector %q accepted", tt.selector)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			terms := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			var got []corev1.NodeSelectorRequirement
			for _, term := range terms {
				if len(term.MatchExpressions) != 1 {
					t.Fatalf("term %+v: want one requirement each (terms are ORed)", term)
				}
				got = append(got, term.MatchExpressions[0])
			}
			slices.SortFunc(got, func(a, b corev1.NodeSelectorRequirement) int { return strings.Compare(a.Key, b.Key) })
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i].Key != tt.want[i].Key || got[i].Operator != tt.want[i].Operator || !slices.Equal(got[i].Values, tt.want[i].Values) {
					t.Errorf("got %+v, want %+v", got[i], tt.want[i])
				}
			}
		})
	}
}

func inClusterSession(objs ...runtime.Object) (*Session, *fake.Clientset) {
	c := fake.NewClientset(objs...)
	var out bytes.Buffer
	return &Session{Client: c, StateNamespace: "kube-system", IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &out}}, c
}

var serviceAccount = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa", Namespace: "kube-system"}}

func TestSubmit(t *testing.T) {
	ctx := context.Background()
	ic := InCluster{Image: "img", ServiceAccount: "sa"}
	t.Run("started, its plan owned by it and readable as --plan-file", func(t *testing.T) {
		s, c := inClusterSession(serviceAccount)
		job, err := s.Jobs().Submit(ctx, inClusterPlan(), ic)
		if err != nil {
			t.Fatal(err)
		}
		if job.Spec.Suspend != nil && *job.Spec.Suspend {
			t.Errorf("the Job is still suspended")
		}
		cm, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, "nodeupgrade-demo-plan", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].Name != job.Name || cm.OwnerReferences[0].Kind != "Job" {
			t.Errorf("the plan's owners: %+v", cm.OwnerReferences)
		}
		file := filepath.Join(t.TempDir(), PlanKey)
		if err := os.WriteFile(file, []byte(cm.Data[PlanKey]), 0o600); err != nil {
			t.Fatal(err)
		}
		if p, _, err := readPlanFile(file); err != nil || p.NodeGroup != "demo" {
			t.Errorf("the saved plan does not read back: %v %+v", err, p)
		}
	})
	refused := []struct {
		name   string
		objs   []runtime.Object
		failOn string // the kind of object whose creation fails
		want   string
	}{
		{"no ServiceAccount", nil, "", `no ServiceAccount "sa"`},
		{"a live run holds the lock", []runtime.Object{serviceAccount, liveLease("laptop/12")}, "", "is being upgraded by"},
		{"the last Job still runs", []runtime.Object{serviceAccount, &batchJob}, "", "still runs the last run"},
		{"the plan cannot be saved", []runtime.Object{serviceAccount}, "configmaps", "error when saving the plan"},
		{"the Job cannot be started", []runtime.Object{serviceAccount}, "patch", "error when starting Job"},
		// not taken for a lock nobody holds
		{"the lock cannot be read", []runtime.Object{serviceAccount, liveLease("laptop/12")}, "get leases", `error when reading the lock of "demo"`},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			s, c := inClusterSession(tt.objs...)
			failCreation(c, tt.failOn)
			before := objectsIn(t, c)
			_, err := s.Jobs().Submit(ctx, inClusterPlan(), ic)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
			if after := objectsIn(t, c); !slices.Equal(before, after) {
				t.Errorf("the cluster changed: before %v, after %v", before, after)
			}
		})
	}
}

var batchJob = func() batchv1.Job {
	pl := inClusterPlan()
	job, _ := BuildJob(pl, pl.Request, InCluster{Image: "img", ServiceAccount: "sa"}, "kube-system")
	return *job
}()

func liveLease(holder string) *coordinationv1.Lease {
	now := metav1.NewMicroTime(time.Now())
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "nodeupgrade-demo", Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](30), RenewTime: &now}}
}

// failCreation makes the fake API server refuse to create configmaps, to
// patch jobs ("patch"), or to read leases ("get leases").
func failCreation(c *fake.Clientset, what string) {
	switch what {
	case "get leases":
		c.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("etcdserver: request timed out")
		})
	case "configmaps":
		c.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("no"))
		})
	case "patch":
		c.PrependReactor("patch", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewInternalError(errors.New("boom"))
		})
	}
}

// objectsIn names the Jobs, ConfigMaps and Leases of the state namespace,
// with their resource versions.
func objectsIn(t *testing.T, c *fake.Clientset) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	jobs, _ := c.BatchV1().Jobs("kube-system").List(ctx, metav1.ListOptions{})
	for _, j := range jobs.Items {
		out = append(out, "job/"+j.Name+"@"+j.ResourceVersion)
	}
	cms, _ := c.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{})
	for _, cm := range cms.Items {
		out = append(out, "configmap/"+cm.Name+"@"+cm.ResourceVersion)
	}
	leases, _ := c.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{})
	for _, l := range leases.Items {
		out = append(out, "lease/"+l.Name+"@"+l.ResourceVersion)
	}
	slices.Sort(out)
	return out
}

func TestCheckRightsNamesWhatIsMissing(t *testing.T) {
	tests := []struct {
		name    string
		deny    func(authorizationv1.ResourceAttributes) bool
		missing []string
	}{
		{"every right", func(authorizationv1.ResourceAttributes) bool { return false }, nil},
		{"patch nodes", func(a authorizationv1.ResourceAttributes) bool { return a.Verb == "patch" && a.Resource == "nodes" }, []string{"patch nodes"}},
		{"evictions and leases", func(a authorizationv1.ResourceAttributes) bool {
			return a.Subresource == "eviction" || (a.Resource == "leases" && a.Verb == "update")
		}, []string{"create pods/eviction", `update leases.coordination.k8s.io in namespace "kube-system"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := inClusterSession()
			asked := 0
			c.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
				review := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
				review.Status.Allowed = !tt.deny(*review.Spec.ResourceAttributes)
				return true, review, nil
			})
			c.PrependReactor("create", "selfsubjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
				asked++
				return false, nil, nil
			})
			err := s.Jobs().CheckRights(context.Background())
			if asked < 30 {
				t.Errorf("asked about %d rights; deploy/rbac.yaml's run roles hold more", asked)
			}
			if tt.missing == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("a missing right was not refused")
			}
			for _, m := range tt.missing {
				if !strings.Contains(err.Error(), "may not "+m) && !strings.Contains(err.Error(), ", "+m) {
					t.Errorf("error %q does not name %q", err, m)
				}
			}
		})
	}
}

func TestInClusterPodWaitsOutTheLockOfAnEarlierPod(t *testing.T) {
	tests := []struct {
		name   string
		holder string
		waits  bool
	}{
		{"an earlier pod of the Job", "nodeupgrade-demo-x7k2p/1", true},
		{"a run from a laptop", "laptop/12", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lease := liveLease(tt.holder)
			// Renewed 29s ago: it runs out in a second.
			lease.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now().Add(-29 * time.Second)))
			s, _ := inClusterSession(lease)
			s.WaitsOutLock = func(h string) bool { _, ok := JobOfHolder("demo", h); return ok }
			start := time.Now()
			_, _, release, err := s.HoldLock(context.Background(), "demo")
			var held *state.HeldError
			switch {
			case tt.waits && err != nil:
				t.Fatalf("the lock was not taken over: %v", err)
			case tt.waits:
				release()
				if time.Since(start) < 500*time.Millisecond {
					t.Errorf("took the lock at once, before the earlier pod's lease ran out")
				}
			case !errors.As(err, &held):
				t.Fatalf("error %v, want the lock held by %q", err, tt.holder)
			}
		})
	}
}

// A Job whose pod has not taken the run is a run every command sees
// (status names it submitted, a second submission is sent to cancel);
// when it is withdrawn, or its Job ends before a pod took the run, the
// record is as it was before the submission: nothing is left behind. A
// record a pod took is left alone.
func TestSubmittedRunIsSeenThenPutBack(t *testing.T) {
	ctx := context.Background()
	ic := InCluster{Image: "img", ServiceAccount: "sa"}
	finished := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	earlier := map[string]*state.Record{
		"no record":      nil,
		"a paused run":   {NodeGroup: "demo", Strategy: "eks", State: state.StatePaused, Phase: "Drain", Batch: 2, Done: []string{"a"}},
		"a finished run": {NodeGroup: "demo", Strategy: "eks", State: state.StateFinished, Done: []string{"a", "b"}, FinishedAt: &finished},
	}
	endings := map[string]func(s *Session) (*state.Record, error){
		"withdrawn by cancel": func(s *Session) (*state.Record, error) { return s.Jobs().Withdraw(ctx, "demo") },
		"the Job ended first": func(s *Session) (*state.Record, error) {
			untaken, err := s.Jobs().Unsubmit(ctx, "demo", JobName("demo"))
			if !untaken {
				err = errors.Join(err, errors.New("not put back"))
			}
			return nil, err
		},
	}
	for before, rec := range earlier {
		for ending, end := range endings {
			t.Run(before+", "+ending, func(t *testing.T) {
				s, c := inClusterSession(serviceAccount)
				if rec != nil {
					if err := s.store().Save(ctx, rec); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := s.Jobs().Submit(ctx, inClusterPlan(), ic); err != nil {
					t.Fatal(err)
				}
				run, err := s.Look(ctx, "demo")
				if err != nil || run == nil || run.Status != state.StateSubmitted {
					t.Fatalf("after the submission: %+v %v, want submitted", run, err)
				}
				if err := run.Accept(CmdCancel); err != nil {
					t.Errorf("cancel refused: %v", err)
				}
				if _, err := s.Jobs().Submit(ctx, inClusterPlan(), ic); err == nil || !strings.Contains(err.Error(), `"kubectl nodeupgrade cancel demo"`) {
					t.Errorf("second submission: %v, want a refusal naming cancel", err)
				}
				if _, err := end(s); err != nil {
					t.Fatal(err)
				}
				after, err := s.store().Load(ctx, "demo")
				if err != nil {
					t.Fatal(err)
				}
				if rec == nil && after != nil || rec != nil && (after == nil || after.State != rec.State || !slices.Equal(after.Done, rec.Done) || after.Submission != nil) {
					t.Errorf("the record after: %+v, want as before: %+v", after, rec)
				}
				if ending == "withdrawn by cancel" {
					if _, err := c.BatchV1().Jobs("kube-system").Get(ctx, JobName("demo"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
						t.Errorf("the Job is still there: %v", err)
					}
				}
			})
		}
	}
	t.Run("a pod took the run", func(t *testing.T) {
		s, _ := inClusterSession(serviceAccount)
		if _, err := s.Jobs().Submit(ctx, inClusterPlan(), ic); err != nil {
			t.Fatal(err)
		}
		rec, err := s.store().Load(ctx, "demo")
		if err != nil {
			t.Fatal(err)
		}
		rec.State, rec.Submission = state.StateRunning, nil
		if err := s.store().Save(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if untaken, err := s.Jobs().Unsubmit(ctx, "demo", JobName("demo")); untaken || err != nil {
			t.Errorf("put back a run a pod took: %v %v", untaken, err)
		}
	})
}

// TestSubmittedRunNamesItsPod: a submitted run counts the nodes its plan
// leaves to the pod, and names its Job, the pod and why the pod has not
// started the run.
func TestSubmittedRunNamesItsPod(t *testing.T) {
	ctx := context.Background()
	pending := func(mutate func(p *corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: JobName("demo") + "-x7k2p",
			Labels: map[string]string{batchv1.JobNameLabel: JobName("demo")}}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
		mutate(p)
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"unschedulable", pending(func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message: "0/9 nodes are available: 9 node(s) had untolerated taint"}}
		}), "Job kube-system/" + JobName("demo") + ", pod " + JobName("demo") + "-x7k2p Pending: Unschedulable: 0/9 nodes are available: 9 node(s) had untolerated taint"},
		{"image not pulled", pending(func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "upgrade", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "img"`}}}}
		}), `Pending: ImagePullBackOff: Back-off pulling image "img"`},
		{"no pod yet", nil, "Job kube-system/" + JobName("demo") + " has no pod yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := inClusterSession(serviceAccount)
			pl := inClusterPlan()
			pl.Nodes.Outdated, pl.Batches = 9, make([]plan.Batch, 3)
			if _, err := s.Jobs().Submit(ctx, pl, InCluster{Image: "img", ServiceAccount: "sa"}); err != nil {
				t.Fatal(err)
			}
			if tc.pod != nil {
				if _, err := c.CoreV1().Pods("kube-system").Create(ctx, tc.pod, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			run, err := s.Look(ctx, "demo")
			if err != nil {
				t.Fatal(err)
			}
			if left := run.Record.Left(); left != 9 {
				t.Errorf("left %d, want the plan's 9 outdated nodes", left)
			}
			jp := s.Jobs().SubmittedPod(ctx, run.Record)
			if jp == nil || !strings.Contains(jp.String(), tc.want) {
				t.Errorf("submitted pod %v, want %q", jp, tc.want)
			}
		})
	}
}
