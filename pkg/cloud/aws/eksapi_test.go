package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"
)

// eksRoutes are the REST paths service/eks and SSM use, and the IAM action
// of each.
var eksRoutes = []struct {
	method string
	path   *regexp.Regexp
	action string
}{
	{"GET", regexp.MustCompile(`^/clusters/[^/]+$`), "eks:DescribeCluster"},
	{"GET", regexp.MustCompile(`^/clusters/[^/]+/node-groups$`), "eks:ListNodegroups"},
	{"POST", regexp.MustCompile(`^/clusters/[^/]+/node-groups$`), "eks:CreateNodegroup"},
	{"GET", regexp.MustCompile(`^/clusters/[^/]+/node-groups/[^/]+$`), "eks:DescribeNodegroup"},
	{"DELETE", regexp.MustCompile(`^/clusters/[^/]+/node-groups/[^/]+$`), "eks:DeleteNodegroup"},
	{"POST", regexp.MustCompile(`^/clusters/[^/]+/node-groups/[^/]+/update-config$`), "eks:UpdateNodegroupConfig"},
	{"POST", regexp.MustCompile(`^/clusters/[^/]+/node-groups/[^/]+/update-version$`), "eks:UpdateNodegroupVersion"},
	{"GET", regexp.MustCompile(`^/clusters/[^/]+/updates$`), "eks:ListUpdates"},
	{"GET", regexp.MustCompile(`^/clusters/[^/]+/updates/[^/]+$`), "eks:DescribeUpdate"},
	{"POST", regexp.MustCompile(`^/$`), "ssm:GetParameter"},
}

// fakeEKS answers each IAM action with the next of its canned replies
// (the last one repeats) and records the actions called.
type fakeEKS struct {
	mu      sync.Mutex
	replies map[string][]reply
	calls   []string
}

func (f *fakeEKS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	action := ""
	for _, rt := range eksRoutes {
		if rt.method == r.Method && rt.path.MatchString(r.URL.Path) {
			action = rt.action
		}
	}
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.calls = append(f.calls, action)
	if action == "eks:CreateNodegroup" {
		// IAM checks these too: tags given at creation, and the node
		// role handed to EKS.
		if body["tags"] != nil {
			f.calls = append(f.calls, "eks:TagResource")
		}
		f.calls = append(f.calls, "iam:PassRole")
	}
	rs := f.replies[action]
	rep := reply{404, `{"message":"unexpected"}`}
	if len(rs) > 0 {
		rep = rs[0]
		if len(rs) > 1 {
			f.replies[action] = rs[1:]
		}
	}
	f.mu.Unlock()
	if rep.status >= 400 {
		var e struct{ Code string }
		_ = json.Unmarshal([]byte(rep.body), &e)
		w.Header().Set("X-Amzn-ErrorType", e.Code)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	_, _ = w.Write([]byte(rep.body))
}

func (f *fakeEKS) called(action string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == action {
			n++
		}
	}
	return n
}

func newTestEKS(t *testing.T, replies map[string][]reply) (*EKS, *fakeEKS) {
	t.Helper()
	f := &fakeEKS{replies: replies}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	e := NewEKSFromConfig(sdkaws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		BaseEndpoint: sdkaws.String(srv.URL),
	})
	e.SetPoll(time.Millisecond, 2*time.Millisecond)
	return e, f
}

func eksErr(status int, code, msg string) reply {
	return reply{status, `{"Code":"` + code + `","message":"` + msg + `"}`}
}

