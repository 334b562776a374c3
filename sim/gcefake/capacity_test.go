package gcefake

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestRegionQuotasAndMachineTypes: regions.get reports the quotas the
// test set with their usage counted from the region's instances (3
// e2-standard-4: 12 vCPUs of CPUS, 3 INSTANCES, none of N2_CPUS);
// machineTypes.get answers a known type and 404 for another.
func TestRegionQuotasAndMachineTypes(t *testing.T) {
	srv, svc, _ := newScene(t, 3, Opportunistic)
	for metric, limit := range map[string]float64{"CPUS": 16, "INSTANCES": 10, "N2_CPUS": 8} {
		must(t, srv.SetQuota(project, "us-central1", metric, limit))
	}
	if err := srv.SetQuota(project, "us-central1", "DISKS_TOTAL_GB", 10); err == nil {
		t.Error("a quota the fake does not count was set")
	}
	r, err := svc.Regions.Get(project, "us-central1").Do()
	must(t, err)
	got := map[string][2]float64{}
	for _, q := range r.Quotas {
		got[q.Metric] = [2]float64{q.Usage, q.Limit}
	}
	for metric, want := range map[string][2]float64{"CPUS": {12, 16}, "INSTANCES": {3, 10}, "N2_CPUS": {0, 8}, "IN_USE_ADDRESSES": {0, defaultQuota}, "INSTANCE_GROUP_MANAGERS": {1, 500}} {
		if got[metric] != want {
			t.Errorf("quota %s: usage and limit %v, want %v", metric, got[metric], want)
		}
	}
	if other, err := svc.Regions.Get(project, "europe-west1").Do(); err != nil || len(other.Quotas) != len(r.Quotas) || other.Quotas[3].Metric != "CPUS" || other.Quotas[3].Usage != 0 || other.Quotas[3].Limit != defaultQuota {
		t.Errorf("another region: %+v %v, want its quotas unused, at the default", other, err)
	}
	mt, err := svc.MachineTypes.Get(project, zones[0], "e2-standard-4").Do()
	if err != nil || mt.GuestCpus != 4 || mt.Name != "e2-standard-4" {
		t.Errorf("machineTypes.get: %+v %v, want 4 vCPUs", mt, err)
	}
	var ge *googleapi.Error
	if _, err := svc.MachineTypes.Get(project, zones[0], "x9-huge-1").Do(); !errors.As(err, &ge) || ge.Code != http.StatusNotFound {
		t.Errorf("an unknown machine type: %v, want 404", err)
	}
	srv.SetOffered(zones[1], "e2-standard-4", false)
	if _, err := svc.MachineTypes.Get(project, zones[1], "e2-standard-4").Do(); !errors.As(err, &ge) || ge.Code != http.StatusNotFound {
		t.Errorf("a type taken out of zone %s: %v, want 404", zones[1], err)
	}
	if _, err := svc.MachineTypes.Get(project, zones[0], "e2-standard-4").Do(); err != nil {
		t.Errorf("another zone still offers the type: %v", err)
	}
	srv.SetOffered(zones[1], "e2-standard-4", true)
	if _, err := svc.MachineTypes.Get(project, zones[1], "e2-standard-4").Do(); err != nil {
		t.Errorf("the type put back in zone %s: %v", zones[1], err)
	}
}

// TestCreationsHeldToQuota: a group raised past the CPUS quota creates
// what fits; the rest stays CREATING with QUOTA_EXCEEDED in its last
// attempt, in Compute's words, until the quota is raised.
func TestCreationsHeldToQuota(t *testing.T) {
	srv, svc, key := newScene(t, 3, Opportunistic)
	must(t, srv.SetQuota(project, "us-central1", "CPUS", 16))
	_, err := svc.RegionInstanceGroupManagers.Resize(project, "us-central1", "ng", 5).Do()
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var failed *compute.ManagedInstance
	for failed == nil && ctx.Err() == nil {
		res, err := svc.RegionInstanceGroupManagers.ListManagedInstances(project, "us-central1", "ng").Do()
		must(t, err)
		running := 0
		for _, mi := range res.ManagedInstances {
			if mi.LastAttempt != nil && mi.LastAttempt.Errors != nil {
				failed = mi
			}
			if mi.CurrentAction == ActionNone {
				running++
			}
		}
		if failed != nil && running != 4 {
			t.Fatalf("%d instances run, want the 4 the quota of 16 vCPUs holds", running)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if failed == nil {
		t.Fatal("no creation failed over the quota")
	}
	if e := failed.LastAttempt.Errors.Errors[0]; e.Code != QuotaExceeded || e.Message != "Quota 'CPUS' exceeded.  Limit: 16.0 in region us-central1." {
		t.Errorf("last attempt %+v, want QUOTA_EXCEEDED of CPUS", e)
	}
	must(t, srv.SetQuota(project, "us-central1", "CPUS", 20))
	if g := waitStable(t, srv, key); len(g.Instances) != 5 {
		t.Errorf("%d instances once the quota holds them, want 5", len(g.Instances))
	}
}

// TestProviderProvesCapacity: the gce provider reads the fake's quota and
// machine type: 2 more e2-standard-4 need 8 of CPUS, of which 4 are free.
func TestProviderProvesCapacity(t *testing.T) {
	srv, _, key := newScene(t, 3, Proactive)
	must(t, srv.SetQuota(project, "us-central1", "CPUS", 16))
	must(t, srv.SetQuota(project, "us-central1", "INSTANCES", 100))
	p := openGCE(t, srv, key, plan.CloudTarget{Version: "tmpl-new"})
	c, err := p.(cloud.CapacityProver).ProveCapacity(context.Background(), 2)
	must(t, err)
	if len(c.Quotas) != 2 || len(c.Unprovable) != 0 || c.InstanceType != "e2-standard-4" {
		t.Fatalf("capacity %+v, want CPUS and INSTANCES of e2-standard-4", c)
	}
	if q := c.Quotas[0]; q.Scope != "gcp/sim-project/us-central1/CPUS" || q.Needed != 8 || q.Free != 4 || q.Largest() != 1 || !strings.Contains(q.Name, "CPUS") {
		t.Errorf("CPUS %+v, want 8 needed, 4 free, 1 fits", q)
	}
	if q := c.Quotas[1]; q.Needed != 2 || q.Free != 97 {
		t.Errorf("INSTANCES %+v, want 2 needed, 97 free", q)
	}
}

// TestExternalAddressesCount: an instance whose template has an access
// config takes one of IN_USE_ADDRESSES; one without takes none.
func TestExternalAddressesCount(t *testing.T) {
	srv, svc, _ := newScene(t, 3, Opportunistic)
	must(t, srv.CreateTemplate(TemplateSpec{Project: project, Name: "tmpl-ip", ImageProject: project, Image: "img-old", MachineType: "n2-standard-2", ExternalIP: true}))
	key, err := srv.CreateGroup(GroupSpec{Project: project, Name: "ip", Zone: zones[0], Template: "tmpl-ip", Size: 2})
	must(t, err)
	waitStable(t, srv, key)
	r, err := svc.Regions.Get(project, "us-central1").Do()
	must(t, err)
	for _, q := range r.Quotas {
		want, ok := map[string]float64{"IN_USE_ADDRESSES": 2, "N2_CPUS": 4, "CPUS": 12, "INSTANCES": 5}[q.Metric]
		if ok && q.Usage != want {
			t.Errorf("quota %s: usage %v, want %v", q.Metric, q.Usage, want)
		}
	}
}
