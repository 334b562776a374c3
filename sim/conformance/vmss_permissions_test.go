package conformance

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/conformance"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/vmss"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/azurefake"
)

// vmssDocActions are docs/providers/vmss.md's actions: every run's, the
// plan's optional reads, and blue/green's.
func vmssDocActions(t *testing.T) (required, optional, blueGreen []string) {
	tables := azureDocTables(t, "vmss", 3)
	return tables[0], tables[1], tables[2]
}

// vmssScene is the fake with scale set "ng" of two instances on the old
// image, their nodes Ready, and the kubelet stand-in.
func vmssScene(t *testing.T) (*fake.Clientset, *azurefake.Server) {
	t.Helper()
	client := fake.NewClientset()
	conformance.StartKubelet(t, client)
	srv := startVMSS(t, client, azurefake.Options{}, 2, vmssOld)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if n, _ := client.CoreV1().Nodes().List(context.Background(), metaAll); len(n.Items) == 2 && conformance.Ready(&n.Items[0]) && conformance.Ready(&n.Items[1]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the scale set's nodes never became Ready")
		}
	}
	return client, srv
}

// vmssArgs are a run's arguments with strategy.
func vmssArgs(strategy string, extra ...string) []string {
	return vmssArgsImage(strategy, vmssNew, extra...)
}

// vmssArgsImage are a run's arguments with strategy to image.
func vmssArgsImage(strategy, image string, extra ...string) []string {
	out := []string{"ng", "--provider", vmss.Name, "--image", image, "--strategy", strategy, "--post-drain-wait", "0s", "--node-ready-timeout", "60s"}
	if strategy == "blue-green" {
		out = append(out, "--node-pool-soak", "0s")
	}
	return append(out, extra...)
}

// TestVMSSPermissionsOfEveryCall runs the provider against the fake, the
// caller holding a role of exactly the actions docs/providers/vmss.md
// lists: an eks run (its model PATCH, capacity raise, manualupgrade and
// DeleteInstances) and a blue/green run (green's creation, blue's
// deletion) finish, each request the fake saw (named by its Azure action)
// is documented, each documented action was used, and the docs' tables
// are exactly vmss.Calls (every run's, blue/green's). Blue/green runs
// without manualupgrade, which its plan does not ask for.
func TestVMSSPermissionsOfEveryCall(t *testing.T) {
	required, optional, forBlueGreen := vmssDocActions(t)
	var callsRequired, callsOptional, callsBlueGreen []string
	for _, c := range vmss.Calls {
		switch {
		case c.Optional:
			callsOptional = append(callsOptional, c.Action)
		case c.For == plan.CapNewGroups:
			callsBlueGreen = append(callsBlueGreen, c.Action)
		default:
			callsRequired = append(callsRequired, c.Action)
		}
	}
	if !slices.Equal(required, callsRequired) || !slices.Equal(optional, callsOptional) || !slices.Equal(forBlueGreen, callsBlueGreen) {
		t.Errorf("docs/providers/vmss.md lists %v, %v and %v; vmss.Calls %v, %v and %v", required, optional, forBlueGreen, callsRequired, callsOptional, callsBlueGreen)
	}
	documented := slices.Concat(required, optional, forBlueGreen)
	var made []string
	// The third run brings the instances to a model whose image they
	// already run (its userData changed): Compute's manualupgrade
	// reimages nothing then, the provider reimages.
	for _, strategy := range []string{"eks", "blue-green", "eks, the model's image"} {
		client, srv := vmssScene(t)
		role := azurefake.Role{Actions: documented}
		if strategy == "blue-green" { // blue/green never brings an instance to the latest model
			role.NotActions = []string{"Microsoft.Compute/virtualMachineScaleSets/manualUpgrade/action", "Microsoft.Compute/virtualMachineScaleSets/reimage/action"}
		}
		srv.SetRoles(role)
		args := vmssArgs(strategy, "--yes")
		if strategy != "blue-green" && strategy != "eks" {
			srv.ChangeUserData(vmssGroup, "ng", "# a new model, the same image")
			args = vmssArgsImage("eks", vmssOld, "--yes")
		}
		if out, errOut, code := plugin.Drive(context.Background(), client, "run", args...); code != plugin.ExitOK || strings.Contains(out+errOut, "AuthorizationFailed") {
			t.Fatalf("%s run with the documented actions: exit %d (want %d, nothing refused):\n%s%s", strategy, code, plugin.ExitOK, out, errOut)
		}
		assertEveryInstanceANode(t, client, srv)
		made = append(made, srv.Actions()...)
	}
	assertCallsAreTheDocs(t, "vmss", made, documented)
}