// ngJSON is node group ng1 of cluster c1 (launch template lt-1 version 2,
// AL2023, 3 nodes, maxUnavailable 1, DEFAULT) in the given status.
func ngJSON(status string) reply {
	return reply{200, `{"nodegroup":{"nodegroupName":"ng1","clusterName":"c1","nodegroupArn":"arn:ng1",
"version":"1.30","releaseVersion":"1.30.0-20240101","status":"` + status + `","capacityType":"ON_DEMAND",
"scalingConfig":{"minSize":1,"maxSize":5,"desiredSize":3},"instanceTypes":["m5.large"],"subnets":["subnet-a","subnet-b"],
"amiType":"AL2023_x86_64_STANDARD","nodeRole":"arn:aws:iam::1:role/node","labels":{"team":"web"},
"taints":[{"key":"dedicated","value":"web","effect":"NO_SCHEDULE"}],
"resources":{"autoScalingGroups":[{"name":"eks-ng1-abc"}]},
"health":{"issues":[{"code":"AsgInstanceLaunchFailures","message":"no capacity","resourceIds":["eks-ng1-abc"]}]},
"updateConfig":{"maxUnavailable":1,"updateStrategy":"DEFAULT"},
"launchTemplate":{"id":"lt-1","name":"web","version":"2"},"tags":{"env":"prod"}}}`}
}

func updateJSON(id, typ, status string, errs string) reply {
	return reply{200, `{"update":{"id":"` + id + `","type":"` + typ + `","status":"` + status + `","createdAt":1700000000,
"params":[{"type":"ReleaseVersion","value":"1.30.1-20240201"}],"errors":[` + errs + `]}}`}
}

func TestDescribeNodegroup(t *testing.T) {
	e, _ := newTestEKS(t, map[string][]reply{"eks:DescribeNodegroup": {ngJSON("ACTIVE")}})
	g, err := e.DescribeNodegroup(context.Background(), "c1", "ng1")
	if err != nil {
		t.Fatal(err)
	}
	want := EKSNodegroup{
		Cluster: "c1", Name: "ng1", ARN: "arn:ng1", Status: "ACTIVE", Version: "1.30", ReleaseVersion: "1.30.0-20240101",
		AMIType: "AL2023_x86_64_STANDARD", CapacityType: "ON_DEMAND", Min: 1, Desired: 3, Max: 5,
		Update:         UpdateSettings{MaxUnavailable: 1, Strategy: "DEFAULT"},
		Health:         []HealthIssue{{Code: "AsgInstanceLaunchFailures", Message: "no capacity", ResourceIDs: []string{"eks-ng1-abc"}}},
		LaunchTemplate: &TemplateRef{ID: "lt-1", Name: "web", Version: "2"},
		Subnets:        []string{"subnet-a", "subnet-b"}, InstanceTypes: []string{"m5.large"},
		Labels: map[string]string{"team": "web"}, Tags: map[string]string{"env": "prod"},
		Taints:   []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}},
		NodeRole: "arn:aws:iam::1:role/node", AutoScalingGroups: []string{"eks-ng1-abc"},
	}
	gotJSON, _ := json.Marshal(g)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("got  %s\nwant %s", gotJSON, wantJSON)
	}
}

func TestDescribeNodegroupNotFoundIsInput(t *testing.T) {
	e, _ := newTestEKS(t, map[string][]reply{"eks:DescribeNodegroup": {eksErr(404, "ResourceNotFoundException", "No node group found for name: ng9.")}})
	_, err := e.DescribeNodegroup(context.Background(), "c1", "ng9")
	var ae *Error
	if err == nil || !strings.Contains(err.Error(), `"ng9"`) || !asError(err, &ae) || !ae.Input() {
		t.Fatalf("err = %v, want an input error naming ng9", err)
	}
}

func asError(err error, ae **Error) bool {
	e, ok := err.(*Error)
	*ae = e
	return ok
}

func TestManagedGroupOf(t *testing.T) {
	for _, tc := range []struct {
		name       string
		tags       map[string]Tag
		cluster, n string
		ok         bool
	}{
		{"managed", map[string]Tag{TagClusterName: {Value: "c1"}, TagNodegroupName: {Value: "ng1"}}, "c1", "ng1", true},
		{"self-managed", map[string]Tag{"kubernetes.io/cluster/c1": {Value: "owned"}}, "", "", false},
		{"half-tagged", map[string]Tag{TagNodegroupName: {Value: "ng1"}}, "", "ng1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, n, ok := ManagedGroupOf(&AutoScalingGroup{Tags: tc.tags})
			if c != tc.cluster || n != tc.n || ok != tc.ok {
				t.Errorf("got %q %q %v, want %q %q %v", c, n, ok, tc.cluster, tc.n, tc.ok)
			}
		})
	}
}

