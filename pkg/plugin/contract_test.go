package plugin

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	// A new cloud is its own package and this one import line (the real
	// ones' are in providers.go): it registers itself and binds its flags.
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin/internal/fakecloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// The provider contract, shown with a cloud the tree has never heard of:
// fakecloud declares each capability with a kind of group of its own, and
// plan and run go through every one of them with nothing in the plugin,
// the planner or the engine naming it.

// contractGroup is the fake cloud's group of node group "ng": three nodes
// in two zones, on image img-a; --fake-image img-b is the target.
const contractGroup = "pool"

// newContractCluster is a fake cluster whose nodes are the machines of a
// fake cloud's group of kind k.
func newContractCluster(t *testing.T, k fakecloud.Kind, launches string) (kubernetes.Interface, *fakecloud.World) {
	t.Helper()
	client := fake.NewClientset()
	w := fakecloud.New(client)
	t.Cleanup(w.Close)
	spec := fakecloud.GroupSpec{Name: contractGroup, NodeGroup: "ng", Kind: k, Zones: []string{"zone-a", "zone-b"}, Nodes: 3, Launches: launches}
	if err := w.AddGroup(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	return client, w
}

// contractArgs are the flags every command line here gives: the node
// group (found by the provider's own label), the target under the
// provider's own flag, no post-drain wait.
func contractArgs(extra ...string) []string {
	return append([]string{"ng", "--fake-image", "img-b", "--post-drain-wait", "0s", "--seed", "1"}, extra...)
}

// runContract runs "run" (or, planOnly, "plan": the same options as a
// client dry run, which is what NewCmdPlan builds) with args against
// client, as the cobra command does once connected.
func runContract(ctx context.Context, client kubernetes.Interface, planOnly bool, args ...string) (stdout, stderr string, code int) {
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	cmd, o := newCmdRun(genericclioptions.NewConfigFlags(false), streams)
	o.client, o.planOnly = client, planOnly
	if !planOnly {
		args = append(args, "--yes", "--node-ready-timeout", "30s", "--drain-timeout", "30s")
	}
	return executeCmd(ctx, cmd, out, errOut, args)
}

// executeCmd runs cmd with args as the plugin does, its output in out and
// errOut.
func executeCmd(ctx context.Context, cmd *cobra.Command, out, errOut *bytes.Buffer, args []string) (stdout, stderr string, code int) {
	return executeDriven(ctx, cmd, out, errOut, args)
}

// control runs cancel, resume, rollback or complete on node group "ng".
func control(t *testing.T, client kubernetes.Interface, action string) (string, int) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o := &ControlOptions{IOStreams: streams, action: action, client: client, NodeGroup: "ng", StateNamespace: state.DefaultNamespace, Yes: true}
	code := PrintError(errOut, o.Run(context.Background()))
	return out.String() + errOut.String(), code
}

// nodeImages maps the cluster's nodes to their image label, and counts
// those cordoned.
func nodeImages(t *testing.T, client kubernetes.Interface) (map[string]string, int) {
	t.Helper()
	list, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	images, cordoned := map[string]string{}, 0
	for _, n := range list.Items {
		images[n.Name] = n.Labels[fakecloud.ImageLabel]
		if n.Spec.Unschedulable || slices.ContainsFunc(n.Spec.Taints, func(tn corev1.Taint) bool { return tn.Effect == corev1.TaintEffectNoSchedule }) {
			cordoned++
		}
	}
	return images, cordoned
}

