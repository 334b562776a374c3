package aks

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestOpenResolvesTheTarget: Open reads the cluster and the pool,
// resolves the target from the flags and the pool's upgrade profile, and
// refuses before any write what AKS would refuse.
func TestOpenResolvesTheTarget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   map[string]string
		target string
		want   string
	}{
		{"the latest node image", map[string]string{optImage: "latest"}, "1.31.5/" + testLatestImage, ""},
		{"the latest image by name", map[string]string{optImage: testLatestImage, optDrainTimeout: "45m"}, "1.31.5/" + testLatestImage, ""},
		{"a minor version: its latest patch offered", map[string]string{optVersion: "1.32"}, "1.32.2/" + testLatestImage, ""},
		{"a patch version", map[string]string{optVersion: "1.32.1"}, "1.32.1/" + testLatestImage, ""},
		{"an older image", map[string]string{optImage: testOldImage}, "", "AKS upgrades a pool's node image to the latest only"},
		{"above the control plane", map[string]string{optVersion: "1.33"}, "", "above the control plane's version 1.32.2"},
		{"below the pool", map[string]string{optVersion: "1.30"}, "", "AKS does not downgrade a pool"},
		{"not offered", map[string]string{optVersion: "1.32.0"}, "", "is not offered for the pool; AKS offers 1.32.1, 1.32.2, 1.31.5"},
		{"a cluster of another name", map[string]string{optCluster: "c2", optResourceGroup: "rg"}, "", `AKS cluster "c2" not found in resource group "rg"`},
		{"a drain timeout out of AKS's range", map[string]string{optDrainTimeout: "1441m"}, "", "from 1m to 1440m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAKSServer(t)
			f.addPool("pool", 3, nil)
			cg, p, _, err := openPool(t, "pool", 3, plan.StrategySurge, tc.opts)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Open: %v, want an error with %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a := p.(*AgentPool)
			if cg.TargetVersion != tc.target || cg.CurrentVersion != "1.31.5/"+testOldImage || len(cg.Nodes) != 3 || cg.Region != "westeurope" ||
				cg.Managed == nil || a.Name() != Name || a.GroupName() != "pool" || !strings.Contains(a.Describe(), `agent pool "pool" of AKS cluster "c1"`) {
				t.Errorf("group %+v, provider %s", cg, a)
			}
			if len(f.writes()) != 0 {
				t.Errorf("Open wrote %v", f.writes())
			}
		})
	}
}