func TestReleaseParameter(t *testing.T) {
	for _, tc := range []struct{ amiType, want string }{
		{"AL2_x86_64", "/aws/service/eks/optimized-ami/1.31/amazon-linux-2/recommended/release_version"},
		{"AL2_ARM_64", "/aws/service/eks/optimized-ami/1.31/amazon-linux-2-arm64/recommended/release_version"},
		{"AL2023_x86_64_STANDARD", "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/release_version"},
		{"BOTTLEROCKET_ARM_64_NVIDIA", "/aws/service/bottlerocket/aws-k8s-1.31-nvidia/arm64/latest/image_version"},
		{"BOTTLEROCKET_x86_64", "/aws/service/bottlerocket/aws-k8s-1.31/x86_64/latest/image_version"},
		{"BOTTLEROCKET_x86_64_FIPS", "/aws/service/bottlerocket/aws-k8s-1.31-fips/x86_64/latest/image_version"},
		{"BOTTLEROCKET_x86_64_NVIDIA_FIPS", "/aws/service/bottlerocket/aws-k8s-1.31-nvidia-fips/x86_64/latest/image_version"},
		{"BOTTLEROCKET_ARM_64_NVIDIA_FIPS", "/aws/service/bottlerocket/aws-k8s-1.31-nvidia-fips/arm64/latest/image_version"},
		{"CUSTOM", ""},
		{"WINDOWS_CORE_2022_x86_64", ""},
	} {
		t.Run(tc.amiType, func(t *testing.T) {
			got, ok := ReleaseParameter("1.31", tc.amiType)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("got %q %v, want %q", got, ok, tc.want)
			}
		})
	}
}

// TestEveryAMITypeHasARelease: each AMI type of the SDK's enum either has
// its release parameter or is one AWS publishes none of, so an AMI type
// added to the SDK fails here until it is placed.
func TestEveryAMITypeHasARelease(t *testing.T) {
	for _, a := range ekstypes.AMITypes("").Values() {
		t.Run(string(a), func(t *testing.T) {
			_, mapped := ReleaseParameter("1.31", string(a))
			if none := slices.Contains(unpublished, a); mapped == none {
				t.Errorf("AMI type %q: release parameter %v, unpublished %v; want exactly one", a, mapped, none)
			}
		})
	}
}

