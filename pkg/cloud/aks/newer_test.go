package aks

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// docServer answers GET and PUT of one agent pool as a JSON document at
// API 2025-05-01 alone (another version is ARM's 400), keeping what each
// PUT sends, as AKS keeps the fields of the newer version.
type docServer struct {
	mu   sync.Mutex
	doc  map[string]any
	puts []map[string]any
}

func (f *docServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if v := r.URL.Query().Get("api-version"); v != poolAPIVersion {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"code":"NoRegisteredProviderFound","message":"the test serves ` + poolAPIVersion + ` alone, not ` + v + `"}}`))
		return
	}
	if r.Method == http.MethodPut {
		var in map[string]any
		_ = json.NewDecoder(r.Body).Decode(&in)
		f.puts = append(f.puts, in)
		in["properties"].(map[string]any)["provisioningState"] = "Succeeded"
		f.doc = in
	}
	_ = json.NewEncoder(w).Encode(f.doc)
}

func poolDocument(state string, settings map[string]any) map[string]any {
	return map[string]any{"name": "pool", "properties": map[string]any{
		"count": 3, "provisioningState": state, "orchestratorVersion": "1.31.5", "currentOrchestratorVersion": "1.31.5",
		"upgradeSettings": settings, "aFieldNewerThanTheModel": map[string]any{"kept": true}}}
}

// TestNewerSettingsSentBackAsRead: the pool is read and written at
// 2025-05-01, whose maxUnavailable and undrainableNodeBehavior the SDK's
// 2025-02-01 model lacks: Configure sets them, and a write sends every
// field of the pool back as read, those the model lacks included.
func TestNewerSettingsSentBackAsRead(t *testing.T) {
	for _, tc := range []struct {
		name string
		have map[string]any
		set  map[string]string
		want map[string]any
	}{
		{"maxUnavailable set, Cordon kept", map[string]any{"maxSurge": "10%", "undrainableNodeBehavior": "Cordon"},
			map[string]string{setMaxSurge: "0", setMaxUnavailable: "2", setUndrainable: "Cordon"},
			map[string]any{"maxSurge": "0", "maxUnavailable": "2", "undrainableNodeBehavior": "Cordon"}},
		{"put back: AKS's defaults for what the pool never had", map[string]any{"maxSurge": "0", "maxUnavailable": "2", "undrainableNodeBehavior": "Cordon"},
			map[string]string{setMaxSurge: "10%"},
			map[string]any{"maxSurge": "10%", "maxUnavailable": "0", "undrainableNodeBehavior": "Schedule"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &docServer{doc: poolDocument("Succeeded", tc.have)}
			srv := httptest.NewServer(f)
			defer srv.Close()
			a := newTestPool(t, srv)
			if err := a.Configure(context.Background(), plan.UpdateSettings{Other: tc.set}); err != nil {
				t.Fatal(err)
			}
			if len(f.puts) != 1 {
				t.Fatalf("%d PUTs, want 1", len(f.puts))
			}
			props := f.puts[0]["properties"].(map[string]any)
			got, _ := json.Marshal(props["upgradeSettings"])
			want, _ := json.Marshal(tc.want)
			if string(got) != string(want) {
				t.Errorf("upgradeSettings sent %s, want %s", got, want)
			}
			if props["aFieldNewerThanTheModel"] == nil {
				t.Errorf("the PUT lost a field the SDK's model lacks: %v", props)
			}
		})
	}
}

// TestPlanWithMaxUnavailable: a pool's maxSurge 0 with maxUnavailable is
// planned as AKS runs it, no surge node and maxUnavailable nodes at a
// time; --max-unavailable becomes the pool's maxUnavailable for the run;
// a Spot pool refuses it (no drain there).
func TestPlanWithMaxUnavailable(t *testing.T) {
	spot := armcs.ScaleSetPrioritySpot
	for _, tc := range []struct {
		name       string
		have       upgradeExtra
		maxSurge   string
		in         plan.Input
		spot       bool
		scaleUp    int32
		during     string // the settings set for the run, "" when none
		says, fail string
	}{
		{name: "the pool's own maxSurge 0 + maxUnavailable 2", have: upgradeExtra{MaxUnavailable: "2"}, maxSurge: "0",
			in: plan.Input{MaxSurge: 0, MaxUnavailable: "2"}, scaleUp: 0, says: "drains 2 node(s) at a time"},
		{name: "--max-surge 0 --max-unavailable 1 on AKS's defaults", in: plan.Input{MaxSurge: 0, MaxUnavailable: "1"},
			scaleUp: 0, during: "maxSurge 0, maxUnavailable 1", says: "drains 1 node(s) at a time"},
		{name: "--max-surge 2 --max-unavailable 1", in: plan.Input{MaxSurge: 2, MaxUnavailable: "1"},
			scaleUp: 2, during: "maxSurge 2, maxUnavailable 1", says: "drains 3 node(s) at a time"},
		{name: "a Spot pool refuses --max-unavailable", spot: true, in: plan.Input{MaxUnavailable: "1"}, fail: "--max-unavailable 1"},
		{name: "a --max-unavailable that is no number", in: plan.Input{MaxSurge: 1, MaxUnavailable: "25%"}, fail: "--max-unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := &armcs.ManagedClusterAgentPoolProfileProperties{Count: new(int32(4))}
			if tc.maxSurge != "" {
				props.UpgradeSettings = &armcs.AgentPoolUpgradeSettings{MaxSurge: &tc.maxSurge}
			}
			if tc.spot {
				props.ScaleSetPriority = &spot
			}
			a := &AgentPool{name: "pool", imageOnly: true, pool: armcs.AgentPool{Properties: props}, raw: rawPool{extra: tc.have}}
			mp, err := a.Plan(tc.in, 4, 1)
			if tc.fail != "" {
				if err == nil || !isInput(err) || !strings.Contains(err.Error(), tc.fail) {
					t.Errorf("Plan: %v, want an input error naming %s", err, tc.fail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var upgrade string
			for _, s := range mp.Steps {
				if s.Phase == "Upgrade" {
					upgrade = s.Detail
				}
			}
			during := ""
			if !mp.During.Equal(mp.Before) {
				during = mp.During.String()
			}
			if mp.ScaleUp != tc.scaleUp || during != tc.during || !strings.Contains(upgrade, tc.says) {
				t.Errorf("scale-up %d, during %q, upgrade %q; want %d, %q, saying %q", mp.ScaleUp, during, upgrade, tc.scaleUp, tc.during, tc.says)
			}
		})
	}
}

// TestCanceledByCordonIsQuarantine: a Canceled end of a pool whose
// undrainableNodeBehavior is Cordon, with nodes AKS labelled
// kubernetes.azure.com/upgrade-status=Quarantined, is AKS's quarantine
// naming them, not a cancel; without Cordon, or with no such node, it is
// the abort's Canceled.
func TestCanceledByCordonIsQuarantine(t *testing.T) {
	for _, tc := range []struct {
		name     string
		behavior string
		labelled bool
		want     cloud.UpdateState
	}{
		{"Cordon with a quarantined node", "Cordon", true, cloud.UpdateQuarantined},
		{"Cordon, none quarantined: an abort", "Cordon", false, cloud.UpdateCancelled},
		{"Schedule: an abort", "Schedule", true, cloud.UpdateCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &docServer{doc: poolDocument("Canceled", map[string]any{"undrainableNodeBehavior": tc.behavior})}
			srv := httptest.NewServer(f)
			defer srv.Close()
			a := newTestPool(t, srv)
			labels := map[string]string{AgentPoolLabel: "pool"}
			if tc.labelled {
				labels[QuarantineLabel] = quarantineValue
			}
			a.kube = fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "aks-pool-1", Labels: labels}},
				&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "aks-pool-2", Labels: map[string]string{AgentPoolLabel: "pool"}}})
			p, err := a.Progress(context.Background(), poolUpdateID)
			if err != nil {
				t.Fatal(err)
			}
			if p.State != tc.want {
				t.Fatalf("state %s, want %s", p.State, tc.want)
			}
			if tc.want == cloud.UpdateQuarantined && (len(p.Errors) != 1 || strings.Join(p.Errors[0].Nodes, ",") != "aks-pool-1" || p.Errors[0].Code != cloud.CodePodEviction) {
				t.Errorf("errors %+v, want a PodEvictionFailure naming aks-pool-1 alone", p.Errors)
			}
		})
	}
}