// assertEveryInstanceANode fails the test for an instance of scale set
// "ng" that has no Node: a machine left running whose kubelet will never
// register again (its Node deleted, the machine not reimaged).
func assertEveryInstanceANode(t *testing.T, client kubernetes.Interface, srv *azurefake.Server) {
	t.Helper()
	ins, _ := srv.ScaleSetInstances(vmssGroup, "ng")
	for _, in := range ins {
		if _, err := client.CoreV1().Nodes().Get(context.Background(), in.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("instance %s of scale set ng has no node after the run: %v", in.Name, err)
		}
	}
}

// TestVMSSPlanChecksPermissions: the plan asks Azure for the caller's
// permissions and names an action the caller's roles leave out for the
// chosen strategy; run refuses it before any write; Virtual Machine
// Contributor passes. Without the scale set's read, the plan cannot open
// the scale set at all: plan and run exit 2 with Azure's 403 naming it.
func TestVMSSPlanChecksPermissions(t *testing.T) {
	const manualUpgrade = "Microsoft.Compute/virtualMachineScaleSets/manualUpgrade/action"
	without := func(action string) azurefake.Role {
		return azurefake.Role{Actions: []string{"*"}, NotActions: []string{action}}
	}
	for _, tc := range []struct {
		name     string
		roles    []azurefake.Role
		strategy string
		missing  string // "" for none
		readless bool   // the scale set cannot be read: exit 2 before the plan
		onSet    bool   // the roles are assigned on the scale set alone
	}{
		{"Virtual Machine Contributor, eks", []azurefake.Role{azurefake.VMContributorRole}, "eks", "", false, false},
		{"Virtual Machine Contributor, blue/green", []azurefake.Role{azurefake.VMContributorRole}, "blue-green", "", false, false},
		{"AKS's role holds no scale set action", []azurefake.Role{azurefake.AKSContributorRole}, "surge", "Microsoft.Compute/virtualMachineScaleSets/read", true, false},
		{"a role without manualupgrade, eks", []azurefake.Role{without(manualUpgrade)}, "eks", manualUpgrade, false, false},
		{"a role without manualupgrade, blue/green: not asked", []azurefake.Role{without(manualUpgrade)}, "blue-green", "", false, false},
		{"notActions are no deny: a second role grants it", []azurefake.Role{without(manualUpgrade), azurefake.VMContributorRole}, "eks", "", false, false},
		{"a role without the scale set's delete, blue/green", []azurefake.Role{without("Microsoft.Compute/virtualMachineScaleSets/delete")}, "blue-green", "Microsoft.Compute/virtualMachineScaleSets/delete", false, false},
		{"a reader", []azurefake.Role{{Actions: []string{"*/read"}}}, "surge", "Microsoft.Compute/virtualMachineScaleSets/write", false, false},
		// ARM reads an operation's status at the subscription's location:
		// with a role on the resource alone "you can start the operation
		// but you can't track its status" (Learn, "Track asynchronous
		// Azure operations").
		{"Virtual Machine Contributor on the scale set alone", []azurefake.Role{azurefake.VMContributorRole}, "eks", "Microsoft.Compute/locations/operations/read", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, srv := vmssScene(t)
			srv.SetRoles(tc.roles...)
			if tc.onSet {
				srv.SetRoles()
				srv.AssignRole("/subscriptions/"+srv.Subscription()+"/resourceGroups/"+vmssGroup+"/providers/Microsoft.Compute/virtualMachineScaleSets/ng", tc.roles...)
			}
			ctx := context.Background()
			out, errOut, code := plugin.Drive(ctx, client, "plan", vmssArgs(tc.strategy)...)
			if tc.missing == "" {
				if code != plugin.ExitOK || strings.Contains(out, "missing-permission") {
					t.Fatalf("plan: exit %d, want %d and no missing permission:\n%s%s", code, plugin.ExitOK, out, errOut)
				}
				return
			}
			// plan shows its blockers and exits 0; run refuses them.
			planCode, runCode, says := plugin.ExitOK, plugin.ExitBlockers, []string{"missing-permission", tc.missing, vmss.Policy}
			if tc.readless {
				planCode, runCode, says = plugin.ExitUsage, plugin.ExitUsage, []string{"AuthorizationFailed", tc.missing}
			}
			if code != planCode || !containsAll(out+errOut, says) {
				t.Errorf("plan: exit %d, want %d saying %q:\n%s%s", code, planCode, says, out, errOut)
			}
			out, errOut, code = plugin.Drive(ctx, client, "run", vmssArgs(tc.strategy, "--yes")...)
			if code != runCode || !strings.Contains(out+errOut, tc.missing) {
				t.Errorf("run: exit %d, want %d naming %s:\n%s%s", code, runCode, tc.missing, out, errOut)
			}
			if ch := srv.ChangingCalls(); len(ch) > 0 {
				t.Errorf("refused runs changed the scale set: %v", ch)
			}
		})
	}
}