// inOrder checks that calls has a call beginning with each of want, in
// that order (other calls may come between).
func inOrder(t *testing.T, calls, want []string) {
	t.Helper()
	i := 0
	for _, c := range calls {
		if i < len(want) && strings.HasPrefix(c, want[i]) {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("the cloud was not called %q (then %q) in order; calls:\n%s", want[i], want[i+1:], strings.Join(calls, "\n"))
	}
}

// finishedRecord checks the run's record says it finished, with the
// nodes done.
func finishedRecord(t *testing.T, client kubernetes.Interface, done []string) *state.Record {
	t.Helper()
	rec, err := (&state.Store{Client: client, Namespace: state.DefaultNamespace}).Load(context.Background(), "ng")
	if err != nil || rec == nil {
		t.Fatalf("no record of the run: %v", err)
	}
	if rec.FinishedAt == nil || rec.LastError != "" {
		t.Errorf("record not finished: phase %s, error %q", rec.Phase, rec.LastError)
	}
	for _, n := range done {
		if !slices.Contains(rec.Done, n) {
			t.Errorf("record's done nodes %q lack %q", rec.Done, n)
		}
	}
	return rec
}

// TestNewProviderRunsEveryCapability: for each kind of the fake cloud's
// groups and each strategy it serves, plan names the strategy, the group
// and the outdated nodes and changes nothing; run ends with every node on
// the target, the cloud called in the order the capability implies, the
// group back at its sizes and the record finished.
func TestNewProviderRunsEveryCapability(t *testing.T) {
	t.Parallel()
	outdated := []string{"pool-1", "pool-2", "pool-3"}
	for _, tc := range []struct {
		name     string
		kind     fakecloud.Kind
		launches string   // what the group launches before the run ("1": not the target)
		args     []string // the strategy's flags
		plan     []string // the plan says these too
		notPlan  []string // and not these: phases the run skips
		calls    []string // the cloud's changes, in this order
		never    []string // calls that must not happen
		group    string   // the group left, at the sizes before the run
	}{
		{name: "Remover/eks", kind: fakecloud.Remover, launches: "2", args: []string{"--strategy", "eks"},
			plan: []string{"1. Taint", "2. Upgrade", "Scale-up:        none"}, notPlan: []string{"Setup", "ScaleUp", "ScaleDown", "desired 3 -> 7"},
			calls: []string{"RemoveNode", "RemoveNode", "RemoveNode"}, never: []string{"Setup", "SetDesiredAndMax"}},
		{name: "Remover/surge without surge nodes", kind: fakecloud.Remover, launches: "2", args: []string{"--strategy", "surge", "--max-surge", "0", "--max-unavailable", "1"},
			plan: []string{"1. Surge"}, notPlan: []string{"Setup"},
			calls: []string{"RemoveNode", "RemoveNode", "RemoveNode"}, never: []string{"Setup", "SetDesiredAndMax"}},
		{name: "Group/eks", kind: fakecloud.Resizable, args: []string{"--strategy", "eks"},
			plan:  []string{"1. Setup", "2. ScaleUp", "5. ScaleDown"},
			calls: []string{"Setup 2", "SetDesiredAndMax 7 8", "RemoveNode", "RemoveNode", "RemoveNode", "Shrink", "Shrink", "Shrink", "Shrink", "SetMax 4"}, group: contractGroup},
		{name: "Group/surge", kind: fakecloud.Resizable, args: []string{"--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0"},
			calls: []string{"Setup 2", "SetDesiredAndMax 4 5", "Shrink", "SetDesiredAndMax 4 5", "Shrink", "SetDesiredAndMax 4 5", "Shrink", "SetMax 4"}, never: []string{"RemoveNode"}, group: contractGroup},
		{name: "Rebalancer/eks", kind: fakecloud.Rebalancing, args: []string{"--strategy", "eks"}, plan: []string{"FakeRebalance"},
			calls: []string{"Setup 2", "SetDesiredAndMax", "FakeRebalance held=true", "Shrink", "FakeRebalance held=false"}, never: []string{"FakeRebalance ran unheld"}, group: contractGroup},
		{name: "DefaultFollower/eks", kind: fakecloud.FollowsDefault, args: []string{"--strategy", "eks"}, plan: []string{"the template's default"},
			calls: []string{"Setup 2", "SetTemplateDefault 2", "SetDesiredAndMax", "RemoveNode", "Shrink"}, group: contractGroup},
		{name: "SelfUpdater/eks", kind: fakecloud.SelfUpdating, args: []string{"--strategy", "eks"},
			calls: []string{"HoldUpdates", "Setup 2", "SetDesiredAndMax", "RemoveNode", "Shrink", "RestoreUpdates PROACTIVE"}, never: []string{"replaced"}, group: contractGroup},
		{name: "Deregisterer and Departures/eks", kind: fakecloud.LoadBalanced, args: []string{"--strategy", "eks"}, plan: []string{"pool-lb"},
			calls: []string{"Setup 2", "SetDesiredAndMax", "Deregister", "RemoveNode", "Deregister", "RemoveNode", "Deregister", "RemoveNode", "Deregister", "Shrink", "Leaving"},
			never: []string{"cut connections"}, group: contractGroup},
		{name: "BlueGreen/blue-green", kind: fakecloud.NewGroups, args: []string{"--strategy", "blue-green", "--node-pool-soak", "0s"}, plan: []string{"pool-v2"},
			calls: []string{"PrepareTarget 2", "CheckQuota", "SetGroupSizes pool min 3, desired 3, max 3", "CreateGreen pool-v2 version 2, min 3, desired 3, max 4", "DeleteGroup pool"}, group: "pool-v2"},
		{name: "ManagedUpdater/eks", kind: fakecloud.Managed, args: []string{"--strategy", "eks", "--max-unavailable", "2", "--fake-soak", "30s"}, plan: []string{"fake service", "cancel, resume, rollback"},
			calls: []string{"Configure strategy ROLLING, maxUnavailable 2, soak 30s", "StartUpdate upd-", "Configure " + settingsBefore}},
		{name: "ManagedUpdater/surge", kind: fakecloud.Managed, args: []string{"--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0"}, plan: []string{"fake service"},
			calls: []string{"Configure strategy ROLLING, maxUnavailable 0, maxSurge 1, soak 0s", "StartUpdate upd-", "Configure " + settingsBefore}},
		{name: "ManagedUpdater/blue-green", kind: fakecloud.Managed, args: []string{"--strategy", "blue-green", "--node-pool-soak", "0s"}, plan: []string{"fake service", "complete"},
			calls: []string{"Configure strategy BLUE_GREEN, maxUnavailable 1, soak 0s", "StartUpdate upd-", "Configure " + settingsBefore}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, w := newContractCluster(t, tc.kind, tc.launches)
			before := w.Sizes(contractGroup)
			args := contractArgs(tc.args...)
			// A cloud without regions is in none: the plan says nothing of it.
			never := append([]string{"in <none>"}, tc.notPlan...)
			planChangesNothing(t, client, w, args, append([]string{tc.args[1], contractGroup, "img-b"}, append(outdated, tc.plan...)...), never)
			if stdout, stderr, code := runContract(context.Background(), client, false, args...); code != ExitOK {
				t.Fatalf("run: exit %d: %s\n%s", code, stderr, stdout)
			}
			allOn(t, client, "img-b", outdated)
			calledInOrder(t, w.Calls(), tc.calls, tc.never)
			if tc.group != "" {
				if got := w.Groups(); !slices.Equal(got, []string{tc.group}) {
					t.Errorf("groups %q after the run, want %q", got, tc.group)
				} else if after := w.Sizes(tc.group); after != before {
					t.Errorf("group %q at %s after the run, want %s as before", tc.group, after, before)
				}
			}
			if tc.kind == fakecloud.Managed && w.Settings(contractGroup).String() != settingsBefore {
				t.Errorf("update settings left at %s, want %s as before", w.Settings(contractGroup), settingsBefore)
			}
			finishedRecord(t, client, outdated)
		})
	}
}