func TestLatestRelease(t *testing.T) {
	e, _ := newTestEKS(t, map[string][]reply{"ssm:GetParameter": {
		{200, `{"Parameter":{"Name":"x","Type":"String","Value":"1.31.2-20250101","Version":3}}`},
		eksErr(400, "ParameterNotFound", ""),
	}})
	ctx := context.Background()
	if got, err := e.LatestRelease(ctx, "1.31", "AL2023_x86_64_STANDARD"); err != nil || got != "1.31.2-20250101" {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := e.LatestRelease(ctx, "1.99", "AL2023_x86_64_STANDARD"); err == nil || !strings.Contains(err.Error(), "--kubernetes-version") {
		t.Errorf("err = %v, want one naming --kubernetes-version", err)
	}
	if _, err := e.LatestRelease(ctx, "1.31", "CUSTOM"); err == nil || !strings.Contains(err.Error(), "--release-version") {
		t.Errorf("err = %v, want one naming --release-version", err)
	}
}

func TestValidateTarget(t *testing.T) {
	withLT := &EKSNodegroup{Name: "ng1", Cluster: "c1", AMIType: "AL2023_x86_64_STANDARD", LaunchTemplate: &TemplateRef{ID: "lt-1", Name: "web", Version: "2"}}
	custom := &EKSNodegroup{Name: "ng1", Cluster: "c1", AMIType: "CUSTOM", LaunchTemplate: &TemplateRef{ID: "lt-1", Name: "web", Version: "2"}}
	plain := &EKSNodegroup{Name: "ng1", Cluster: "c1", AMIType: "AL2023_x86_64_STANDARD"}
	for _, tc := range []struct {
		name, wantErr string
		g             *EKSNodegroup
		t             ManagedTarget
	}{
		{"latest", "", plain, ManagedTarget{}},
		{"control plane's version", "", plain, ManagedTarget{Version: "1.31"}},
		{"above the control plane", "above the control plane", plain, ManagedTarget{Version: "1.32"}},
		{"release with custom AMI", "custom AMI", custom, ManagedTarget{ReleaseVersion: "1.31.0-1"}},
		{"version with custom AMI", "custom AMI", custom, ManagedTarget{Version: "1.31"}},
		{"template version, custom AMI", "", custom, ManagedTarget{LaunchTemplate: &TemplateRef{ID: "lt-1", Version: "3"}}},
		{"own template by name", "", withLT, ManagedTarget{LaunchTemplate: &TemplateRef{Name: "web", Version: "3"}}},
		{"another template", "is not the one", withLT, ManagedTarget{LaunchTemplate: &TemplateRef{ID: "lt-9", Version: "1"}}},
		{"template on a group without", "not created with a launch template", plain, ManagedTarget{LaunchTemplate: &TemplateRef{ID: "lt-1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateTarget(tc.g, "1.31", tc.t)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ae *Error
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !asError(err, &ae) || !ae.Input() {
				t.Fatalf("err = %v, want an input error with %q", err, tc.wantErr)
			}
		})
	}
}

func TestStartVersionUpdate(t *testing.T) {
	for _, tc := range []struct {
		name        string
		replies     map[string][]reply
		wantID      string
		wantStarted bool
		wantCalls   int // UpdateNodegroupVersion
	}{{
		name: "starts one",
		replies: map[string][]reply{
			"eks:ListUpdates":            {{200, `{"updateIds":["u1"]}`}},
			"eks:DescribeUpdate":         {updateJSON("u1", "VersionUpdate", "Successful", ""), updateJSON("u2", "VersionUpdate", "InProgress", "")},
			"eks:UpdateNodegroupVersion": {updateJSON("u2", "VersionUpdate", "InProgress", "")},
		},
		wantID: "u2", wantStarted: true, wantCalls: 1,
	}, {
		name: "follows the running one",
		replies: map[string][]reply{
			"eks:ListUpdates":    {{200, `{"updateIds":["u1","u2"]}`}},
			"eks:DescribeUpdate": {updateJSON("u2", "VersionUpdate", "InProgress", "")},
		},
		wantID: "u2",
	}, {
		name: "a lost answer settles by reading",
		replies: map[string][]reply{
			"eks:ListUpdates":            {{200, `{"updateIds":[]}`}, {200, `{"updateIds":["u3"]}`}},
			"eks:DescribeUpdate":         {updateJSON("u3", "VersionUpdate", "InProgress", "")},
			"eks:UpdateNodegroupVersion": {eksErr(409, "ResourceInUseException", "Nodegroup ng1 is currently being updated")},
		},
		wantID: "u3", wantCalls: 1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newTestEKS(t, tc.replies)
			u, started, err := e.StartVersionUpdate(context.Background(), "c1", "ng1", ManagedTarget{ReleaseVersion: "1.30.1-20240201"})
			if err != nil {
				t.Fatal(err)
			}
			if u.ID != tc.wantID || started != tc.wantStarted || f.called("eks:UpdateNodegroupVersion") != tc.wantCalls {
				t.Errorf("got %s started=%v after %d calls, want %s started=%v after %d", u.ID, started,
					f.called("eks:UpdateNodegroupVersion"), tc.wantID, tc.wantStarted, tc.wantCalls)
			}
		})
	}
}

func TestStartVersionUpdateRefusedIsInput(t *testing.T) {
	e, _ := newTestEKS(t, map[string][]reply{
		"eks:ListUpdates":            {{200, `{"updateIds":[]}`}},
		"eks:UpdateNodegroupVersion": {eksErr(400, "InvalidParameterException", "Requested release version 9 is not valid.")},
	})
	_, _, err := e.StartVersionUpdate(context.Background(), "c1", "ng1", ManagedTarget{ReleaseVersion: "9"})
	var ae *Error
	if err == nil || !asError(err, &ae) || !ae.Input() || !strings.Contains(err.Error(), "not valid") {
		t.Fatalf("err = %v, want EKS's refusal as an input error", err)
	}
}

func TestWaitUpdate(t *testing.T) {
	failed := `{"errorCode":"PodEvictionFailure","errorMessage":"Reached max retries while trying to evict pods from nodes in node group ng1","resourceIds":["ip-10-0-0-1"]}`
	e, _ := newTestEKS(t, map[string][]reply{"eks:DescribeUpdate": {
		updateJSON("u1", "VersionUpdate", "InProgress", ""),
		eksErr(400, "ThrottlingException", "Rate exceeded"),
		updateJSON("u1", "VersionUpdate", "Failed", failed),
	}})
	seen := 0
	u, err := e.WaitUpdate(context.Background(), "c1", "ng1", "u1", func(*ManagedUpdate) { seen++ })
	if err != nil {
		t.Fatal(err)
	}
	want := []UpdateError{{Code: "PodEvictionFailure", Message: "Reached max retries while trying to evict pods from nodes in node group ng1", ResourceIDs: []string{"ip-10-0-0-1"}}}
	if u.Status != "Failed" || seen != 2 || len(u.Errors) != 1 || u.Errors[0].Code != want[0].Code || !slices.Equal(u.Errors[0].ResourceIDs, want[0].ResourceIDs) {
		t.Errorf("got %+v after %d reads, want Failed with %+v after 2", u, seen, want)
	}
	if u.Params["ReleaseVersion"] != "1.30.1-20240201" || u.Created.IsZero() {
		t.Errorf("params %v created %v", u.Params, u.Created)
	}
}

func TestUpdateConfig(t *testing.T) {
	set := ConfigChange{Update: &UpdateSettings{MaxUnavailable: 2, Strategy: "MINIMAL"}}
	applied := strings.Replace(ngJSON("ACTIVE").body, `"maxUnavailable":1,"updateStrategy":"DEFAULT"`, `"maxUnavailable":2,"updateStrategy":"MINIMAL"`, 1)
	for _, tc := range []struct {
		name      string
		replies   map[string][]reply
		wantCalls int
		wantErr   string
	}{
		{"already set: no call", map[string][]reply{"eks:DescribeNodegroup": {{200, applied}}}, 0, ""},
		{"set, then waits for ACTIVE", map[string][]reply{
			"eks:DescribeNodegroup":     {ngJSON("ACTIVE"), {200, strings.Replace(applied, `"ACTIVE"`, `"UPDATING"`, 1)}, {200, applied}},
			"eks:UpdateNodegroupConfig": {updateJSON("c1", "ConfigUpdate", "InProgress", "")},
			"eks:DescribeUpdate":        {updateJSON("c1", "ConfigUpdate", "InProgress", ""), updateJSON("c1", "ConfigUpdate", "Successful", "")},
		}, 1, ""},
		{"the update fails", map[string][]reply{
			"eks:DescribeNodegroup":     {ngJSON("ACTIVE")},
			"eks:UpdateNodegroupConfig": {updateJSON("c1", "ConfigUpdate", "InProgress", "")},
			"eks:DescribeUpdate":        {updateJSON("c1", "ConfigUpdate", "Failed", `{"errorCode":"NodeCreationFailure","errorMessage":"no capacity","resourceIds":["i-1"]}`)},
		}, 1, "the configuration update c1 of managed node group \"ng1\" ended Failed; NodeCreationFailure: no capacity [i-1]"},
		{"the group ends DEGRADED", map[string][]reply{
			"eks:DescribeNodegroup":     {ngJSON("ACTIVE"), {200, strings.Replace(applied, `"ACTIVE"`, `"DEGRADED"`, 1)}},
			"eks:UpdateNodegroupConfig": {updateJSON("c1", "ConfigUpdate", "InProgress", "")},
			"eks:DescribeUpdate":        {updateJSON("c1", "ConfigUpdate", "Successful", "")},
		}, 1, "is DEGRADED; AsgInstanceLaunchFailures: no capacity [eks-ng1-abc]"},
		{"answer lost, set all the same", map[string][]reply{
			"eks:DescribeNodegroup":     {ngJSON("ACTIVE"), {200, applied}},
			"eks:UpdateNodegroupConfig": {eksErr(409, "ResourceInUseException", "in use")},
		}, 1, ""},
		{"refused", map[string][]reply{
			"eks:DescribeNodegroup":     {ngJSON("ACTIVE")},
			"eks:UpdateNodegroupConfig": {eksErr(400, "InvalidParameterException", "bad")},
		}, 1, "bad"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newTestEKS(t, tc.replies)
			g, err := e.UpdateConfig(context.Background(), "c1", "ng1", set)
			if (err != nil) != (tc.wantErr != "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) || f.called("eks:UpdateNodegroupConfig") != tc.wantCalls {
				t.Fatalf("err = %v after %d calls, want error %v after %d", err, f.called("eks:UpdateNodegroupConfig"), tc.wantErr, tc.wantCalls)
			}
			if err == nil && (g.Update.MaxUnavailable != 2 || g.Status != "ACTIVE") {
				t.Errorf("group %+v", g)
			}
		})
	}
}

