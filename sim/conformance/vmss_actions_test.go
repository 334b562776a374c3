package conformance

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/vmss"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/azurefake"
)

// docAction is an action in the first column of docs/providers/vmss.md's
// permissions table.
var docAction = regexp.MustCompile("(?m)^\\| `(Microsoft\\.[A-Za-z./]+)` \\|")

// TestVMSSActionsAreTheDocs drives every call of the vmss provider
// against the local endpoint, which names each request by the Azure
// action it needs, and wants those actions to be the documented table.
func TestVMSSActionsAreTheDocs(t *testing.T) {
	client := fake.NewClientset()
	srv := startVMSS(t, client, azurefake.Options{}, 2, vmssOld)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := cloud.Lookup(vmss.Name)
	_, p, err := cloud.OpenGroup(ctx, c, client, list.Items, plan.CloudTarget{Image: vmssNew})
	if err != nil {
		t.Fatal(err)
	}
	s := p.(*vmss.ScaleSet)
	capacity, err := s.ProveCapacity(ctx, 1)
	must(t, err)
	if len(capacity.Unprovable) > 0 || len(capacity.Quotas) == 0 {
		t.Errorf("capacity: %+v, want the quotas proven", capacity)
	}
	version, err := s.Setup(ctx)
	must(t, err)
	must(t, s.SetDesiredAndMax(ctx, 3, 3))
	must(t, s.RemoveNode(ctx, list.Items[0].Name))
	// The instance on the target now, a new model of the same image:
	// manualupgrade reimages nothing, the provider reimages.
	srv.ChangeUserData(vmssGroup, "ng", "# a new model, the same image")
	waitNode(t, client, list.Items[0].Name)
	must(t, s.RemoveNode(ctx, list.Items[0].Name))
	must(t, s.Shrink(ctx, list.Items[1].Name))
	must(t, s.SetDesiredAndMax(ctx, 1, 1))
	green := s.GreenName(version)
	must(t, s.CreateGreen(ctx, green, version, plan.Sizes{Desired: 1, Max: 1}))
	s.UseGreen(green)
	_, _, err = s.Machines(ctx, nil)
	must(t, err)
	must(t, s.SetGroupSizes(ctx, green, plan.Sizes{Desired: 2, Max: 2}))
	must(t, s.DeleteGroup(ctx, green))

	var used []string
	for _, call := range srv.Calls() {
		if (strings.HasPrefix(call.Operation, "Microsoft.Compute/") || strings.HasPrefix(call.Operation, "Microsoft.Network/")) && !slices.Contains(used, call.Operation) {
			used = append(used, call.Operation)
		}
	}
	doc, err := os.ReadFile("../../docs/providers/vmss.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range docAction.FindAllStringSubmatch(string(doc), -1) {
		documented = append(documented, m[1])
	}
	slices.Sort(used)
	slices.Sort(documented)
	if !slices.Equal(used, documented) {
		t.Errorf("the provider's calls need %q; docs/providers/vmss.md's table has %q", used, documented)
	}
}

// waitNode waits for a node of name to be registered.
func waitNode(t *testing.T, client *fake.Clientset, name string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{}); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s never registered", name)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