// settingsBefore are the managed group's update settings before a run.
const settingsBefore = "strategy ROLLING, maxUnavailable 1, soak 0s"

// planChangesNothing plans args and checks that the plan names each of
// want and none of never, and that nothing changed in the cloud.
func planChangesNothing(t *testing.T, client kubernetes.Interface, w *fakecloud.World, args, want, never []string) {
	t.Helper()
	stdout, stderr, code := runContract(context.Background(), client, true, args...)
	if code != ExitOK {
		t.Fatalf("plan: exit %d: %s", code, stderr)
	}
	for _, s := range want {
		if !strings.Contains(stdout, s) {
			t.Errorf("the plan does not name %q:\n%s", s, stdout)
		}
	}
	for _, s := range never {
		if strings.Contains(stdout, s) {
			t.Errorf("the plan says %q:\n%s", s, stdout)
		}
	}
	if calls := w.Calls(); len(calls) > 0 {
		t.Fatalf("plan changed the cloud: %q", calls)
	}
}

// allOn checks that the cluster runs as many nodes as there were before
// the run, all in service on image, none of them one of gone.
func allOn(t *testing.T, client kubernetes.Interface, image string, gone []string) {
	t.Helper()
	images, cordoned := nodeImages(t, client)
	for _, n := range gone {
		if _, ok := images[n]; ok {
			t.Errorf("outdated node %q is still there", n)
		}
	}
	for n, img := range images {
		if img != image {
			t.Errorf("node %q runs %s, want %s", n, img, image)
		}
	}
	if len(images) != 3 || cordoned > 0 {
		t.Errorf("%d nodes (%d cordoned or tainted) after the run, want 3 in service: %v", len(images), cordoned, images)
	}
}