func TestCreateGreen(t *testing.T) {
	blue := &EKSNodegroup{Cluster: "c1", Name: "ng1", AMIType: "CUSTOM", NodeRole: "arn:role", Subnets: []string{"subnet-a"},
		LaunchTemplate: &TemplateRef{ID: "lt-1", Version: "2"}, Update: UpdateSettings{MaxUnavailable: 1, Strategy: "DEFAULT"},
		Tags: map[string]string{"env": "prod"}, DiskSize: 20}
	spec := GreenSpec{Name: "ng1-green", TemplateVersion: "3", Min: 1, Desired: 3, Max: 5}
	t.Run("input copies blue", func(t *testing.T) {
		in := greenInput(blue, spec)
		if *in.LaunchTemplate.Id != "lt-1" || *in.LaunchTemplate.Version != "3" || in.DiskSize != nil || in.AmiType != "" ||
			in.Version != nil || *in.ScalingConfig.DesiredSize != 3 || *in.UpdateConfig.MaxUnavailable != 1 || in.Tags["env"] != "prod" {
			t.Errorf("input %+v", in)
		}
	})
	t.Run("a token of its own each call, never green's name", func(t *testing.T) {
		a, b := greenInput(blue, spec).ClientRequestToken, greenInput(blue, spec).ClientRequestToken
		if *a == *b || *a == spec.Name || *a == "" {
			t.Errorf("tokens %q and %q for green %q", *a, *b, spec.Name)
		}
	})
	t.Run("aws: tags left out", func(t *testing.T) {
		b := *blue
		b.Tags = map[string]string{"env": "prod", "aws:cloudformation:stack-name": "s", "AWS:x": "y", "team": "aws:reserved"}
		in := greenInput(&b, GreenSpec{Name: "g", Tags: map[string]string{TagBlue: "ng1", TagRole: RoleGreen}})
		want := map[string]string{"env": "prod", TagBlue: "ng1", TagRole: RoleGreen}
		if !maps.Equal(in.Tags, want) {
			t.Errorf("tags %v, want %v", in.Tags, want)
		}
	})
	t.Run("past 50 tags refused before the call", func(t *testing.T) {
		b := *blue
		b.Tags = map[string]string{"aws:cloudformation:stack-id": "x"}
		for i := range 49 {
			b.Tags[fmt.Sprintf("k%d", i)] = "v"
		}
		e, f := newTestEKS(t, map[string][]reply{})
		_, err := e.CreateGreen(context.Background(), &b, GreenSpec{Name: "g", Tags: map[string]string{TagBlue: "ng1", TagRole: RoleGreen}})
		if err == nil || !isInput(err) || !strings.Contains(err.Error(), "51, over EKS's 50") || f.called("eks:CreateNodegroup") != 0 {
			t.Fatalf("err = %v after %d calls, want an input error counting 51 and no call", err, f.called("eks:CreateNodegroup"))
		}
	})
	t.Run("exists already: found, not made twice", func(t *testing.T) {
		e, f := newTestEKS(t, map[string][]reply{
			"eks:CreateNodegroup":   {eksErr(409, "ResourceInUseException", "NodeGroup already exists with name ng1-green and cluster name c1")},
			"eks:DescribeNodegroup": {ngJSON("CREATING")},
		})
		g, err := e.CreateGreen(context.Background(), blue, spec)
		if err != nil || g.Status != "CREATING" || f.called("eks:CreateNodegroup") != 1 {
			t.Fatalf("got %+v, %v", g, err)
		}
	})
}