// TestOpenFindsThePoolAndCluster: the nodes name one pool by their
// label, and the cluster by their node resource group (AKS's
// MC_<group>_<cluster>_<location>) unless the flags name it.
func TestOpenFindsThePoolAndCluster(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(nodes []corev1.Node)
		group  string
		is     error
		want   string
	}{
		{name: "a pool that does not exist", group: "gone", is: cloud.ErrGroupNotFound, want: `agent pool "gone" of AKS cluster "c1" (resource group rg) not found`},
		{name: "two pools", change: func(n []corev1.Node) { n[1].Labels[AgentPoolLabel] = "other" }, want: `AKS agent pools "pool" and "other"`},
		{name: "no pool label", change: func(n []corev1.Node) { delete(n[0].Labels, AgentPoolLabel) }, want: "carries no kubernetes.azure.com/agentpool label"},
		{name: "a node resource group of another name", change: func(n []corev1.Node) {
			for i := range n {
				n[i].Spec.ProviderID = strings.Replace(n[i].Spec.ProviderID, "MC_rg_c1_westeurope", "nodes", 1)
			}
		}, want: "give --resource-group and --aks-cluster"},
		{name: "no azure provider ID", change: func(n []corev1.Node) {
			for i := range n {
				n[i].Spec.ProviderID = ""
			}
		}, want: "no azure:// provider IDs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newAKSServer(t).addPool("pool", 2, nil)
			nodes := []corev1.Node{poolNode("pool", 0, "1.31.5", testOldImage), poolNode("pool", 1, "1.31.5", testOldImage)}
			if tc.change != nil {
				tc.change(nodes)
			}
			_, _, err := (aksCloud{}).Open(context.Background(), fake.NewClientset(), nodes, plan.CloudTarget{Group: tc.group, Options: map[string]string{}})
			if err == nil || !strings.Contains(err.Error(), tc.want) || tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Open: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestAKSUpgradeFollowed: a node image upgrade is started
// (upgradeNodeImageVersion), followed by the operation the answer's
// Azure-AsyncOperation names to its end, found on the pool by a run
// that lost its answer, and not cancelled once it ended; a failed one
// names AKS's error.
func TestAKSUpgradeFollowed(t *testing.T) {
	f, a := surgePool(t, 2, nil, map[string]string{optImage: "latest"})
	ctx := context.Background()
	id, err := a.StartUpdate(ctx, false)
	if err != nil || id != f.srv.URL+"/subscriptions/sub/providers/Microsoft.ContainerService/locations/westeurope/operations/op1?api-version="+poolAPIVersion {
		t.Fatalf("StartUpdate: %q, %v; want the answer's Azure-AsyncOperation URL", id, err)
	}
	if run, err := a.RunningUpdate(ctx); err != nil || run != poolUpdateID {
		t.Errorf("RunningUpdate while it runs: %q, %v", run, err)
	}
	if again, err := a.StartUpdate(ctx, false); err != nil || again != poolUpdateID {
		t.Errorf("StartUpdate again while it runs: %q, %v; want the running one, nothing sent", again, err)
	}
	if advice, err := a.AbortAdvice(ctx, id, "ng"); err != nil || !strings.Contains(advice, "kubectl nodeupgrade cancel ng") {
		t.Errorf("AbortAdvice while it runs: %q, %v", advice, err)
	}
	pr, err := a.Progress(ctx, id)
	if err != nil || pr.State != cloud.UpdateSucceeded || pr.Total != 2 || pr.Done != 0 {
		t.Errorf("Progress: %+v, %v; want Succeeded, 0 of 2 nodes on the target", pr, err)
	}
	if run, err := a.RunningUpdate(ctx); err != nil || run != "" {
		t.Errorf("RunningUpdate after the end: %q, %v", run, err)
	}
	if err := a.CancelUpdate(ctx, id); err == nil || !isInput(err) || !strings.Contains(err.Error(), "it ended first") {
		t.Errorf("CancelUpdate after the end: %v, want AKS's refusal named", err)
	}
	if advice, err := a.AbortAdvice(ctx, poolUpdateID, "ng"); err != nil || advice != "" {
		t.Errorf("AbortAdvice after the end: %q, %v", advice, err)
	}
	if got := f.writes(); !slices.Equal(got, []string{"POST pool/upgradenodeimageversion", "POST pool/abort"}) {
		t.Errorf("writes %v", got)
	}
	// A failed upgrade names AKS's error and the node it could not drain.
	f.failOps = "Drain node aks-pool-vmss000001 failed when evicting pod web-1 failed with Too Many Requests error."
	id, err = a.ResumeUpdate(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = a.Progress(ctx, id)
	pr, err = a.Progress(ctx, id)
	if err != nil || pr.State != cloud.UpdateFailed || len(pr.Errors) != 1 || pr.Errors[0].Code != cloud.CodePodEviction || !slices.Equal(pr.Errors[0].Nodes, []string{"aks-pool-vmss000001"}) {
		t.Errorf("Progress of a failed upgrade: %+v, %v", pr, err)
	}
}

// TestVersionUpgradeByPut: a Kubernetes version's upgrade is a PUT of
// the pool as read with the target's orchestratorVersion, and it is
// cancelled by agentPools/abort while it runs.
func TestVersionUpgradeByPut(t *testing.T) {
	f, a := surgePool(t, 2, map[string]any{"aFieldNewerThanTheModel": "kept"}, map[string]string{optVersion: "1.32"})
	ctx := context.Background()
	id, err := a.StartUpdate(ctx, false)
	if err != nil || !strings.HasSuffix(id, "/operations/op1?api-version="+poolAPIVersion) {
		t.Fatalf("StartUpdate: %q, %v", id, err)
	}
	props := f.props("pool")
	if props["orchestratorVersion"] != "1.32.2" || props["aFieldNewerThanTheModel"] != "kept" || props["provisioningState"] != "Upgrading" {
		t.Errorf("pool after the PUT: %v", props)
	}
	if err := a.CancelUpdate(ctx, id); err != nil {
		t.Errorf("CancelUpdate while it runs: %v", err)
	}
	if pr, err := a.Progress(ctx, poolUpdateID); err != nil || pr.State != cloud.UpdateCancelled {
		t.Errorf("Progress after the abort: %+v, %v", pr, err)
	}
	s, err := a.Settings(ctx)
	if err != nil || s.Other[setMaxSurge] != "10%" {
		t.Errorf("Settings: %+v, %v", s, err)
	}
}

// TestOperationReadWhereAKSNamedIt: the run reads an operation's status
// at the Azure-AsyncOperation URL AKS answered, its api-version
// included ("use the URL in the header value to poll", Learn's "Track
// asynchronous Azure operations"), never a URL rebuilt from the ID; a
// bare ID a run of an earlier version recorded is read at the
// location; a URL on another host is refused, the credential kept.
func TestOperationReadWhereAKSNamedIt(t *testing.T) {
	f, a := surgePool(t, 1, nil, map[string]string{optImage: "latest"})
	ctx := context.Background()
	id, err := a.StartUpdate(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, id, read string
		refused        bool
	}{
		{"the answer's URL", id, "/subscriptions/sub/providers/Microsoft.ContainerService/locations/westeurope/operations/op1?api-version=" + poolAPIVersion, false},
		{"an earlier version's bare ID", "op1", "/subscriptions/sub/providers/Microsoft.ContainerService/locations/westeurope/operations/op1?api-version=" + operationsAPIVersion, false},
		{"another host", "https://elsewhere.example/subscriptions/sub/providers/Microsoft.ContainerService/locations/westeurope/operations/op1", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.statusReads)
			_, err := a.Progress(ctx, tc.id)
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "is not on") || len(f.statusReads) != before {
					t.Errorf("Progress: %v after %d reads, want refused unread", err, len(f.statusReads)-before)
				}
				return
			}
			if err != nil || len(f.statusReads) != before+1 || f.statusReads[before] != tc.read {
				t.Errorf("Progress: %v, read %v, want %s", err, f.statusReads[before:], tc.read)
			}
		})
	}
}