// calledInOrder checks the cloud's calls: want in this order, never none.
func calledInOrder(t *testing.T, calls, want, never []string) {
	t.Helper()
	inOrder(t, calls, want)
	for _, c := range calls {
		for _, bad := range never {
			if strings.HasPrefix(c, bad) {
				t.Errorf("the cloud was called %q", c)
			}
		}
	}
}

// TestNewProviderRefusesWhatItCannotDo: a strategy the provider's
// interfaces do not serve, or a bad value of its own flag, is refused at
// plan time naming the provider or the flag, exit 2, with nothing changed
// in the cluster or the cloud.
func TestNewProviderRefusesWhatItCannotDo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		kind fakecloud.Kind
		args []string
		want []string
	}{
		{name: "blue-green, machines removal only", kind: fakecloud.Remover, args: contractArgs("--strategy", "blue-green"),
			want: []string{"--strategy blue-green needs a provider that creates node groups", "--provider fakecloud"}},
		{name: "eks, groups made but never resized", kind: fakecloud.NewGroups, args: contractArgs("--strategy", "eks"),
			want: []string{"--strategy eks needs a provider that removes nodes", "--provider fakecloud"}},
		{name: "surge nodes, machines removal only", kind: fakecloud.Remover, args: contractArgs("--strategy", "surge", "--max-surge", "1"),
			want: []string{"--max-surge 1 needs a provider that creates nodes", "--provider fakecloud"}},
		{name: "a strategy the service does not run", kind: fakecloud.Managed, args: contractArgs("--strategy", "autoscaled-blue-green"),
			want: []string{"--strategy autoscaled-blue-green needs a provider that creates node groups", "--provider fakecloud"}},
		{name: "a bad value of the provider's flag", kind: fakecloud.Resizable, args: contractArgs("--fake-image", "ubuntu"),
			want: []string{`invalid --fake-image "ubuntu"`}},
		{name: "the provider's flag with another provider", kind: fakecloud.Resizable, args: contractArgs("--provider", "none", "--target-label", "a=b"),
			want: []string{"--fake-image needs --provider fakecloud"}},
		{name: "the provider's green group with a strategy that takes none", kind: fakecloud.NewGroups, args: contractArgs("--"+fakecloud.FlagGreen, "pool-x"),
			want: []string{"--fake-green needs --strategy blue-green or autoscaled-blue-green; --strategy eks does not take it"}},
		{name: "the provider's green group and a green selector", kind: fakecloud.NewGroups,
			args: contractArgs("--strategy", "blue-green", "--"+fakecloud.FlagGreen, "pool-x", "--green-selector", "a=b"),
			want: []string{"--fake-green and --green-selector cannot be used together"}},
		{name: "the provider's green group with another provider", kind: fakecloud.NewGroups,
			args: []string{"ng", "--provider", "none", "--target-label", "a=b", "--strategy", "blue-green", "--" + fakecloud.FlagGreen, "pool-x"},
			want: []string{"--fake-green needs --provider fakecloud, not --provider none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, w := newContractCluster(t, tc.kind, "")
			nodesBefore, _ := nodeImages(t, client)
			for _, planOnly := range []bool{true, false} {
				stdout, stderr, code := runContract(context.Background(), client, planOnly, tc.args...)
				if code != ExitUsage || strings.Count(stderr, "\n") != 1 {
					t.Fatalf("plan only %v: exit %d, want %d and one line: %s%s", planOnly, code, ExitUsage, stderr, stdout)
				}
				for _, want := range tc.want {
					if !strings.Contains(stderr, want) {
						t.Errorf("plan only %v: %q does not say %q", planOnly, stderr, want)
					}
				}
				if strings.Contains(stderr, "aws") {
					t.Errorf("plan only %v: %q advises aws for a fakecloud group", planOnly, stderr)
				}
			}
			if calls := w.Calls(); len(calls) > 0 {
				t.Errorf("the cloud was changed: %q", calls)
			}
			nodesAfter, cordoned := nodeImages(t, client)
			if fmt.Sprint(nodesAfter) != fmt.Sprint(nodesBefore) || cordoned > 0 {
				t.Errorf("nodes %v (%d cordoned) after the refusal, want %v", nodesAfter, cordoned, nodesBefore)
			}
			if rec, err := (&state.Store{Client: client, Namespace: state.DefaultNamespace}).Load(context.Background(), "ng"); err != nil || rec != nil {
				t.Errorf("a record was left: %+v (%v)", rec, err)
			}
		})
	}
}

