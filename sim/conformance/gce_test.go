package conformance

import (
	"context"
	"net/http"
	"path"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/conformance"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
)

// The managed instance group's project, node-group label (kOps's, which
// its template's kube-labels put on the nodes) and images.
const (
	gceProject = "sim-project"
	gceLabel   = "kops.k8s.io/instancegroup"
	gceOld     = "img-old"
	gceNew     = "img-new"
)

// TestGCEConformance runs the suite over provider gce and sim/gcefake: a
// regional managed instance group of three instances in three zones,
// upgraded to a new image (an instance template the run makes).
func TestGCEConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Provider:  gce.Name,
		NodeGroup: "ng",
		Args:      []string{"--image", gceNew},
		Nodes:     3,
		Setup:     setUpGCE,
	})
}

func setUpGCE(t *testing.T, client kubernetes.Interface, o conformance.Options) conformance.Env {
	t.Helper()
	// Faults: Google's answers under load, refused before the call is
	// acted on, and half as many changing calls done and then answered
	// 504 (gcefake.Options); the test hooks below never fail.
	srv, err := gcefake.StartWithKube(context.Background(), client, gcefake.Options{
		Project: gceProject, LaunchDelay: 50 * time.Millisecond, DeleteDelay: 20 * time.Millisecond,
		Faults: o.Faults, LateFaults: o.Faults / 2, FaultSeed: o.Seed,
	}, gcefake.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	t.Setenv(gce.EndpointEnv, srv.Endpoint)
	t.Setenv(gce.NoAuthEnv, "true")
	srv.RegisterImage(gceProject, gceOld, "node")
	srv.RegisterImage(gceProject, gceNew, "node")
	if err := srv.CreateTemplate(gcefake.TemplateSpec{Project: gceProject, Name: "ng-v1", ImageProject: gceProject, Image: gceOld,
		KubeLabels: map[string]string{gceLabel: "ng"}}); err != nil {
		t.Fatal(err)
	}
	key, err := srv.CreateGroup(gcefake.GroupSpec{Project: gceProject, Name: "ng", Region: "us-central1",
		Zones: []string{"us-central1-a", "us-central1-b", "us-central1-c"}, Template: "ng-v1", Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.WaitStable(ctx, key); err != nil {
		t.Fatal(err)
	}
	env := conformance.Env{
		Changes: func() []string { return gceChanges(srv) },
		Current: func(n *corev1.Node) bool { return path.Base(gceImage(srv, n.Name)) == gceNew },
	}
	if o.Faults > 0 {
		env.Faults = srv.Faults
	}
	return env
}

// gceReads are the POST methods of Compute and IAM that only read.
var gceReads = []string{".testIamPermissions", ".listManagedInstances", ".listErrors", ".listPerInstanceConfigs", ".getEffectiveFirewalls"}

// gceChanges lists the calls that changed something: every method but
// GET and the POSTs that only read.
func gceChanges(srv *gcefake.Server) []string {
	var out []string
	for _, c := range srv.Calls() {
		read := c.HTTPMethod == http.MethodGet
		for _, r := range gceReads {
			read = read || strings.HasSuffix(c.Method, r)
		}
		if !read {
			out = append(out, c.Method)
		}
	}
	return out
}

// gceImage is the image of the instance a node runs on, "" if no group
// has it.
func gceImage(srv *gcefake.Server, name string) string {
	for _, key := range srv.GroupKeys(gceProject) {
		g, _ := srv.Group(key)
		for _, in := range g.Instances {
			if in.Name == name {
				return in.Image
			}
		}
	}
	return ""
}
