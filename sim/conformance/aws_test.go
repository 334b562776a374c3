package conformance

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	awsprov "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aws"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/conformance"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
)

// The Auto Scaling group's images: its launch template's version 1
// launches awsOld, the run's target is awsNew.
const (
	awsOld = "ami-0old"
	awsNew = "ami-0new"
)

// TestAWSConformance runs the suite over provider aws and sim/awsfake: a
// self-managed Auto Scaling group of three instances in three zones,
// upgraded to a new AMI (a launch template version the run makes).
func TestAWSConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Provider:  awsprov.Name,
		NodeGroup: "ng",
		Args:      []string{"--ami", awsNew},
		Nodes:     3,
		Setup:     setUpAWS,
	})
}

func setUpAWS(t *testing.T, client kubernetes.Interface, o conformance.Options) conformance.Env {
	t.Helper()
	srv, err := awsfake.StartWithKube(context.Background(), client, awsfake.Options{
		Region: "us-east-1", LaunchDelay: 50 * time.Millisecond, TerminateDelay: 20 * time.Millisecond,
	}, awsfake.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	rec := &awsRecorder{next: srv}
	front := httptest.NewServer(rec)
	t.Cleanup(front.Close)
	awsEnv(t, front.URL)
	srv.RegisterImage(awsOld, "node-v1")
	srv.RegisterImage(awsNew, "node-v2")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The suite waits for the nodes (awsfake's NodeGroup watches with
	// streamed lists, which the fake clientset does not serve).
	lt := srv.CreateLaunchTemplate("ng", awsOld, "")
	if err := srv.CreateGroup(awsfake.GroupSpec{Name: "ng", Max: 3, Desired: 3, Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}, LaunchTemplateID: lt}); err != nil {
		t.Fatal(err)
	}
	if err := srv.WaitStable(ctx, "ng"); err != nil {
		t.Fatal(err)
	}
	// Faults: throttling and 5xx refused before the call is carried out,
	// and half as many answers lost after it was (awsfake/faults.go).
	srv.SetFaults(o.Faults, o.Faults/2, o.Seed)
	env := conformance.Env{
		Changes: rec.changes,
		Current: func(n *corev1.Node) bool {
			_, id, ok := awsprov.InstanceIDFromProviderID(n.Spec.ProviderID)
			in, found := srv.Instance(id)
			return ok && found && in.ImageID == awsNew
		},
	}
	if o.Faults > 0 {
		env.Faults = srv.Faults
	}
	return env
}

// awsEnv points the AWS SDK at endpoint with static credentials and none
// of the machine's configuration.
func awsEnv(t *testing.T, endpoint string) {
	t.Helper()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": endpoint, "AWS_REGION": "us-east-1", "AWS_PROFILE": "",
		"AWS_ACCESS_KEY_ID": "AKIDCONFORMANCE", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "",
		"AWS_CONFIG_FILE": dir + "/config", "AWS_SHARED_CREDENTIALS_FILE": dir + "/credentials", "AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
}

// awsRecorder stands in front of the fake and records the calls that
// change something: every query-protocol action (Auto Scaling, EC2, ELB,
// IAM, STS) or JSON target (SSM) but those that only read (Describe*,
// List*, Get*, Simulate*), and every REST call (EKS) but GET.
type awsRecorder struct {
	next http.Handler
	mu   sync.Mutex
	log  []string
}

func (a *awsRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if call, changing := awsCall(r, body); changing {
		a.mu.Lock()
		a.log = append(a.log, call)
		a.mu.Unlock()
	}
	a.next.ServeHTTP(w, r)
}

// awsCall names a request's operation and says whether it changes
// something.
func awsCall(r *http.Request, body []byte) (string, bool) {
	op := ""
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		op = target[strings.LastIndex(target, ".")+1:]
	} else if form, err := url.ParseQuery(string(body)); err == nil && form.Get("Action") != "" {
		op = form.Get("Action")
	} else {
		return r.Method + " " + r.URL.Path, r.Method != http.MethodGet
	}
	for _, read := range []string{"Describe", "List", "Get", "Simulate"} {
		if strings.HasPrefix(op, read) {
			return op, false
		}
	}
	return op, true
}

func (a *awsRecorder) changes() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.log...)
}

// TestAWSManagedConformance runs the suite over provider aws on an EKS
// managed node group of sim/awsfake: three nodes on Kubernetes 1.30 in a
// 1.31 cluster, upgraded to 1.31 (its latest release, ami-131) by EKS's
// own update, which the run starts and follows.
func TestAWSManagedConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Provider:  awsprov.Name,
		NodeGroup: "mng",
		Args:      []string{"--kubernetes-version", "1.31"},
		Nodes:     3,
		Setup:     setUpEKS,
	})
}

func setUpEKS(t *testing.T, client kubernetes.Interface, o conformance.Options) conformance.Env {
	t.Helper()
	eks := awsfake.EKSOptions{EvictionTimeout: 5 * time.Second, CordonWait: 50 * time.Millisecond, DeleteDrainTimeout: 5 * time.Second,
		NodeReadyTimeout: time.Minute, EvictRetry: 50 * time.Millisecond, ConfigUpdateTime: 50 * time.Millisecond}
	srv, err := awsfake.StartWithKube(context.Background(), client, awsfake.Options{
		Region: "us-east-1", LaunchDelay: 50 * time.Millisecond, TerminateDelay: 20 * time.Millisecond, EKS: eks,
	}, awsfake.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	rec := &awsRecorder{next: srv}
	front := httptest.NewServer(rec)
	t.Cleanup(front.Close)
	awsEnv(t, front.URL)
	srv.CreateEKSCluster("c", "1.31")
	srv.AddRelease(awsfake.Release{KubernetesVersion: "1.30", ReleaseVersion: "1.30.9-20250101", ImageID: "ami-130"})
	srv.AddRelease(awsfake.Release{KubernetesVersion: "1.31", ReleaseVersion: "1.31.2-20250201", ImageID: "ami-131"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := srv.ManagedNodeGroup(ctx, awsfake.ManagedNodeGroupSpec{Cluster: "c", Name: "mng", Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"},
		Min: 1, Desired: 3, Max: 4, Version: "1.30"}); err != nil {
		t.Fatal(err)
	}
	srv.SetFaults(o.Faults, o.Faults/2, o.Seed)
	env := conformance.Env{
		Changes: rec.changes,
		Current: func(n *corev1.Node) bool { return n.Labels[awsfake.ImageLabel] == "ami-131" },
	}
	if o.Faults > 0 {
		env.Faults = srv.Faults
	}
	return env
}