// TestGreenKeepsBlueSettings: remote access, node auto repair and the
// warm pool EKS describes on blue are CreateNodegroup's for green, but
// remote access with a launch template, which EKS refuses (API
// Reference, CreateNodegroup: remoteAccess).
func TestGreenKeepsBlueSettings(t *testing.T) {
	settings := `"remoteAccess":{"ec2SshKey":"ops","sourceSecurityGroups":["sg-1"]},
"nodeRepairConfig":{"enabled":true,"maxUnhealthyNodeThresholdPercentage":20},
"warmPoolConfig":{"enabled":true,"minSize":1,"maxGroupPreparedCapacity":4,"poolState":"STOPPED","reuseOnScaleIn":true}`
	for _, tc := range []struct {
		name, launchTemplate string
		wantRemote           bool
	}{
		{"no launch template", "", true},
		{"a launch template", `"launchTemplate":{"id":"lt-1","version":"2"},`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newTestEKS(t, map[string][]reply{"eks:DescribeNodegroup": {{200, `{"nodegroup":{"nodegroupName":"ng1","clusterName":"c1",
"status":"ACTIVE","amiType":"AL2023_x86_64_STANDARD",` + tc.launchTemplate + settings + `}}`}}})
			blue, err := e.DescribeNodegroup(context.Background(), "c1", "ng1")
			if err != nil {
				t.Fatal(err)
			}
			in := greenInput(blue, GreenSpec{Name: "g", Min: 1, Desired: 1, Max: 2})
			if r := in.RemoteAccess; (r != nil) != tc.wantRemote || (r != nil && (sdkaws.ToString(r.Ec2SshKey) != "ops" || !slices.Equal(r.SourceSecurityGroups, []string{"sg-1"}))) {
				t.Errorf("remoteAccess %+v, want it copied: %v", r, tc.wantRemote)
			}
			if r := in.NodeRepairConfig; r == nil || !sdkaws.ToBool(r.Enabled) || sdkaws.ToInt32(r.MaxUnhealthyNodeThresholdPercentage) != 20 {
				t.Errorf("nodeRepairConfig %+v, want blue's", r)
			}
			if w := in.WarmPoolConfig; w == nil || !sdkaws.ToBool(w.Enabled) || sdkaws.ToInt32(w.MinSize) != 1 || sdkaws.ToInt32(w.MaxGroupPreparedCapacity) != 4 ||
				w.PoolState != "STOPPED" || !sdkaws.ToBool(w.ReuseOnScaleIn) {
				t.Errorf("warmPoolConfig %+v, want blue's", w)
			}
		})
	}
}

