package conformance

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aks"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/conformance"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/azurefake"
)

// azureDocTables reads the actions of the tables of the "Azure
// permissions" section of docs/providers/<page>.md, a list per table in
// order; it wants tables of them.
func azureDocTables(t *testing.T, page string, tables int) [][]string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "providers", page+".md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "## Azure permissions\n")
	section, _, _ = strings.Cut(section, "\n## ")
	var out [][]string
	for line := range strings.SplitSeq(section, "\n") {
		if line == "| action | call |" {
			out = append(out, nil)
		}
		if rest, ok := strings.CutPrefix(line, "| `"); ok && len(out) > 0 {
			action, _, _ := strings.Cut(rest, "`")
			out[len(out)-1] = append(out[len(out)-1], action)
		}
	}
	if len(out) != tables || slices.ContainsFunc(out, func(a []string) bool { return len(a) == 0 }) {
		t.Fatalf("docs/providers/%s.md's Azure permissions list not %d tables of actions: %v", page, tables, out)
	}
	return out
}

// assertCallsAreTheDocs wants every action the provider made (but the
// permissions list's own) documented on docs/providers/<provider>.md, and
// every documented one made.
func assertCallsAreTheDocs(t *testing.T, provider string, made, documented []string) {
	t.Helper()
	for _, a := range made {
		if a != "Microsoft.Authorization/permissions/read" && !slices.Contains(documented, a) {
			t.Errorf("the provider calls %s, which docs/providers/%s.md does not list: add it there and to %s.Calls", a, provider, provider)
		}
	}
	for _, a := range documented {
		if !slices.Contains(made, a) {
			t.Errorf("docs/providers/%s.md lists %s, which the provider never called (made %v)", provider, a, made)
		}
	}
}

// docActions are docs/providers/aks.md's actions: every run's, the plan's
// optional reads, and blue/green's.
func docActions(t *testing.T) (required, optional, blueGreen []string) {
	tables := azureDocTables(t, "aks", 3)
	return tables[0], tables[1], tables[2]
}

var metaAll = metav1.ListOptions{}

// aksScene is the fake with the conformance pool of three nodes and the
// kubelet stand-in.
func aksScene(t *testing.T) (*fake.Clientset, *azurefake.Server) {
	t.Helper()
	client := fake.NewClientset()
	conformance.StartKubelet(t, client)
	srv := startAKS(t, client, azurefake.Options{}, 3)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if n, _ := client.CoreV1().Nodes().List(context.Background(), metaAll); len(n.Items) == 3 && conformance.Ready(&n.Items[0]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pool's nodes never became Ready")
		}
	}
	return client, srv
}

// TestAKSPermissionsOfEveryCall makes every call the provider makes (a
// plan, a run that sets the pool's maxSurge and puts it back, a cancel,
// a blue/green run) against the fake, which names each request by its
// Azure action, and holds the three lists together: each action the fake
// saw is in docs/providers/aks.md and in aks.Calls, the docs' tables are
// exactly aks.Calls (required, optional, blue/green's), and each action
// of aks.Calls was made. Runs with a role of exactly the docs' actions
// then finish.
func TestAKSPermissionsOfEveryCall(t *testing.T) {
	client, srv := aksScene(t)
	ctx := context.Background()
	args := []string{"pool", "--provider", aks.Name, "--node-image", "latest", "--max-surge", "2", "--post-drain-wait", "0s", "--yes", "--node-ready-timeout", "60s"} // no --strategy: the pool's own, surge, takes --max-surge
	blueGreen := []string{"pool", "--provider", aks.Name, "--orchestrator-version", aksControl, "--strategy", "blue-green", "--node-pool-soak", "0s", "--post-drain-wait", "0s", "--yes", "--node-ready-timeout", "60s"}
	if out, errOut, code := plugin.Drive(ctx, client, "run", args...); code != plugin.ExitOK {
		t.Fatalf("run: exit %d:\n%s%s", code, out, errOut)
	}
	p := openAKS(t, client)
	if err := p.(cloud.UpdateCanceller).CancelUpdate(ctx, "op"); err == nil {
		t.Errorf("cancel with no upgrade running: AKS answers 409, the provider said nothing")
	}
	made := srv.Actions()
	client, srv = aksScene(t)
	if out, errOut, code := plugin.Drive(ctx, client, "run", blueGreen...); code != plugin.ExitOK {
		t.Fatalf("blue/green run: exit %d:\n%s%s", code, out, errOut)
	}
	made = append(made, srv.Actions()...)
	required, optional, forBlueGreen := docActions(t)
	holdCallsToDocs(t, required, optional, forBlueGreen)
	documented := slices.Concat(required, optional, forBlueGreen)
	assertCallsAreTheDocs(t, "aks", made, documented)
	for name, run := range map[string][]string{"surge": args, "blue/green": blueGreen} {
		t.Run("a role of exactly the documented actions runs "+name, func(t *testing.T) {
			client, srv := aksScene(t)
			srv.SetRoles(azurefake.Role{Actions: documented})
			if out, errOut, code := plugin.Drive(ctx, client, "run", run...); code != plugin.ExitOK || strings.Contains(out+errOut, "AuthorizationFailed") {
				t.Fatalf("run: exit %d (want %d, nothing refused):\n%s%s", code, plugin.ExitOK, out, errOut)
			}
		})
	}
}