// TestNewProviderServiceControls: the managed update's controls reach the
// fake service through the plugin's commands: cancel stops a live run
// (exit 8) and resume or rollback finishes it; complete ends a soak.
func TestNewProviderServiceControls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		args   []string
		waitOn string   // the service phase the control is sent in
		steps  []string // the controls, in turn
		calls  []string
		image  string // what every node runs after
	}{
		{name: "cancel, then resume", args: []string{"--strategy", "eks", "--max-unavailable", "2"}, waitOn: "held", steps: []string{"cancel", "resume"},
			calls: []string{"Configure strategy ROLLING, maxUnavailable 2, soak 0s", "StartUpdate upd-", "CancelUpdate upd-", "ResumeUpdate upd-"}, image: "img-b"},
		{name: "cancel, then rollback", args: []string{"--strategy", "eks", "--max-unavailable", "2"}, waitOn: "held", steps: []string{"cancel", "rollback"},
			calls: []string{"Configure strategy ROLLING, maxUnavailable 2, soak 0s", "StartUpdate upd-", "CancelUpdate upd-", "RollbackUpdate upd-"}, image: "img-a"},
		{name: "complete ends the soak", args: []string{"--strategy", "blue-green", "--fake-soak", "1h"}, waitOn: "Soaking", steps: []string{"complete"},
			calls: []string{"Configure strategy BLUE_GREEN, maxUnavailable 1, soak 1h", "StartUpdate upd-", "CompleteUpdate upd-"}, image: "img-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, w := newContractCluster(t, fakecloud.Managed, "")
			w.HoldAfter(1)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			type result struct {
				out  string
				code int
			}
			ran := make(chan result, 1)
			go func() {
				stdout, stderr, code := runContract(ctx, client, false, contractArgs(tc.args...)...)
				ran <- result{stdout + stderr, code}
			}()
			waitForPhase(t, w, tc.waitOn)
			out, code := control(t, client, tc.steps[0])
			if code != ExitOK {
				t.Fatalf("%s: exit %d: %s", tc.steps[0], code, out)
			}
			wantRun := ExitOK
			if tc.steps[0] == "cancel" {
				wantRun = ExitPaused
			}
			if r := <-ran; r.code != wantRun {
				t.Fatalf("run: exit %d, want %d: %s", r.code, wantRun, r.out)
			}
			for _, step := range tc.steps[1:] {
				if out, code := control(t, client, step); code != ExitOK {
					t.Fatalf("%s: exit %d: %s", step, code, out)
				}
			}
			inOrder(t, w.Calls(), append(tc.calls, "Configure "+settingsBefore))
			allOn(t, client, tc.image, nil)
			// A rollback's end is "rolled back", as docs/controls.md says,
			// not "aborted".
			want := StatusFinished
			if tc.image == "img-a" {
				want = StatusRolledBack
			}
			if got := describeRun(finishedRecord(t, client, nil), false, "", time.Now()).Status; got != want {
				t.Errorf("status %q, want %q", got, want)
			}
		})
	}
}

// waitForPhase waits until the fake service's update is in phase.
func waitForPhase(t *testing.T, w *fakecloud.World, phase string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if w.Phase() == phase {
			return
		}
	}
	t.Fatalf("the service's update never reached phase %q (calls %q)", phase, w.Calls())
}

