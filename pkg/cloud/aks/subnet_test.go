package aks

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/azarm"
)

const (
	nodeSubnet = "/subscriptions/sub/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes"
	podSubnet  = "/subscriptions/sub/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/vnet/subnets/pods"
)

// vnetServer answers Virtual Networks - List Usage of vnet, one subnet a
// page: nodes 100 used of 251, pods 40 of 1019.
func vnetServer(t *testing.T) {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/subscriptions/sub/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/vnet/usages" || r.URL.Query().Get("api-version") != azarm.NetworkAPIVersion {
			http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
			return
		}
		page := azarm.SubnetUsageList{Value: []azarm.SubnetUsage{{ID: podSubnet, CurrentValue: 40, Limit: 1019}}}
		if r.URL.Query().Get("$skiptoken") == "" {
			page = azarm.SubnetUsageList{Value: []azarm.SubnetUsage{{ID: strings.ToLower(nodeSubnet), CurrentValue: 100, Limit: 251}},
				NextLink: srv.URL + r.URL.Path + "?api-version=" + azarm.NetworkAPIVersion + "&$skiptoken=1"}
		}
		_ = json.NewEncoder(w).Encode(page)
	}))
	t.Cleanup(srv.Close)
	t.Setenv(EndpointEnv, srv.URL)
	t.Setenv(NoAuthEnv, "true")
}

func TestProveSubnetIPs(t *testing.T) {
	busy := []corev1.Pod{}
	for i := range 20 { // 20 pods on node a, and one on the host's network
		busy = append(busy, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p" + string(rune('a'+i)), Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: "a"}})
	}
	busy = append(busy, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "host", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: "a", HostNetwork: true}})
	azure, kubenet, none := armcs.NetworkPluginAzure, armcs.NetworkPluginKubenet, armcs.NetworkPluginNone
	overlay := armcs.NetworkPluginModeOverlay
	for _, tc := range []struct {
		name       string
		plugin     *armcs.NetworkPlugin
		mode       *armcs.NetworkPluginMode
		vnet, pods string
		maxPods    int32
		// want is each subnet's name, IPs per node, needed and free.
		want       []string
		unprovable string
	}{
		{name: "Azure CNI: 1 + maxPods per node", plugin: &azure, vnet: nodeSubnet, maxPods: 30, want: []string{`"nodes"|31|93|151|251`}},
		{name: "Azure CNI Overlay: the node's own", plugin: &azure, mode: &overlay, vnet: nodeSubnet, maxPods: 250, want: []string{`"nodes"|1|3|151|251`}},
		{name: "kubenet: the node's own", plugin: &kubenet, vnet: nodeSubnet, maxPods: 110, want: []string{`"nodes"|1|3|151|251`}},
		// 20 pods and 8 spare: two batches of 16.
		{name: "pod subnet: the busiest node's pods in batches of 16", plugin: &azure, vnet: nodeSubnet, pods: podSubnet, maxPods: 30,
			want: []string{`"nodes"|1|3|151|251`, `"pods"|32|96|979|1019`}},
		{name: "pod subnet: at most maxPods", plugin: &azure, vnet: nodeSubnet, pods: podSubnet, maxPods: 5, want: []string{`"nodes"|1|3|151|251`, `"pods"|16|48|979|1019`}},
		{name: "no vnetSubnetID: AKS's own virtual network", plugin: &azure, unprovable: "names no vnetSubnetID"},
		{name: "BYO CNI: the nodes only", plugin: &none, vnet: nodeSubnet, want: []string{`"nodes"|1|3|151|251`}, unprovable: `network plugin "none"`},
		{name: "a subnet not in the usages", plugin: &kubenet, vnet: strings.Replace(nodeSubnet, "nodes", "gone", 1), unprovable: `name no subnet "gone"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vnetServer(t)
			c, err := newClients("sub")
			if err != nil {
				t.Fatal(err)
			}
			props := &armcs.ManagedClusterAgentPoolProfileProperties{VMSize: ptrTo("Standard_D4s_v5"), MaxPods: &tc.maxPods}
			if tc.vnet != "" {
				props.VnetSubnetID = &tc.vnet
			}
			if tc.pods != "" {
				props.PodSubnetID = &tc.pods
			}
			kube := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{AgentPoolLabel: "pool"}}})
			for i := range busy {
				_, _ = kube.CoreV1().Pods("ns").Create(context.Background(), &busy[i], metav1.CreateOptions{})
			}
			a := &AgentPool{c: c, kube: kube, id: clusterID{subscription: "sub", group: "rg", name: "c1"}, name: "pool",
				pool: armcs.AgentPool{Properties: props}, network: &armcs.NetworkProfile{NetworkPlugin: tc.plugin, NetworkPluginMode: tc.mode}}
			got, err := a.ProveCapacity(context.Background(), 3)
			if err != nil {
				t.Fatal(err)
			}
			var have []string
			for _, q := range got.Quotas {
				name, _, _ := strings.Cut(strings.TrimPrefix(q.Name, "subnet "), " ")
				have = append(have, strings.Join([]string{name, itoa(q.PerNode), itoa(q.Needed), itoa(q.Free), itoa(q.Limit)}, "|"))
			}
			if strings.Join(have, ";") != strings.Join(tc.want, ";") {
				t.Errorf("quotas %v, want %v", have, tc.want)
			}
			if u := strings.Join(got.Unprovable, ";"); tc.unprovable == "" && u != "" || !strings.Contains(u, tc.unprovable) {
				t.Errorf("unprovable %q, want %q", u, tc.unprovable)
			}
			if got.InstanceType != "Standard_D4s_v5" {
				t.Errorf("instance type %q, want the pool's VM size", got.InstanceType)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
