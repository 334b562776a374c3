package azurefake

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// poolURL is the agent pool's URL at API version v.
func (s *scene) poolURL(name, v string) string {
	return s.srv.URL + "/subscriptions/" + s.srv.Subscription() + "/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/c1/agentPools/" + name + "?api-version=" + v
}

// rawPool sends method to the pool at API version v and reads the answer.
func (s *scene) rawPool(t *testing.T, method, name, v string, body any) (int, map[string]any) {
	t.Helper()
	var in []byte
	if body != nil {
		in, _ = json.Marshal(body)
	}
	req, _ := http.NewRequest(method, s.poolURL(name, v), bytes.NewReader(in))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&doc)
	return resp.StatusCode, doc
}

func upgradeSettingsOf(doc map[string]any) map[string]any {
	props, _ := doc["properties"].(map[string]any)
	us, _ := props["upgradeSettings"].(map[string]any)
	return us
}

// TestNewerSettingsReadAndWritten: maxUnavailable and
// undrainableNodeBehavior are read and written at PoolAPIVersion (the
// REST spec's 2025-05-01 AgentPoolUpgradeSettings), refused at the SDK's
// 2025-02-01 (its model lacks them) and kept by a PUT that leaves them
// out; AKS refuses maxSurge and maxUnavailable both 0 and a behaviour
// outside the enum.
func TestNewerSettingsReadAndWritten(t *testing.T) {
	s := newScene(t, 0)
	for _, tc := range []struct {
		name     string
		version  string
		settings map[string]any
		want     int
	}{
		{"maxUnavailable with maxSurge 0", PoolAPIVersion, map[string]any{"maxSurge": "0", "maxUnavailable": "1", "undrainableNodeBehavior": "Cordon"}, http.StatusOK},
		{"both 0", PoolAPIVersion, map[string]any{"maxSurge": "0", "maxUnavailable": "0"}, http.StatusBadRequest},
		{"a behaviour outside the enum", PoolAPIVersion, map[string]any{"undrainableNodeBehavior": "Drain"}, http.StatusBadRequest},
		{"maxUnavailable at the SDK's version", APIVersion, map[string]any{"maxUnavailable": "1"}, http.StatusBadRequest},
		{"a PUT of the SDK's version keeps them", APIVersion, map[string]any{"drainTimeoutInMinutes": 5}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.waitState(t, stateSucceeded)
			_, doc := s.rawPool(t, http.MethodGet, "pool", tc.version, nil)
			doc["properties"].(map[string]any)["upgradeSettings"] = tc.settings
			if got, answer := s.rawPool(t, http.MethodPut, "pool", tc.version, doc); got != tc.want {
				t.Fatalf("PUT %v at %s: %d %v, want %d", tc.settings, tc.version, got, answer, tc.want)
			}
		})
	}
	s.waitState(t, stateSucceeded)
	_, newer := s.rawPool(t, http.MethodGet, "pool", PoolAPIVersion, nil)
	if us := upgradeSettingsOf(newer); us["maxUnavailable"] != "1" || us["undrainableNodeBehavior"] != "Cordon" || us["maxSurge"] != "0" || us["drainTimeoutInMinutes"] != 5.0 {
		t.Errorf("upgradeSettings at %s: %v, want maxSurge 0, maxUnavailable 1, Cordon, drain 5", PoolAPIVersion, us)
	}
	_, older := s.rawPool(t, http.MethodGet, "pool", APIVersion, nil)
	if us := upgradeSettingsOf(older); us["maxUnavailable"] != nil || us["undrainableNodeBehavior"] != nil {
		t.Errorf("upgradeSettings at %s: %v, want none of the newer fields", APIVersion, us)
	}
}