// TestNewProviderMachinesLeftRunning: provider none would delete the Node
// objects of the new cloud's machines, which its group keeps: the plan
// blocks it naming the group and the provider to use, found by asking the
// registered clouds (no scheme list names fakecloud).
func TestNewProviderMachinesLeftRunning(t *testing.T) {
	t.Parallel()
	client, w := newContractCluster(t, fakecloud.Resizable, "")
	args := []string{"ng", "--provider", "none", "--target-label", fakecloud.ImageLabel + "=img-b", "--seed", "1"}
	stdout, stderr, code := runContract(context.Background(), client, true, args...)
	if code != ExitOK {
		t.Fatalf("plan: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"machine-left-running", `fake machines of fake group "pool"`, "use --provider fakecloud"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the plan does not say %q:\n%s", want, stdout)
		}
	}
	unchanged(t, w)
}

// checkContract runs "check" with args against client.
func checkContract(client kubernetes.Interface, args ...string) (stdout, stderr string, code int) {
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	cmd, o := newCmdCheck(genericclioptions.NewConfigFlags(false), streams)
	o.client = client
	return executeCmd(context.Background(), cmd, out, errOut, args)
}

// TestNewProviderTargetFlags: check takes a target given by any of the
// provider's target flags, its own settings that name one too, and
// without one names them.
func TestNewProviderTargetFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "image", args: []string{"ng", "--fake-image", "img-b"}, code: ExitOK, want: "No findings for the 3 outdated nodes"},
		{name: "version", args: []string{"ng", "--fake-version", "2"}, code: ExitOK, want: "No findings for the 3 outdated nodes"},
		{name: "a setting that names the target", args: []string{"ng", "--fake-release", "img-b"}, code: ExitOK, want: "No findings for the 3 outdated nodes"},
		{name: "no target, the provider given", args: []string{"ng", "--provider", "fakecloud"}, code: ExitUsage,
			want: "no target given: check audits the nodes that are not on the target; use --target-label key=value (the labels up-to-date nodes carry), or --fake-image, --fake-version or --fake-release with --provider fakecloud\n"},
		{name: "no target, every provider's", args: []string{"ng"}, code: ExitUsage,
			want: "or --orchestrator-version or --node-image with --provider aks; --ami, --launch-template-version, --kubernetes-version or --release-version with --provider aws; --fake-image, --fake-version or --fake-release with --provider fakecloud;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, w := newContractCluster(t, fakecloud.Resizable, "")
			stdout, stderr, code := checkContract(client, tc.args...)
			if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
				t.Errorf("check %q: exit %d, want %d and %q:\n%s%s", tc.args, code, tc.code, tc.want, stdout, stderr)
			}
			unchanged(t, w)
		})
	}
}

// TestNewProviderUnfinishedRunElsewhere: a node group's unfinished run on
// another group of the cloud is refused, naming the provider's own flag
// that picks that group.
func TestNewProviderUnfinishedRunElsewhere(t *testing.T) {
	t.Parallel()
	client, w := newContractCluster(t, fakecloud.Resizable, "")
	ctx := context.Background()
	if err := w.AddGroup(ctx, fakecloud.GroupSpec{Name: "other", NodeGroup: "ng-other", Kind: fakecloud.Resizable, Zones: []string{"zone-a"}, Nodes: 1}); err != nil {
		t.Fatal(err)
	}
	rec := &state.Record{NodeGroup: "ng", StartedAt: time.Now().UTC().Truncate(time.Second),
		Cloud: &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: fakecloud.Name, Group: "other"}}}
	if err := (&state.Store{Client: client, Namespace: state.DefaultNamespace}).Save(ctx, rec); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runContract(ctx, client, false, contractArgs("--fake-group", contractGroup)...)
	want := `node group "ng" has an unfinished run on fakecloud group "other"; finish it with --provider fakecloud --fake-group other`
	if code != ExitUsage || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, want %d and %q: %s", code, ExitUsage, want, stderr)
	}
	unchanged(t, w)
}

// unchanged checks that nothing changed in the cloud.
func unchanged(t *testing.T, w *fakecloud.World) {
	t.Helper()
	if calls := w.Calls(); len(calls) > 0 {
		t.Errorf("the cloud was changed: %q", calls)
	}
}

