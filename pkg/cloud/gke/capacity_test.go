package gke

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	compute "google.golang.org/api/compute/v1"
	container "google.golang.org/api/container/v1"
	"google.golang.org/api/option"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestPodRoom: each surge node takes a block of podIpv4CidrSize of the
// pool's pod range, of which podIpv4RangeUtilization is used.
func TestPodRoom(t *testing.T) {
	pool := func(size int64, used float64) *container.NodePool {
		return &container.NodePool{Name: "p", PodIpv4CidrSize: size, NetworkConfig: &container.NodeNetworkConfig{PodIpv4RangeUtilization: used}}
	}
	for _, tc := range []struct {
		name    string
		pool    *container.NodePool
		cidr    string
		want    plan.QuotaUse
		fits    bool
		largest int64
		err     string
	}{
		{name: "room", pool: pool(24, 0.5), cidr: "10.4.0.0/20", fits: true, largest: 8,
			want: plan.QuotaUse{Scope: "gcp/proj/us-central1/pods-10.4.0.0/20", Name: "pod range 10.4.0.0/20 of node pool p (a /24 per node)",
				Unit: "IP", Needed: 512, Free: 2048, Limit: 4096, PerNode: 256}},
		{name: "a /22 with 3 of 4 blocks used holds 1 surge node", pool: pool(24, 0.75), cidr: "10.4.0.0/22", largest: 1,
			want: plan.QuotaUse{Scope: "gcp/proj/us-central1/pods-10.4.0.0/22", Name: "pod range 10.4.0.0/22 of node pool p (a /24 per node)",
				Unit: "IP", Needed: 512, Free: 256, Limit: 1024, PerNode: 256}},
		{name: "full", pool: pool(23, 1), cidr: "10.4.0.0/22", largest: 0,
			want: plan.QuotaUse{Scope: "gcp/proj/us-central1/pods-10.4.0.0/22", Name: "pod range 10.4.0.0/22 of node pool p (a /23 per node)",
				Unit: "IP", Needed: 1024, Free: 0, Limit: 1024, PerNode: 512}},
		{name: "no block size", pool: pool(0, 0.5), cidr: "10.4.0.0/22", err: "reports no pod CIDR block size"},
		{name: "not a CIDR", pool: pool(24, 0.5), cidr: "/14", err: `pod range "/14", not an IPv4 CIDR`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := podRoom("proj", "us-central1", tc.pool, tc.cidr, 2)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("got %+v %v, want an error naming %q", got, err, tc.err)
				}
			case err != nil || got != tc.want || got.Fits() != tc.fits || got.Largest() != tc.largest:
				t.Errorf("got %+v %v (fits %v, largest %d)\nwant %+v (fits %v, largest %d)", got, err, got.Fits(), got.Largest(), tc.want, tc.fits, tc.largest)
			}
		})
	}
}

// TestProveCapacityOfAPool: the region's CPUS quota through Compute and
// the cluster's pod range the pool uses, read where the pool has none of
// its own; a pool whose Compute quotas cannot be read still has its pod
// range proven.
func TestProveCapacityOfAPool(t *testing.T) {
	for _, tc := range []struct {
		name       string
		region     bool
		quotas     int
		unprovable string
	}{
		{name: "quotas and pod range", region: true, quotas: 3},
		{name: "regions.get refused", quotas: 1, unprovable: `cannot get the quotas of region "us-central1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var out any
				switch r.URL.Path {
				case "/compute/v1/projects/proj/zones/us-central1-a/machineTypes/e2-standard-4":
					out = &compute.MachineType{Name: "e2-standard-4", GuestCpus: 4}
				case "/compute/v1/projects/proj/regions/us-central1":
					if !tc.region {
						w.WriteHeader(http.StatusForbidden)
						_, _ = w.Write([]byte(`{"error":{"code":403,"message":"Required 'compute.regions.get' permission"}}`))
						return
					}
					out = &compute.Region{Quotas: []*compute.Quota{{Metric: "CPUS", Limit: 24, Usage: 20}, {Metric: "INSTANCES", Limit: 10, Usage: 3}}}
				case "/v1/projects/proj/locations/us-central1/clusters/c1":
					out = &container.Cluster{IpAllocationPolicy: &container.IPAllocationPolicy{ClusterIpv4CidrBlock: "10.4.0.0/14"}}
				default:
					http.NotFound(w, r)
					return
				}
				_ = json.NewEncoder(w).Encode(out)
			}))
			t.Cleanup(srv.Close)
			ctx := context.Background()
			g, err := container.NewService(ctx, option.WithEndpoint(srv.URL+"/"), option.WithoutAuthentication())
			if err != nil {
				t.Fatal(err)
			}
			c, err := compute.NewService(ctx, option.WithEndpoint(srv.URL+"/compute/v1/"), option.WithoutAuthentication())
			if err != nil {
				t.Fatal(err)
			}
			n := &NodePool{c: &clients{gke: g, compute: c}, project: "proj", location: "us-central1", cluster: "c1", name: "p", pool: &container.NodePool{
				Name: "p", Locations: []string{"us-central1-a"}, Config: &container.NodeConfig{MachineType: "e2-standard-4"},
				PodIpv4CidrSize: 24, NetworkConfig: &container.NodeNetworkConfig{PodIpv4RangeUtilization: 0.25},
			}}
			got, err := n.ProveCapacity(ctx, 2)
			if err != nil || len(got.Quotas) != tc.quotas {
				t.Fatalf("got %+v %v, want %d quotas", got, err, tc.quotas)
			}
			if tc.region && (got.Quotas[0].Name != "quota CPUS of region us-central1" || got.Quotas[0].Needed != 8 || got.Quotas[0].Free != 4) {
				t.Errorf("CPUS %+v, want 8 needed, 4 free", got.Quotas[0])
			}
			pods := got.Quotas[len(got.Quotas)-1]
			if pods.Limit != 1<<18 || pods.Free != 3<<16 || pods.Needed != 512 {
				t.Errorf("pod range %+v, want the cluster's /14, a quarter used, 512 needed", pods)
			}
			if tc.unprovable != "" && (len(got.Unprovable) != 1 || !strings.HasPrefix(got.Unprovable[0], tc.unprovable)) {
				t.Errorf("unprovable %q, want %q", got.Unprovable, tc.unprovable)
			}
		})
	}
}
