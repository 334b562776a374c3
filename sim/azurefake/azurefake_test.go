package azurefake

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azcloud "github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const (
	oldImage    = "AKSUbuntu-2204gen2containerd-202501.01.0"
	latestImage = "AKSUbuntu-2204gen2containerd-202502.01.0"
)

// token is the fixed credential of the tests: the SDK reaches the fake
// offline, over HTTP.
type token struct{}

func (token) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "t", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// scene is a fake with a three-node pool "pool" of cluster "c1", the
// SDK's agent pool client on it, and the kubelet stand-in.
type scene struct {
	srv     *Server
	pools   *armcs.AgentPoolsClient
	kubelet *kubelet
	kube    *fake.Clientset
}

func newScene(t *testing.T, faults float64) *scene {
	t.Helper()
	return newSceneWith(t, faults, nil)
}

// newSceneWith is newScene with react adding the clientset's reactors
// first: before the kubelet stand-in reads the clientset (a reactor
// prepended after races with its reads).
func newSceneWith(t *testing.T, faults float64, react func(*fake.Clientset)) *scene {
	t.Helper()
	kube := fake.NewClientset()
	if react != nil {
		react(kube)
	}
	k := startKubelet(t, kube)
	srv, err := Start(context.Background(), kube, Options{PollEvery: 10 * time.Millisecond, EvictRetry: 20 * time.Millisecond, MinuteIs: 100 * time.Millisecond,
		SettingsDuration: 20 * time.Millisecond, NodeReadyTimeout: time.Minute, Faults: faults, FaultSeed: 1, RetryAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.CreateCluster(ClusterSpec{ResourceGroup: "rg", Name: "c1", Version: "1.32.2", Versions: []string{"1.31.5", "1.32.2"}})
	if err := srv.CreatePool(context.Background(), PoolSpec{ResourceGroup: "rg", Cluster: "c1", Name: "pool", Count: 3, Zones: []string{"1", "2", "3"},
		Version: "1.31.5", Image: oldImage, LatestImage: latestImage, Upgrade: &armcs.AgentPoolUpgradeSettings{DrainTimeoutInMinutes: ptr(int32(1))}}); err != nil {
		t.Fatal(err)
	}
	opts := &arm.ClientOptions{DisableRPRegistration: true}
	opts.InsecureAllowCredentialWithHTTP = true
	opts.Cloud = azcloud.Configuration{Services: map[azcloud.ServiceName]azcloud.ServiceConfiguration{azcloud.ResourceManager: {Endpoint: srv.URL, Audience: "x"}}}
	opts.Retry = policy.RetryOptions{RetryDelay: time.Millisecond, MaxRetryDelay: 2 * time.Second, MaxRetries: 6}
	pools, err := armcs.NewAgentPoolsClient(srv.Subscription(), token{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &scene{srv: srv, pools: pools, kubelet: k, kube: kube}
}

func (s *scene) pool(t *testing.T) *armcs.ManagedClusterAgentPoolProfileProperties {
	t.Helper()
	r, err := s.pools.Get(context.Background(), "rg", "c1", "pool", nil)
	if err != nil {
		t.Fatal(err)
	}
	return r.Properties
}

// waitState waits for the pool's provisioning state.
func (s *scene) waitState(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got := *s.pool(t).ProvisioningState; got == want {
			return
		}
	}
	t.Fatalf("pool never reached %s: %s", want, *s.pool(t).ProvisioningState)
}

var poll = &runtime.PollUntilDoneOptions{Frequency: 20 * time.Millisecond}

func armCode(err error) (string, int) {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode, re.StatusCode
	}
	return "", 0
}

// TestNodeImageUpgrade: the SDK's upgradeNodeImageVersion, polled to its
// end through Azure-AsyncOperation, moves every node to the latest image
// (named as before: reimaged), the surge node gone; under 5% faults too.
func TestNodeImageUpgrade(t *testing.T) {
	for _, faults := range []float64{0, 0.05} {
		t.Run(fmt.Sprintf("faults %.2f", faults), func(t *testing.T) {
			s := newScene(t, faults)
			poller, err := s.pools.BeginUpgradeNodeImageVersion(context.Background(), "rg", "c1", "pool", nil)
			if err == nil {
				_, err = poller.PollUntilDone(context.Background(), poll)
			}
			if c, status := armCode(err); err != nil && !(faults > 0 && status == http.StatusConflict && c == "OperationNotAllowed") {
				t.Fatal(err)
			}
			s.waitState(t, stateSucceeded)
			if got := *s.pool(t).NodeImageVersion; got != latestImage {
				t.Errorf("pool's image %s, want %s", got, latestImage)
			}
			nodes, _ := s.kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
			if len(nodes.Items) != 3 {
				t.Errorf("%d nodes after the upgrade, want 3", len(nodes.Items))
			}
			for _, n := range nodes.Items {
				if n.Labels[NodeImageLabel] != latestImage || n.Spec.Unschedulable || !strings.HasPrefix(n.Spec.ProviderID, "azure:///subscriptions/") || n.Labels[AgentPoolLabel] != "pool" {
					t.Errorf("node %s: image %s, cordoned %v, provider ID %s", n.Name, n.Labels[NodeImageLabel], n.Spec.Unschedulable, n.Spec.ProviderID)
				}
			}
		})
	}
}

// TestBusyAbortAndRefusals: while an upgrade runs, another change is
// refused with 409 OperationNotAllowed; abort ends it Canceled, and abort
// with nothing running is 409; a version above the control plane or
// below the pool's is refused with 400 and changes nothing; an unknown
// field is refused against the SDK's model.
func TestBusyAbortAndRefusals(t *testing.T) {
	s := newScene(t, 0)
	ctx := context.Background()
	s.kubelet.Hold()
	if _, err := s.pools.BeginUpgradeNodeImageVersion(ctx, "rg", "c1", "pool", nil); err != nil {
		t.Fatal(err)
	}
	_, err := s.pools.BeginUpgradeNodeImageVersion(ctx, "rg", "c1", "pool", nil)
	if c, status := armCode(err); status != http.StatusConflict || c != "OperationNotAllowed" {
		t.Fatalf("a second upgrade while one runs: %v", err)
	}
	if _, err := s.pools.BeginAbortLatestOperation(ctx, "rg", "c1", "pool", nil); err != nil {
		t.Fatal(err)
	}
	s.waitState(t, stateCanceled)
	s.kubelet.Release()
	if _, err := s.pools.BeginAbortLatestOperation(ctx, "rg", "c1", "pool", nil); !hasStatus(err, http.StatusConflict) {
		t.Errorf("abort with nothing running: %v, want 409", err)
	}
	for _, tc := range []struct{ version, code string }{{"1.33.0", "NodePoolMcVersionIncompatible"}, {"1.30.0", "NotAllowedAgentPoolVersionDowngrade"}} {
		body := armcs.AgentPool{Properties: &armcs.ManagedClusterAgentPoolProfileProperties{OrchestratorVersion: ptr(tc.version)}}
		_, err := s.pools.BeginCreateOrUpdate(ctx, "rg", "c1", "pool", body, nil)
		if c, status := armCode(err); status != http.StatusBadRequest || c != tc.code {
			t.Errorf("PUT orchestratorVersion %s: %v, want 400 %s", tc.version, err, tc.code)
		}
	}
	if v := *s.pool(t).OrchestratorVersion; v != "1.31.5" {
		t.Errorf("refused PUTs changed the pool's version to %s", v)
	}
	if err := decodeModel([]byte(`{"properties":{"maxUnavailable":"1"}}`), &armcs.AgentPool{}); err == nil || !strings.Contains(err.message, "properties.maxUnavailable") {
		t.Errorf("a field the model lacks: %v", err)
	}
}

func hasStatus(err error, status int) bool { _, s := armCode(err); return s == status }

// TestPDBFailsTheUpgrade: a pod whose eviction the PDB refuses past the
// drain timeout fails the upgrade with AKS's message naming the node, the
// pod and the PDB; under undrainableNodeBehavior Schedule (the default)
// AKS made the node schedulable again and deleted the surge nodes; the
// pool is Failed; with the PDB relaxed, the same request again finishes
// the pool.
func TestPDBFailsTheUpgrade(t *testing.T) {
	var blocked atomic.Bool
	blocked.Store(true)
	// The fake clientset does not honour PDBs: the reactor answers as the
	// API server does while the PDB allows no disruption.
	s := newSceneWith(t, 0, func(kube *fake.Clientset) {
		kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
			if a.GetSubresource() != "eviction" {
				return false, nil, nil
			}
			if blocked.Load() {
				return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
			}
			return true, nil, kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "shop", "web-1")
		})
		podsByNode(kube)
	})
	ctx := context.Background()
	nodes, _ := s.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	first := nodes.Items[0].Name
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", Labels: map[string]string{"app": "web"}}, Spec: corev1.PodSpec{NodeName: first}}
	if _, err := s.kube.CoreV1().Pods("shop").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pdb := `{"metadata":{"name":"web","namespace":"shop"},"spec":{"maxUnavailable":0,"selector":{"matchLabels":{"app":"web"}}}}`
	if err := createPDB(ctx, s.kube, pdb); err != nil {
		t.Fatal(err)
	}
	poller, err := s.pools.BeginUpgradeNodeImageVersion(ctx, "rg", "c1", "pool", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = poller.PollUntilDone(ctx, poll)
	want := fmt.Sprintf("Drain node %s failed when evicting pod web-1 failed with Too Many Requests error", first)
	if c, _ := armCode(err); c != "UpgradeFailed" || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "shop/web-1 blocked by pdb shop/web") {
		t.Fatalf("upgrade with a PDB at 0: %v", err)
	}
	s.waitState(t, stateFailed)
	after, _ := s.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if len(after.Items) != len(nodes.Items) {
		t.Errorf("%d nodes after the failure, want the pool's %d: the surge nodes deleted", len(after.Items), len(nodes.Items))
	}
	for _, n := range after.Items {
		if n.Name == first && (n.Spec.Unschedulable || n.Labels[NodeImageLabel] == latestImage) {
			t.Errorf("node %s held by the PDB: unschedulable %v, image %s; want schedulable again, not upgraded", first, n.Spec.Unschedulable, n.Labels[NodeImageLabel])
		}
	}
	blocked.Store(false)
	poller, err = s.pools.BeginUpgradeNodeImageVersion(ctx, "rg", "c1", "pool", nil)
	if err == nil {
		_, err = poller.PollUntilDone(ctx, poll)
	}
	if err != nil {
		t.Fatalf("the upgrade again after the PDB is relaxed: %v", err)
	}
	if got := *s.pool(t).NodeImageVersion; got != latestImage {
		t.Errorf("pool's image %s after the re-run, want %s", got, latestImage)
	}
}