// TestNewProviderPlanFileKeepsItsSettings: run --plan-file asks the
// provider for what the plan was made with, its own settings included.
func TestNewProviderPlanFileKeepsItsSettings(t *testing.T) {
	t.Parallel()
	client, w := newContractCluster(t, fakecloud.Managed, "")
	ctx := context.Background()
	stdout, stderr, code := runContract(ctx, client, true, contractArgs("--fake-soak", "30s", "-o", "json")...)
	if code != ExitOK {
		t.Fatalf("plan: exit %d: %s", code, stderr)
	}
	file := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(file, []byte(stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := runContract(ctx, client, false, "ng", "--plan-file", file); code != ExitOK {
		t.Fatalf("run --plan-file: exit %d: %s\n%s", code, stderr, stdout)
	}
	inOrder(t, w.Calls(), []string{"Configure strategy ROLLING, maxUnavailable 1, soak 30s", "StartUpdate upd-", "Configure " + settingsBefore})
	allOn(t, client, "img-b", []string{"pool-1", "pool-2", "pool-3"})
	// Resume and rollback repeat the run from its record's request.
	if rec := finishedRecord(t, client, nil); rec.Request == nil || rec.Request.Cloud.Options["fake-soak"] != "30s" {
		t.Errorf("the record's request %+v lacks --fake-soak 30s", rec.Request)
	}
}

// TestNoCloudOwnsTheNodes: nodes of no registered cloud, with no target
// label, are refused naming every registered cloud's --provider, the new
// one too.
func TestNoCloudOwnsTheNodes(t *testing.T) {
	t.Parallel()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{fakecloud.NodeGroupLabel: "ng"}}}
	client := fake.NewClientset(node)
	_, stderr, code := runContract(context.Background(), client, true, "ng", "--seed", "1")
	want := "or the --provider of the cloud whose group keeps the nodes (aks, aws, fakecloud, gce, gke, karpenter or vmss)\n"
	if code != ExitUsage || !strings.HasSuffix(stderr, want) {
		t.Errorf("exit %d, want %d and %q: %s", code, ExitUsage, want, stderr)
	}
}

// TestNewProviderGreenGroupFlag: the provider's own flag naming an
// existing green group reaches the request's neutral field: the plan
// uses that group as green instead of making one.
func TestNewProviderGreenGroupFlag(t *testing.T) {
	t.Parallel()
	client, w := newContractCluster(t, fakecloud.NewGroups, "")
	if err := w.AddGroup(context.Background(), fakecloud.GroupSpec{Name: "given", NodeGroup: "ng-given", Kind: fakecloud.NewGroups, Zones: []string{"zone-a"}, Launches: "2"}); err != nil {
		t.Fatal(err)
	}
	args := contractArgs("--strategy", "blue-green", "--"+fakecloud.FlagGreen, "given", "--node-pool-soak", "0s")
	planChangesNothing(t, client, w, args, []string{"1. CreateGreen fake group given (given)"}, []string{"pool-v2"})
}