func TestDeleteNodegroupGoneIsDone(t *testing.T) {
	e, _ := newTestEKS(t, map[string][]reply{
		"eks:DeleteNodegroup":   {eksErr(404, "ResourceNotFoundException", "No node group found for name: ng1.")},
		"eks:DescribeNodegroup": {ngJSON("DELETING"), eksErr(404, "ResourceNotFoundException", "gone")},
	})
	ctx := context.Background()
	if err := e.DeleteNodegroup(ctx, "c1", "ng1"); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitDeleted(ctx, "c1", "ng1"); err != nil {
		t.Fatal(err)
	}
}

// policyReplies answer one of each EKS call.
func policyReplies() map[string][]reply {
	return map[string][]reply{
		"eks:DescribeCluster":        {{200, `{"cluster":{"name":"c1","version":"1.31"}}`}},
		"eks:DescribeNodegroup":      {ngJSON("ACTIVE"), ngJSON("ACTIVE"), ngJSON("ACTIVE"), eksErr(404, "ResourceNotFoundException", "gone")},
		"eks:ListNodegroups":         {{200, `{"nodegroups":["ng1"]}`}},
		"eks:ListUpdates":            {{200, `{"updateIds":[]}`}},
		"eks:DescribeUpdate":         {updateJSON("u1", "VersionUpdate", "Successful", "")},
		"ssm:GetParameter":           {{200, `{"Parameter":{"Value":"1.31.2-20250101"}}`}},
		"eks:UpdateNodegroupConfig":  {updateJSON("c1", "ConfigUpdate", "InProgress", "")},
		"eks:UpdateNodegroupVersion": {updateJSON("u1", "VersionUpdate", "InProgress", "")},
		"eks:CreateNodegroup":        {ngJSON("CREATING")},
		"eks:DeleteNodegroup":        {ngJSON("DELETING")},
	}
}