// holdCallsToDocs checks the docs' tables list exactly aks.Calls.
func holdCallsToDocs(t *testing.T, required, optional, forBlueGreen []string) {
	t.Helper()
	var callsRequired, callsOptional, callsBlueGreen []string
	for _, c := range aks.Calls {
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
		t.Errorf("docs/providers/aks.md lists %v, %v and %v; aks.Calls %v, %v and %v", required, optional, forBlueGreen, callsRequired, callsOptional, callsBlueGreen)
	}
}

// openAKS opens the provider on the pool's nodes as the plugin does.
func openAKS(t *testing.T, client *fake.Clientset) cloud.Provider {
	return openAKSNodes(t, client, "pool")
}

// openAKSNodes opens the provider on the nodes of agent pool name.
func openAKSNodes(t *testing.T, client *fake.Clientset, name string) cloud.Provider {
	t.Helper()
	c, _ := cloud.Lookup(aks.Name)
	list, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: azurefake.AgentPoolLabel + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	_, p, err := cloud.OpenGroup(context.Background(), c, client, list.Items, plan.CloudTarget{Options: map[string]string{"node-image": "latest"}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAKSPlanChecksPermissions: the plan asks Azure for the caller's
// permissions and names an action the caller's roles leave out; run
// refuses before any write; the AKS role passes.
func TestAKSPlanChecksPermissions(t *testing.T) {
	writeLess := azurefake.Role{Actions: []string{"*"}, NotActions: []string{"Microsoft.ContainerService/managedClusters/agentPools/write"}}
	for _, tc := range []struct {
		name    string
		roles   []azurefake.Role
		missing string // "" for none
		scope   string // where the roles are assigned: "" for the subscription
	}{
		{"Azure Kubernetes Service Contributor Role", []azurefake.Role{azurefake.AKSContributorRole}, "", ""},
		// ARM reads an operation's status at the subscription's location:
		// with a role on the resource alone "you can start the operation
		// but you can't track its status" (Learn, "Track asynchronous
		// Azure operations").
		{"Azure Kubernetes Service Contributor Role on the cluster alone", []azurefake.Role{azurefake.AKSContributorRole}, "Microsoft.ContainerService/locations/operations/read", "cluster"},
		{"a role without agentPools/write", []azurefake.Role{writeLess}, "Microsoft.ContainerService/managedClusters/agentPools/write", ""},
		{"notActions are no deny: a second role grants it", []azurefake.Role{writeLess, azurefake.AKSContributorRole}, "", ""},
		{"a reader", []azurefake.Role{{Actions: []string{"*/read"}}}, "Microsoft.ContainerService/managedClusters/agentPools/abort/action", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, srv := aksScene(t)
			srv.SetRoles(tc.roles...)
			if tc.scope == "cluster" {
				srv.SetRoles()
				srv.AssignRole("/subscriptions/"+srv.Subscription()+"/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/c1", tc.roles...)
			}
			ctx := context.Background()
			args := []string{"pool", "--provider", aks.Name, "--node-image", "latest"}
			for _, cmd := range []string{"plan", "run"} {
				a := args
				if cmd == "run" {
					a = append(a, "--yes")
				}
				out, errOut, code := plugin.Drive(ctx, client, cmd, a...)
				if cmd != "run" && tc.missing == "" && (code != plugin.ExitOK || strings.Contains(out, "missing-permission")) {
					t.Fatalf("%s: exit %d, want %d and no missing permission:\n%s%s", cmd, code, plugin.ExitOK, out, errOut)
				}
				// plan shows its blockers and exits 0; run refuses, exit 5.
				want := map[bool]int{true: plugin.ExitOK, false: plugin.ExitBlockers}[cmd == "plan"]
				if tc.missing != "" && (code != want || !strings.Contains(out, "missing-permission") || !strings.Contains(out, tc.missing) || !strings.Contains(out, aks.Policy)) {
					t.Errorf("%s: exit %d, want %d naming %s and %s:\n%s%s", cmd, code, want, tc.missing, aks.Policy, out, errOut)
				}
				if tc.missing == "" {
					break
				}
			}
			if ch := srv.ChangingCalls(); len(ch) > 0 {
				t.Errorf("refused runs changed the pool: %v", ch)
			}
		})
	}
}

// TestAKSPlanReadsQuotaAndOtherPools: the plan shows the surge's vCPU
// quota, blocks a surge the quota cannot hold (insufficient-quota, exit 5
// from plan --detailed-exitcode and run, nothing changed) naming the
// --max-surge that fits, and a green it cannot hold, and refuses while another pool
// of the cluster is busy.
func TestAKSPlanReadsQuotaAndOtherPools(t *testing.T) {
	ctx := context.Background()
	args := []string{"pool", "--provider", aks.Name, "--node-image", "latest", "--strategy", "surge", "--max-surge", "2", "--max-unavailable", "0"}
	t.Run("the quota holds the surge", func(t *testing.T) {
		client, srv := aksScene(t)
		out, errOut, code := plugin.Drive(ctx, client, "plan", args...)
		// Three Standard_D4s_v5 of the fake's pool use 12 of 100 vCPUs.
		if code != plugin.ExitOK || !strings.Contains(out, "2 surge node(s) of Standard_D4s_v5 need 8 vCPUs") || !strings.Contains(out, `"Total Regional vCPUs" 88 of 100 free`) {
			t.Fatalf("plan: exit %d, want %d and the quota's numbers:\n%s%s", code, plugin.ExitOK, out, errOut)
		}
		if ch := srv.ChangingCalls(); len(ch) > 0 {
			t.Errorf("plan changed the pool: %v", ch)
		}
	})
	t.Run("the family's quota holds one surge node", func(t *testing.T) {
		client, srv := aksScene(t)
		srv.SetQuota("standardDSv5Family", 17)
		for _, cmd := range [][]string{
			append([]string{"plan", "--detailed-exitcode"}, args...),
			append([]string{"run", "--yes"}, args...),
		} {
			out, errOut, code := plugin.Drive(ctx, client, cmd[0], cmd[1:]...)
			if code != plugin.ExitBlockers || !strings.Contains(errOut+out, "insufficient-quota") || !strings.Contains(errOut+out, "--max-surge 1 fits") {
				t.Fatalf("%s: exit %d, want %d, insufficient-quota naming --max-surge 1:\n%s%s", cmd[0], code, plugin.ExitBlockers, out, errOut)
			}
		}
		if ch := srv.ChangingCalls(); len(ch) > 0 {
			t.Errorf("the refused run changed the pool: %v", ch)
		}
	})
	t.Run("green does not fit the family's quota", func(t *testing.T) {
		client, srv := aksScene(t)
		// Green's 3 nodes need 12 vCPUs more than blue's 12.
		srv.SetQuota("standardDSv5Family", 20)
		bg := []string{"pool", "--provider", aks.Name, "--orchestrator-version", aksControl, "--strategy", "blue-green"}
		out, errOut, code := plugin.Drive(ctx, client, "plan", bg...)
		if code != plugin.ExitUsage || !strings.Contains(errOut+out, "cannot hold green: 3 green node(s) of Standard_D4s_v5 need 12 vCPUs") {
			t.Fatalf("plan: exit %d, want %d naming green's vCPUs:\n%s%s", code, plugin.ExitUsage, out, errOut)
		}
		if ch := srv.ChangingCalls(); len(ch) > 0 {
			t.Errorf("plan changed the pool: %v", ch)
		}
	})
	t.Run("no Compute reads: not checked", func(t *testing.T) {
		client, srv := aksScene(t)
		srv.SetRoles(azurefake.AKSContributorRole)
		out, errOut, code := plugin.Drive(ctx, client, "plan", args...)
		if code != plugin.ExitOK || !strings.Contains(out, "not checked") || !strings.Contains(out, "AuthorizationFailed") {
			t.Fatalf("plan: exit %d, want %d and the quota not checked for the 403:\n%s%s", code, plugin.ExitOK, out, errOut)
		}
	})
	t.Run("another pool is upgrading", func(t *testing.T) {
		client, srv := aksScene(t)
		if err := srv.CreatePool(ctx, azurefake.PoolSpec{ResourceGroup: "rg", Cluster: "c1", Name: "other", Count: 1, Zones: []string{"1"},
			Version: aksVersion, Image: aksOld, LatestImage: aksLatest}); err != nil {
			t.Fatal(err)
		}
		srv.SetPoolState("rg", "c1", "other", "Upgrading")
		out, errOut, code := plugin.Drive(ctx, client, "plan", args...)
		if code != plugin.ExitUsage || !strings.Contains(errOut+out, `"other" Upgrading`) {
			t.Fatalf("plan: exit %d, want %d naming the busy pool:\n%s%s", code, plugin.ExitUsage, out, errOut)
		}
	})
}

// TestAKSAnotherPoolHoldsTheCluster: AKS refuses a change of the pool
// while another pool's operation runs (409); the provider's start says
// so as a passing error rather than taking the 409 for its own upgrade,
// and its settings change waits for the other pool, then goes through.
func TestAKSAnotherPoolHoldsTheCluster(t *testing.T) {
	client, srv := aksScene(t)
	ctx := context.Background()
	if err := srv.CreatePool(ctx, azurefake.PoolSpec{ResourceGroup: "rg", Cluster: "c1", Name: "other", Count: 1, Zones: []string{"1"},
		Version: aksVersion, Image: aksOld, LatestImage: aksLatest}); err != nil {
		t.Fatal(err)
	}
	p := openAKSNodes(t, client, "pool")
	srv.SetPoolState("rg", "c1", "other", "Scaling")
	mu := p.(cloud.ManagedUpdater)
	id, err := mu.StartUpdate(ctx, false)
	if err == nil || !cloud.Transient(err) || !strings.Contains(err.Error(), "other - Scaling") {
		t.Fatalf("start while another pool scales: %q, %v; want a passing error naming it", id, err)
	}
	if ch := srv.ChangingCalls(); len(ch) != 1 {
		t.Errorf("changing calls %v, want the one refused start", ch)
	}
	before, err := mu.Settings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	during := before
	during.Other = map[string]string{"maxSurge": "2"}
	done := make(chan error, 1)
	go func() { done <- mu.Configure(ctx, during) }()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("configure returned while another pool scales: %v", err)
	default:
	}
	srv.SetPoolState("rg", "c1", "other", "Succeeded")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if pool, _ := srv.Pool("rg", "c1", "pool"); *pool.Properties.UpgradeSettings.MaxSurge != "2" {
		t.Errorf("maxSurge %q after configure, want 2", *pool.Properties.UpgradeSettings.MaxSurge)
	}
	if n := len(srv.ChangingCalls()); n > 10 {
		t.Errorf("%d changing calls: configure asked again without waiting", n)
	}
}