// TestRunAfterAbortWithNothingToDo: abort late in a run (its scale-down)
// can leave every node on the target; the next run finds nothing to do,
// and the record says the group is upgraded, not "aborted".
func TestRunAfterAbortWithNothingToDo(t *testing.T) {
	client, _ := newContractCluster(t, fakecloud.Resizable, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := &state.Store{Client: client, Namespace: state.DefaultNamespace}
	aborted := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	rec := recordFor("ng")
	rec.Phase, rec.InFlight, rec.FinishedAt, rec.AbortedAt = "ScaleDown", nil, &aborted, &aborted
	if err := store.Save(ctx, rec); err != nil {
		t.Fatal(err)
	}
	// The nodes run img-a: the target of this run.
	stdout, stderr, code := runContract(ctx, client, false, "ng", "--fake-image", "img-a", "--post-drain-wait", "0s")
	if code != ExitOK || !strings.Contains(stdout, "Nothing to do") {
		t.Fatalf("run: exit %d, want %d with nothing to do:\n%s%s", code, ExitOK, stdout, stderr)
	}
	got, err := store.Load(ctx, "ng")
	if err != nil {
		t.Fatal(err)
	}
	if s := describeRun(got, false, "", time.Now()); s.Status != StatusFinished {
		t.Errorf("status %q, want %q (note %q)", s.Status, StatusFinished, got.Note)
	}
}

// TestStatusNamesAServiceUpdateTarget: status of a run a service carried
// out names the group and what the update moved it to, as it does of a
// cloud group's (a GKE node pool's nodes carry no label that says it).
func TestStatusNamesAServiceUpdateTarget(t *testing.T) {
	t.Parallel()
	client, _ := newContractCluster(t, fakecloud.Managed, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if stdout, stderr, code := runContract(ctx, client, false, contractArgs("--strategy", "eks", "--max-unavailable", "2")...); code != ExitOK {
		t.Fatalf("run: exit %d:\n%s%s", code, stdout, stderr)
	}
	out, stderr, code := runStatus(t, client, "ng", "-o", "wide")
	if code != ExitOK {
		t.Fatalf("status: exit %d: %s", code, stderr)
	}
	for _, want := range []string{`ng: fake service "pool", to image img-b; update upd-`, "  image img-b  "} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

// TestNewProviderAfterAnUnheardStart: a run stopped after the service
// started its update, before the run heard (and recorded) the update's
// ID. What comes next finds the update under way (cloud.UpdateFinder)
// and acts on it: abort leaves the run's update settings to it, saying
// so, rather than putting the settings of before back under it; the run
// again follows it and starts none; cancel cancels it rather than saying
// no update has started.
func TestNewProviderAfterAnUnheardStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// hold stops the service's update after a node, until cancelled.
		hold  bool
		check func(t *testing.T, client kubernetes.Interface, w *fakecloud.World)
	}{
		{name: "abort", hold: true, check: abortLeavesTheUnheardUpdate},
		{name: "run again", check: func(t *testing.T, client kubernetes.Interface, _ *fakecloud.World) {
			stdout, stderr, code := runContract(context.Background(), client, false, unheardArgs...)
			if code != ExitOK {
				t.Fatalf("the run again: exit %d: %s\n%s", code, stderr, stdout)
			}
			if !strings.Contains(stdout, "following fake service update upd-") || strings.Contains(stdout, "started towards") {
				t.Errorf("the run again does not say it follows the update under way:\n%s", stdout)
			}
			allOn(t, client, "img-b", nil)
			finishedRecord(t, client, nil)
		}},
		{name: "cancel", hold: true, check: func(t *testing.T, client kubernetes.Interface, w *fakecloud.World) {
			if out, code := control(t, client, "cancel"); code != ExitOK || !strings.Contains(out, "cancelled the fake service's update upd-") {
				t.Fatalf("cancel: exit %d: %s", code, out)
			}
			inOrder(t, w.Calls(), []string{"StartUpdate upd-", "CancelUpdate upd-"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, w := newContractCluster(t, fakecloud.Managed, "")
			if tc.hold {
				w.HoldAfter(1)
			}
			w.LoseStartAnswer(fmt.Errorf("connection reset by peer"))
			if _, stderr, code := runContract(context.Background(), client, false, unheardArgs...); code == ExitOK {
				t.Fatalf("run: exit 0, want the lost answer: %s", stderr)
			}
			inOrder(t, w.Calls(), []string{"Configure strategy ROLLING, maxUnavailable 2", "StartUpdate upd-"})
			tc.check(t, client, w)
		})
	}
}

// unheardArgs are the run of TestNewProviderAfterAnUnheardStart.
var unheardArgs = contractArgs("--strategy", "eks", "--max-unavailable", "2")

// abortLeavesTheUnheardUpdate aborts the run and checks the update found
// keeps the run's settings, and is recorded.
func abortLeavesTheUnheardUpdate(t *testing.T, client kubernetes.Interface, w *fakecloud.World) {
	out, stderr, code := runAbort(t, client, AbortOptions{Yes: true})
	if code != ExitOK {
		t.Fatalf("abort: exit %d: %s\n%s", code, stderr, out)
	}
	if calls := w.Calls(); slices.Contains(calls, "Configure "+settingsBefore) {
		t.Errorf("abort put the settings of before back while the update runs; calls:\n%s", strings.Join(calls, "\n"))
	}
	if !strings.Contains(out+stderr, "still runs: its update settings stay the run's until it ends") {
		t.Errorf("abort does not say the update still runs:\n%s%s", out, stderr)
	}
	rec, err := (&state.Store{Client: client, Namespace: state.DefaultNamespace}).Load(context.Background(), "ng")
	if err != nil || rec == nil || rec.Managed == nil || !strings.HasPrefix(rec.Managed.UpdateID, "upd-") {
		t.Errorf("record %+v %v: want the update found recorded", rec, err)
	}
}