// TestIAMPolicyCoversEKSCalls drives every EKS call and checks the
// documented policy allows it, and that planning needs only the read
// statement.
func TestIAMPolicyCoversEKSCalls(t *testing.T) {
	pol := readPolicy(t)
	e, f := newTestEKS(t, policyReplies())
	ctx := context.Background()
	planSteps := []func() error{
		func() error { _, err := e.ClusterVersion(ctx, "c1"); return err },
		func() error { _, err := e.DescribeNodegroup(ctx, "c1", "ng1"); return err },
		func() error { _, err := e.ListNodegroups(ctx, "c1"); return err },
		func() error { _, err := e.InProgressUpdate(ctx, "c1", "ng1"); return err },
		func() error { _, err := e.LatestRelease(ctx, "1.31", "AL2023_x86_64_STANDARD"); return err },
	}
	runSteps := []func() error{
		func() error {
			_, err := e.UpdateConfig(ctx, "c1", "ng1", ConfigChange{Update: &UpdateSettings{MaxUnavailable: 3, Strategy: "DEFAULT"}})
			return err
		},
		func() error { _, _, err := e.StartVersionUpdate(ctx, "c1", "ng1", ManagedTarget{}); return err },
		func() error { _, err := e.WaitUpdate(ctx, "c1", "ng1", "u1", nil); return err },
		func() error {
			blue := &EKSNodegroup{Cluster: "c1", Name: "ng1", NodeRole: "arn:role", Subnets: []string{"subnet-a"}, Tags: map[string]string{"a": "b"}}
			_, err := e.CreateGreen(ctx, blue, GreenSpec{Name: "g", Max: 1})
			return err
		},
		func() error { return e.DeleteNodegroup(ctx, "c1", "g") },
		func() error { return e.WaitDeleted(ctx, "c1", "g") },
	}
	run := func(steps []func() error) []string {
		mark := len(f.calls)
		for _, step := range steps {
			if err := step(); err != nil {
				t.Fatal(err)
			}
		}
		return slices.Clone(f.calls[mark:])
	}
	planCalls, runCalls := run(planSteps), run(runSteps)
	for _, a := range planCalls {
		if !slices.Contains(pol.actions("NodeUpgradePlan"), a) {
			t.Errorf("plan calls %s, not in statement NodeUpgradePlan", a)
		}
	}
	for _, a := range runCalls {
		if !slices.Contains(pol.actions(""), a) {
			t.Errorf("run calls %s, not in deploy/iam-policy.json", a)
		}
	}
	if !slices.Contains(runCalls, "iam:PassRole") || !slices.Contains(runCalls, "eks:TagResource") {
		t.Errorf("run calls %v: the create's PassRole and TagResource are not checked", runCalls)
	}
}