// TestWritesCarryTheETag: a pool write carries If-Match with the eTag
// the pool was read with (armcontainerservice's IfMatch), so another
// client's write in between is never overwritten: AKS's 412 makes
// Configure read the pool again and write with its new eTag, and makes
// StartUpdate's refusal one that passes (the run reads again).
func TestWritesCarryTheETag(t *testing.T) {
	f, a := surgePool(t, 2, nil, map[string]string{optVersion: "1.32.2"})
	ctx := context.Background()
	f.racedPuts = 1
	if err := a.Configure(ctx, plan.UpdateSettings{Other: map[string]string{setMaxSurge: "3"}}); err != nil {
		t.Fatalf("Configure after another client's write: %v", err)
	}
	if got := f.ifMatches; len(got) != 2 || got[0] != "etag-0" || got[1] != "etag-other-0" {
		t.Errorf("If-Match of the PUTs %v, want the eTag read, then the one read again", got)
	}
	if got := f.props("pool")["upgradeSettings"].(map[string]any)["maxSurge"]; got != "3" {
		t.Errorf("maxSurge %v, want 3", got)
	}
	f.racedPuts = 1
	_, err := a.StartUpdate(ctx, false)
	if err == nil || !cloud.Transient(err) || !strings.Contains(err.Error(), "another client changed the pool") {
		t.Errorf("StartUpdate beaten by another write: %v, want a refusal that passes", err)
	}
	if id, err := a.StartUpdate(ctx, false); err != nil || id == "" {
		t.Errorf("StartUpdate again: %q, %v", id, err)
	}
}