// TestCordonQuarantinesAndCancels: under undrainableNodeBehavior Cordon
// with maxSurge 0 and maxUnavailable 1, a node a PDB holds past the drain
// timeout is left cordoned and labelled kubernetes.azure.com/upgrade-status=Quarantined,
// the other nodes are upgraded in place (no surge machine), and the
// upgrade ends Canceled, not Failed
// (https://learn.microsoft.com/en-us/azure/aks/upgrade-aks-cluster#set-node-drain-behavior).
func TestCordonQuarantinesAndCancels(t *testing.T) {
	s := newSceneWith(t, 0, func(kube *fake.Clientset) {
		kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
			if a.GetSubresource() != "eviction" {
				return false, nil, nil
			}
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		})
		podsByNode(kube)
	})
	ctx := context.Background()
	_, doc := s.rawPool(t, http.MethodGet, "pool", PoolAPIVersion, nil)
	doc["properties"].(map[string]any)["upgradeSettings"] = map[string]any{"maxSurge": "0", "maxUnavailable": "1", "undrainableNodeBehavior": "Cordon", "drainTimeoutInMinutes": 1}
	if got, answer := s.rawPool(t, http.MethodPut, "pool", PoolAPIVersion, doc); got != http.StatusOK {
		t.Fatalf("PUT the settings: %d %v", got, answer)
	}
	s.waitState(t, stateSucceeded)
	nodes, _ := s.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	held := nodes.Items[0].Name
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", Labels: map[string]string{"app": "web"}}, Spec: corev1.PodSpec{NodeName: held}}
	if _, err := s.kube.CoreV1().Pods("shop").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poller, err := s.pools.BeginUpgradeNodeImageVersion(ctx, "rg", "c1", "pool", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = poller.PollUntilDone(ctx, poll); !strings.Contains(fmt.Sprint(err), "NodesQuarantined") || strings.Count(err.Error(), "vmss0000") != 1 || !strings.Contains(err.Error(), held) {
		t.Errorf("the upgrade's end: %v, want NodesQuarantined naming %s alone", err, held)
	}
	s.waitState(t, stateCanceled)
	n, err := s.kube.CoreV1().Nodes().Get(ctx, held, metav1.GetOptions{})
	if err != nil || n.Labels[QuarantineLabel] != QuarantineValue || !n.Spec.Unschedulable {
		t.Fatalf("node %s held by its PDB: %v %v unschedulable %v, want quarantined", held, err, n.Labels, n.Spec.Unschedulable)
	}
	nodes, _ = s.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if len(nodes.Items) != 3 {
		t.Errorf("%d nodes, want the pool's 3 (maxSurge 0 adds none)", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		if want := map[bool]string{true: oldImage, false: latestImage}[n.Name == held]; n.Labels[NodeImageLabel] != want {
			t.Errorf("node %s on %s, want %s", n.Name, n.Labels[NodeImageLabel], want)
		}
	}
}

// podsByNode filters a list of pods by spec.nodeName as the API server
// does: the fake clientset ignores field selectors, and the drain lists a
// node's pods by one.
func podsByNode(kube *fake.Clientset) {
	kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		sel := a.(k8stesting.ListAction).GetListRestrictions().Fields
		obj, err := kube.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), a.GetNamespace())
		if err != nil || sel == nil || sel.Empty() {
			return true, obj, err
		}
		list := obj.(*corev1.PodList)
		var kept []corev1.Pod
		for _, p := range list.Items {
			if sel.Matches(fields.Set{"spec.nodeName": p.Spec.NodeName}) {
				kept = append(kept, p)
			}
		}
		list.Items = kept
		return true, list, nil
	})
}

// TestNewPoolTakesNewerSettings: a pool created at PoolAPIVersion takes
// maxUnavailable and undrainableNodeBehavior (the REST spec's 2025-05-01
// AgentPoolUpgradeSettings) and answers them back there; the enum is
// checked as for an existing pool's PUT.
func TestNewPoolTakesNewerSettings(t *testing.T) {
	s := newScene(t, 0)
	for _, tc := range []struct {
		name, pool string
		settings   map[string]any
		want       int
	}{
		{"a behaviour outside the enum", "green2", map[string]any{"undrainableNodeBehavior": "Drain"}, http.StatusBadRequest},
		{"kept", "green1", map[string]any{"maxSurge": "1", "maxUnavailable": "1", "undrainableNodeBehavior": "Cordon"}, http.StatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{"properties": map[string]any{"count": 1, "vmSize": "Standard_D4s_v5", "upgradeSettings": tc.settings}}
			if got, answer := s.rawPool(t, http.MethodPut, tc.pool, PoolAPIVersion, body); got != tc.want {
				t.Fatalf("PUT %s: %d %v, want %d", tc.pool, got, answer, tc.want)
			}
			if tc.want != http.StatusCreated {
				return
			}
			_, doc := s.rawPool(t, http.MethodGet, tc.pool, PoolAPIVersion, nil)
			if us := upgradeSettingsOf(doc); us["maxUnavailable"] != "1" || us["undrainableNodeBehavior"] != "Cordon" {
				t.Errorf("upgradeSettings of the new pool: %v, want maxUnavailable 1, Cordon", us)
			}
		})
	}
}