func containsAll(s string, subs []string) bool {
	return !slices.ContainsFunc(subs, func(sub string) bool { return !strings.Contains(s, sub) })
}

// TestVMSSScaleUpRefusedForTheQuotaPutsTheModelBack: a scale-up Compute
// refuses for the vCPU quota (409 OperationNotAllowed, Learn's "Resolve
// errors for resource quotas"), the plan's insufficient-quota ignored,
// ends the run at once naming the quota, with no node cordoned or drained
// and the scale set's model back at the image it had: Setup pointed it at
// the target before the scale-up. Before, the provider took the 409 for a
// busy scale set and waited it out, and then left the model at the target.
func TestVMSSScaleUpRefusedForTheQuotaPutsTheModelBack(t *testing.T) {
	client, srv := vmssScene(t)
	srv.SetQuota("cores", 12) // the two Standard_D4s_v5 use 8: no room for the surge
	before := srv.ScaleSetModel(vmssGroup, "ng")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, errOut, code := plugin.Drive(ctx, client, "run", vmssArgs("eks", "--yes", "--ignore-check", "insufficient-quota")...)
	if code == plugin.ExitOK || !strings.Contains(out+errOut, "exceeding approved cores quota") || !strings.Contains(out+errOut, "ask for more quota") {
		t.Errorf("run: exit %d, want a failure naming the quota:\n%s%s", code, out, errOut)
	}
	if after := srv.ScaleSetModel(vmssGroup, "ng"); !strings.HasPrefix(after, "image "+vmssOld+", capacity 2,") {
		t.Errorf("the refused run left the scale set at %s, was %s", after, before)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metaAll)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			t.Errorf("node %s cordoned by a run whose scale-up could not come", n.Name)
		}
	}
}

// TestVMSSPlanRefusesASurgeOverTheQuota: plan --detailed-exitcode reads the
// scale set's vCPU quotas (Usage - List) and its VM size's vCPUs (Resource
// Skus - List) and refuses a surge the quota cannot hold with
// insufficient-quota (exit 5), with the scale set's model and capacity as
// they were.
func TestVMSSPlanRefusesASurgeOverTheQuota(t *testing.T) {
	client, srv := vmssScene(t)
	srv.SetQuota("cores", 12) // the two Standard_D4s_v5 use 8: no room for a surge of 2
	before := srv.ScaleSetModel(vmssGroup, "ng")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, errOut, code := plugin.Drive(ctx, client, "plan", vmssArgs("surge", "--max-surge", "2", "--detailed-exitcode")...)
	if code != plugin.ExitBlockers || !strings.Contains(out+errOut, "insufficient-quota") || !strings.Contains(out+errOut, "--max-surge 1 fits") {
		t.Errorf("plan: exit %d, want %d with insufficient-quota and the surge that fits:\n%s%s", code, plugin.ExitBlockers, out, errOut)
	}
	if after := srv.ScaleSetModel(vmssGroup, "ng"); after != before {
		t.Errorf("the plan changed the scale set: %s, was %s", after, before)
	}
}
