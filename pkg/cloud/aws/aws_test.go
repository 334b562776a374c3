package aws

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Canned query-protocol answers, trimmed to the elements the provider reads.
const (
	asgNS = `xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"`
	ec2NS = `xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"`

	groupXML = `<DescribeAutoScalingGroupsResponse ` + asgNS + `><DescribeAutoScalingGroupsResult><AutoScalingGroups><member>
<AutoScalingGroupName>ng1</AutoScalingGroupName>
<LaunchTemplate><LaunchTemplateId>lt-1</LaunchTemplateId><LaunchTemplateName>ng1</LaunchTemplateName><Version>$Latest</Version></LaunchTemplate>
<MinSize>1</MinSize><MaxSize>4</MaxSize><DesiredCapacity>3</DesiredCapacity>
<AvailabilityZones><member>us-east-1a</member><member>us-east-1b</member></AvailabilityZones>
<Instances>
<member><InstanceId>i-1</InstanceId><AvailabilityZone>us-east-1a</AvailabilityZone><LifecycleState>InService</LifecycleState><HealthStatus>Healthy</HealthStatus>
 <LaunchTemplate><LaunchTemplateId>lt-1</LaunchTemplateId><Version>$Latest</Version></LaunchTemplate></member>
<member><InstanceId>i-2</InstanceId><AvailabilityZone>us-east-1b</AvailabilityZone><LifecycleState>InService</LifecycleState><HealthStatus>Healthy</HealthStatus>
 <LaunchTemplate><LaunchTemplateId>lt-1</LaunchTemplateId><Version>$Latest</Version></LaunchTemplate></member>
<member><InstanceId>i-3</InstanceId><AvailabilityZone>us-east-1a</AvailabilityZone><LifecycleState>Terminating</LifecycleState><HealthStatus>Healthy</HealthStatus>
 <LaunchTemplate><LaunchTemplateId>lt-1</LaunchTemplateId><Version>1</Version></LaunchTemplate></member>
</Instances></member></AutoScalingGroups></DescribeAutoScalingGroupsResult>
<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></DescribeAutoScalingGroupsResponse>`

	noGroupXML = `<DescribeAutoScalingGroupsResponse ` + asgNS + `><DescribeAutoScalingGroupsResult><AutoScalingGroups/></DescribeAutoScalingGroupsResult></DescribeAutoScalingGroupsResponse>`

	// i-1 carries the launch template tags (version 1); i-2 has none, so
	// its "$Latest" from Auto Scaling is resolved; i-3 is gone from EC2.
	instancesXML = `<DescribeInstancesResponse ` + ec2NS + `><requestId>r</requestId><reservationSet>
<item><instancesSet><item><instanceId>i-1</instanceId><imageId>ami-old</imageId><launchTime>2026-01-01T00:00:00.000Z</launchTime>
 <tagSet><item><key>aws:ec2launchtemplate:id</key><value>lt-1</value></item><item><key>aws:ec2launchtemplate:version</key><value>1</value></item></tagSet></item></instancesSet></item>
<item><instancesSet><item><instanceId>i-2</instanceId><imageId>ami-new</imageId></item></instancesSet></item>
</reservationSet></DescribeInstancesResponse>`

	ltv2XML = `<DescribeLaunchTemplateVersionsResponse ` + ec2NS + `><launchTemplateVersionSet><item>
<launchTemplateId>lt-1</launchTemplateId><versionNumber>2</versionNumber><launchTemplateData><imageId>ami-new</imageId></launchTemplateData>
</item></launchTemplateVersionSet></DescribeLaunchTemplateVersionsResponse>`

	createdXML = `<CreateLaunchTemplateVersionResponse ` + ec2NS + `><launchTemplateVersion>
<launchTemplateId>lt-1</launchTemplateId><versionNumber>3</versionNumber><launchTemplateData><imageId>ami-next</imageId></launchTemplateData>
</launchTemplateVersion></CreateLaunchTemplateVersionResponse>`

	imagesXML = `<DescribeImagesResponse ` + ec2NS + `><imagesSet><item><imageId>ami-next</imageId><name>next</name><imageState>available</imageState></item></imagesSet></DescribeImagesResponse>`

	emptyASGXML = `<UpdateAutoScalingGroupResponse ` + asgNS + `><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></UpdateAutoScalingGroupResponse>`

	terminateXML = `<TerminateInstanceInAutoScalingGroupResponse ` + asgNS + `><TerminateInstanceInAutoScalingGroupResult><Activity><ActivityId>a</ActivityId></Activity></TerminateInstanceInAutoScalingGroupResult></TerminateInstanceInAutoScalingGroupResponse>`
)

func asgError(code, msg string) reply {
	return reply{400, `<ErrorResponse ` + asgNS + `><Error><Type>Sender</Type><Code>` + code + `</Code><Message>` + msg + `</Message></Error><RequestId>r</RequestId></ErrorResponse>`}
}

func ec2Error(code, msg string) reply {
	return reply{400, `<Response><Errors><Error><Code>` + code + `</Code><Message>` + msg + `</Message></Error></Errors><RequestID>r</RequestID></Response>`}
}

type reply struct {
	status int // hangUp: the connection is closed, no answer sent
	body   string
}

// hangUp is the status of a reply never sent: the call was carried out
// (or not) and the connection closed.
const hangUp = -1

// fakeAWS answers each Action with a canned reply and records the forms it
// was sent.
type fakeAWS struct {
	mu      sync.Mutex
	replies map[string]func(url.Values) reply
	calls   []url.Values
}

func (f *fakeAWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f.mu.Lock()
	f.calls = append(f.calls, r.PostForm)
	h := f.replies[r.PostForm.Get("Action")]
	f.mu.Unlock()
	rep := reply{400, `<ErrorResponse><Error><Code>InvalidAction</Code><Message>unexpected</Message></Error></ErrorResponse>`}
	if h != nil {
		rep = h(r.PostForm)
	}
	if rep.status == hangUp {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(rep.status)
	_, _ = w.Write([]byte(rep.body))
}

func (f *fakeAWS) actions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		out = append(out, c.Get("Action"))
	}
	return out
}

// callsOf are the calls of action, in order.
func (f *fakeAWS) callsOf(action string) []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []url.Values
	for _, c := range f.calls {
		if c.Get("Action") == action {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeAWS) last(action string) url.Values { return f.lastWith(action, "Action") }

// lastWith is the last call of action that has param.
func (f *fakeAWS) lastWith(action, param string) url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.calls) - 1; i >= 0; i-- {
		if f.calls[i].Get("Action") == action && f.calls[i].Has(param) {
			return f.calls[i]
		}
	}
	return nil
}

func fixed(status int, body string) func(url.Values) reply {
	return func(url.Values) reply { return reply{status, body} }
}

// baseReplies describe group ng1 at launch template version 2 ($Latest).
func baseReplies() map[string]func(url.Values) reply {
	return map[string]func(url.Values) reply{
		"DescribeAutoScalingGroups": func(v url.Values) reply {
			if v.Get("AutoScalingGroupNames.member.1") == "ng1" {
				return reply{200, groupXML}
			}
			return reply{200, noGroupXML}
		},
		"DescribeInstances":                   fixed(200, instancesXML),
		"DescribeImages":                      fixed(200, imagesXML),
		"DescribeLaunchTemplateVersions":      fixed(200, ltv2XML),
		"CreateLaunchTemplateVersion":         fixed(200, createdXML),
		"UpdateAutoScalingGroup":              fixed(200, emptyASGXML),
		"TerminateInstanceInAutoScalingGroup": fixed(200, terminateXML),
	}
}

func newTestProvider(t *testing.T, replies map[string]func(url.Values) reply, opts Options) (*Client, *fakeAWS) {
	t.Helper()
	f := &fakeAWS{replies: replies}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	// the provider's retryer, without its waits
	shared := newRetryer(func(o *retry.StandardOptions) { o.Backoff = noWait{} })
	cfg := sdkaws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		BaseEndpoint: sdkaws.String(srv.URL),
		Retryer:      func() sdkaws.Retryer { return shared },
	}
	return NewFromConfig(cfg, opts), f
}

// noWait is a backoff of no time at all.
type noWait struct{}

func (noWait) BackoffDelay(int, error) (time.Duration, error) { return 0, nil }

func TestInstanceIDFromProviderID(t *testing.T) {
	for _, tc := range []struct {
		in, zone, id string
		ok           bool
	}{
		{"aws:///us-east-1a/i-0abc", "us-east-1a", "i-0abc", true},
		{"aws://us-east-1a/i-0abc", "us-east-1a", "i-0abc", true},
		{"aws:///i-0abc", "", "i-0abc", true},
		{"gce://project/zone/name", "", "", false},
		{"aws:///us-east-1a/", "", "", false},
		{"", "", "", false},
	} {
		zone, id, ok := InstanceIDFromProviderID(tc.in)
		if zone != tc.zone || id != tc.id || ok != tc.ok {
			t.Errorf("%q: got %q %q %v", tc.in, zone, id, ok)
		}
	}
	if RegionFromZone("eu-west-3c") != "eu-west-3" || RegionFromZone("sim-a") != "" {
		t.Error("RegionFromZone")
	}
}

func TestGroup(t *testing.T) {
	p, _ := newTestProvider(t, baseReplies(), Options{})
	g, err := p.Group(context.Background(), "ng1")
	if err != nil {
		t.Fatal(err)
	}
	if g.Min != 1 || g.Max != 4 || g.Desired != 3 || !slices.Equal(g.Zones, []string{"us-east-1a", "us-east-1b"}) ||
		g.LaunchTemplateID != "lt-1" || g.LaunchTemplateVersion != "2" {
		t.Fatalf("group: %+v", g)
	}
	want := []Instance{
		{ID: "i-1", Zone: "us-east-1a", LaunchTemplateID: "lt-1", LaunchTemplateVersion: "1", ImageID: "ami-old", Lifecycle: "InService", Launched: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: "i-2", Zone: "us-east-1b", LaunchTemplateID: "lt-1", LaunchTemplateVersion: "2", ImageID: "ami-new", Lifecycle: "InService"},
		{ID: "i-3", Zone: "us-east-1a", LaunchTemplateID: "lt-1", LaunchTemplateVersion: "1", Lifecycle: "Terminating"},
	}
	if !slices.Equal(g.Instances, want) {
		t.Fatalf("instances:\n got %+v\nwant %+v", g.Instances, want)
	}
	out := Outdated(g, "2")
	if len(out) != 1 || out[0].ID != "i-1" {
		t.Fatalf("outdated: %+v", out)
	}
}

// asgInstances answers DescribeAutoScalingInstances with instance, group pairs.
func asgInstances(pairs ...string) func(url.Values) reply {
	var b strings.Builder
	for i := 0; i < len(pairs); i += 2 {
		b.WriteString(`<member><InstanceId>` + pairs[i] + `</InstanceId><AutoScalingGroupName>` + pairs[i+1] + `</AutoScalingGroupName></member>`)
	}
	return fixed(200, `<DescribeAutoScalingInstancesResponse `+asgNS+`><DescribeAutoScalingInstancesResult><AutoScalingInstances>`+
		b.String()+`</AutoScalingInstances></DescribeAutoScalingInstancesResult></DescribeAutoScalingInstancesResponse>`)
}

func TestFindGroup(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		ids     []string
		reply   func(url.Values) reply
		group   string
		wantErr string
	}{
		{name: "one group", ids: []string{"i-1", "i-2"}, reply: asgInstances("i-1", "ng1", "i-2", "ng1"), group: "ng1"},
		{name: "none", ids: []string{"i-1", "i-2"}, reply: asgInstances(),
			wantErr: `instances "i-1", "i-2" belong to no Auto Scaling group: --provider karpenter serves Karpenter's instances, --provider none with --target-label standalone ones; or name their group with --asg`},
		{name: "several", ids: []string{"i-1", "i-2", "i-9"}, reply: asgInstances("i-1", "ng1", "i-2", "ng2", "i-9", "ng1"),
			wantErr: `the nodes' instances belong to 2 Auto Scaling groups ("ng1" has "i-1", "i-9"; "ng2" has "i-2"); use --asg or narrow the nodes with --selector`},
		// A given green group's nodes carry blue's labels: left out.
		{name: "green excluded", opts: Options{Exclude: []string{"ng2"}}, ids: []string{"i-1", "i-2"}, reply: asgInstances("i-1", "ng1", "i-2", "ng2"), group: "ng1"},
		{name: "asg flag wins", opts: Options{ASGName: "ng1"}, ids: []string{"i-1"}, group: "ng1"},
		{name: "asg flag unknown", opts: Options{ASGName: "nope"},
			wantErr: `auto scaling group "nope" not found in region "us-east-1"; check --asg and --region`},
		{name: "no ids", wantErr: `no instance IDs to find the Auto Scaling group from (the nodes have no aws:/// provider IDs); use --asg`},
		{name: "api error", ids: []string{"i-1"}, reply: func(url.Values) reply { return asgError("AccessDenied", "User is not authorized.") },
			wantErr: `cannot find the Auto Scaling group of instances "i-1": AccessDenied: User is not authorized`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := baseReplies()
			r["DescribeAutoScalingInstances"] = tc.reply
			p, _ := newTestProvider(t, r, tc.opts)
			g, err := p.FindGroup(context.Background(), tc.ids)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error:\n got %v\nwant %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.Name != tc.group {
				t.Fatalf("group %q", g.Name)
			}
		})
	}
}

func TestSetTarget(t *testing.T) {
	for _, tc := range []struct {
		name, ami, version string
		// spec is the group's version ($Latest unless set); latest what
		// the template's $Latest is after the call (2 unless set).
		spec, latest string
		ltv          func(url.Values) reply
		want         string
		wantErr      string
		wantActions  []string // after the Group() calls
		check        func(t *testing.T, f *fakeAWS)
	}{
		// No flags: the group's current version, which $Latest is (read
		// again): the group stays on $Latest.
		{name: "current", want: "2", wantActions: []string{"DescribeLaunchTemplateVersions", "DescribeLaunchTemplateVersions"}},
		// The new version is the latest: the group stays on $Latest.
		{name: "new ami, latest", ami: "ami-next", want: "3", latest: "3",
			wantActions: []string{"DescribeLaunchTemplateVersions", "DescribeImages", "DescribeLaunchTemplateVersions", "CreateLaunchTemplateVersion", "DescribeLaunchTemplateVersions"}},
		// Someone made version 4 meanwhile: $Latest would launch theirs,
		// so the group is pinned to the target.
		{name: "new ami, a later version made meanwhile", ami: "ami-next", want: "3", latest: "4",
			wantActions: []string{"DescribeLaunchTemplateVersions", "DescribeImages", "DescribeLaunchTemplateVersions", "CreateLaunchTemplateVersion", "DescribeLaunchTemplateVersions", "UpdateAutoScalingGroup"},
			check: func(t *testing.T, f *fakeAWS) {
				c := f.last("CreateLaunchTemplateVersion")
				if c.Get("LaunchTemplateId") != "lt-1" || c.Get("SourceVersion") != "2" || c.Get("LaunchTemplateData.ImageId") != "ami-next" {
					t.Errorf("create: %v", c)
				}
				u := f.last("UpdateAutoScalingGroup")
				if u.Get("AutoScalingGroupName") != "ng1" || u.Get("LaunchTemplate.LaunchTemplateId") != "lt-1" || u.Get("LaunchTemplate.Version") != "3" || u.Has("DesiredCapacity") {
					t.Errorf("update: %v", u)
				}
			}},
		// The current version already has the image (a re-run): no new
		// version, and the group stays on $Latest.
		{name: "same ami", ami: "ami-new", want: "2",
			wantActions: []string{"DescribeLaunchTemplateVersions", "DescribeLaunchTemplateVersions"}},
		{name: "existing version", version: "2", want: "2",
			wantActions: []string{"DescribeLaunchTemplateVersions", "DescribeLaunchTemplateVersions"}},
		// A group on $Default stays on it: the engine makes the new version
		// the default (cloud.DefaultFollower).
		{name: "new ami, $Default", ami: "ami-next", want: "3", spec: "$Default",
			wantActions: []string{"DescribeLaunchTemplateVersions", "DescribeImages", "DescribeLaunchTemplateVersions", "CreateLaunchTemplateVersion"}},
		// A group pinned to a number is pinned to the new number.
		{name: "new ami, pinned", ami: "ami-next", want: "3", spec: "2",
			wantActions: []string{"DescribeLaunchTemplateVersions", "DescribeImages", "DescribeLaunchTemplateVersions", "CreateLaunchTemplateVersion", "UpdateAutoScalingGroup"},
			check: func(t *testing.T, f *fakeAWS) {
				if u := f.last("UpdateAutoScalingGroup"); u.Get("LaunchTemplate.Version") != "3" {
					t.Errorf("update: %v", u)
				}
			}},
		{name: "missing version", version: "9",
			ltv: func(v url.Values) reply {
				return ec2Error("InvalidLaunchTemplateId.VersionNotFound", "Could not find launch template version 9.")
			},
			wantErr:     `launch template "lt-1" has no version "9"; check --launch-template-version`,
			wantActions: []string{"DescribeLaunchTemplateVersions"}},
		{name: "bad version", version: "latest", wantErr: `invalid launch template version "latest": want a number, $Latest or $Default; check --launch-template-version`},
		{name: "bad ami", ami: "ubuntu-24.04", wantErr: `invalid AMI ID "ubuntu-24.04": want ami- followed by letters and digits; check --ami`},
		{name: "both", ami: "ami-1", version: "2", wantErr: `--ami and --launch-template-version cannot be used together`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := baseReplies()
			if tc.spec != "" {
				r["DescribeAutoScalingGroups"] = fixed(200, strings.Replace(groupXML, "<Version>$Latest</Version></LaunchTemplate>\n<MinSize>", "<Version>"+tc.spec+"</Version></LaunchTemplate>\n<MinSize>", 1))
			}
			p, f := newTestProvider(t, r, Options{})
			g, err := p.Group(context.Background(), "ng1")
			if err != nil {
				t.Fatal(err)
			}
			if tc.latest != "" {
				r["DescribeLaunchTemplateVersions"] = func(v url.Values) reply {
					if v.Get("LaunchTemplateVersion.1") == "$Latest" {
						return reply{200, strings.Replace(ltv2XML, "<versionNumber>2<", "<versionNumber>"+tc.latest+"<", 1)}
					}
					return reply{200, ltv2XML}
				}
			}
			if tc.ltv != nil {
				f.mu.Lock()
				r["DescribeLaunchTemplateVersions"] = tc.ltv
				f.mu.Unlock()
			}
			before := len(f.actions())
			got, err := p.SetTarget(context.Background(), g, tc.ami, tc.version)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error:\n got %v\nwant %s", err, tc.wantErr)
				}
			} else if err != nil || got != tc.want || g.LaunchTemplateVersion != tc.want {
				t.Fatalf("got %q (group %q), %v; want %q", got, g.LaunchTemplateVersion, err, tc.want)
			}
			if acts := f.actions()[before:]; !slices.Equal(acts, tc.wantActions) {
				t.Fatalf("calls %v, want %v", acts, tc.wantActions)
			}
			if tc.check != nil {
				tc.check(t, f)
			}
		})
	}
}

func TestSetSizeAndTerminate(t *testing.T) {
	r := baseReplies()
	p, f := newTestProvider(t, r, Options{})
	ctx := context.Background()
	if err := p.SetSize(ctx, "ng1", 5, 6); err != nil {
		t.Fatal(err)
	}
	u := f.last("UpdateAutoScalingGroup")
	if u.Get("DesiredCapacity") != "5" || u.Get("MaxSize") != "6" || u.Has("MinSize") || u.Has("LaunchTemplate.Version") {
		t.Fatalf("update: %v", u)
	}
	if err := p.Terminate(ctx, "i-1"); err != nil {
		t.Fatal(err)
	}
	if c := f.last("TerminateInstanceInAutoScalingGroup"); c.Get("InstanceId") != "i-1" || c.Get("ShouldDecrementDesiredCapacity") != "false" {
		t.Fatalf("terminate: %v", c)
	}
	// Already gone: done, so an interrupted run can repeat it.
	r["TerminateInstanceInAutoScalingGroup"] = func(url.Values) reply {
		return asgError("ValidationError", "Instance Id not found - No managed instance found for instance ID: i-1")
	}
	if err := p.Terminate(ctx, "i-1"); err != nil {
		t.Fatalf("terminate gone instance: %v", err)
	}
	r["UpdateAutoScalingGroup"] = func(url.Values) reply {
		return asgError("ValidationError", "Desired capacity:9 must be between the specified min size:1 and max size:6")
	}
	err := p.SetSize(ctx, "ng1", 9, 6)
	want := `cannot set Auto Scaling group "ng1" to desired 9, max 6: ValidationError: Desired capacity:9 must be between the specified min size:1 and max size:6`
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n got %v\nwant %s", err, want)
	}
}

func TestOutdated(t *testing.T) {
	g := &AutoScalingGroup{LaunchTemplateID: "lt-1", Instances: []Instance{
		{ID: "a", LaunchTemplateID: "lt-1", LaunchTemplateVersion: "2", Lifecycle: "InService"},
		{ID: "b", LaunchTemplateID: "lt-1", LaunchTemplateVersion: "1", Lifecycle: "InService"},
		{ID: "c", LaunchTemplateID: "lt-0", LaunchTemplateVersion: "2", Lifecycle: "InService"},
		{ID: "d", Lifecycle: "InService"}, // launch configuration
		{ID: "e", LaunchTemplateID: "lt-1", LaunchTemplateVersion: "1", Lifecycle: "Terminating:Wait"},
		{ID: "f", LaunchTemplateID: "lt-1", LaunchTemplateVersion: "1", Lifecycle: "Pending"},
	}}
	var ids []string
	for _, in := range Outdated(g, "2") {
		ids = append(ids, in.ID)
	}
	if !slices.Equal(ids, []string{"b", "c", "d", "f"}) {
		t.Fatalf("outdated %v", ids)
	}
}

// isolate hides the machine's AWS configuration and any instance role.
func isolate(t *testing.T) {
	dir := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_AUTO_SCALING", "AWS_ENDPOINT_URL_EC2",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

func TestNewFromEnvironment(t *testing.T) {
	f := &fakeAWS{replies: baseReplies()}
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx := context.Background()

	isolate(t)
	if _, err := New(ctx, Options{}); err == nil || err.Error() != "no AWS region configured; use --region or set AWS_REGION" {
		t.Fatalf("no region: %v", err)
	}
	_, err := New(ctx, Options{Region: "us-east-1"})
	if err == nil || !strings.HasPrefix(err.Error(), "no AWS credentials found; ") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("no credentials: %v", err)
	}
	if _, err := New(ctx, Options{Region: "us-east-1", Profile: "nope"}); err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "--profile") {
		t.Fatalf("unknown profile: %v", err)
	}

	// The SDK's own endpoint variables reach the fake: per service, and
	// the general one.
	t.Setenv("AWS_ACCESS_KEY_ID", "AKID")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL_AUTO_SCALING", srv.URL)
	t.Setenv("AWS_ENDPOINT_URL_EC2", srv.URL)
	p, err := New(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g, err := p.Group(ctx, "ng1"); err != nil || len(g.Instances) != 3 {
		t.Fatalf("group via AWS_ENDPOINT_URL_*: %v", err)
	}
	t.Setenv("AWS_ENDPOINT_URL_AUTO_SCALING", "")
	t.Setenv("AWS_ENDPOINT_URL_EC2", "")
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	p, err = New(ctx, Options{Region: "eu-west-1"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Region() != "eu-west-1" {
		t.Fatalf("region %q", p.Region())
	}
	if _, err := p.Group(ctx, "ng1"); err != nil {
		t.Fatalf("group via AWS_ENDPOINT_URL: %v", err)
	}
}

func processesXML(action string) string {
	return `<` + action + `Response ` + asgNS + `><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></` + action + `Response>`
}

func TestProcesses(t *testing.T) {
	ctx := context.Background()
	suspended := strings.Replace(groupXML, "<Instances>", "<SuspendedProcesses><member><ProcessName>AZRebalance</ProcessName><SuspensionReason>User suspended</SuspensionReason></member></SuspendedProcesses><Instances>", 1)
	for _, tc := range []struct {
		name     string
		describe string
		want     bool
	}{
		{name: "AZRebalance suspended", describe: suspended, want: true},
		{name: "nothing suspended", describe: groupXML},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replies := baseReplies()
			replies["DescribeAutoScalingGroups"] = fixed(200, tc.describe)
			replies["SuspendProcesses"] = fixed(200, processesXML("SuspendProcesses"))
			replies["ResumeProcesses"] = fixed(200, processesXML("ResumeProcesses"))
			p, f := newTestProvider(t, replies, Options{})
			got, err := p.ProcessSuspended(ctx, "ng1", AZRebalance)
			if err != nil || got != tc.want {
				t.Fatalf("suspended %v, %v; want %v", got, err, tc.want)
			}
			for action, call := range map[string]func() error{
				"SuspendProcesses": func() error { return p.SuspendProcess(ctx, "ng1", AZRebalance) },
				"ResumeProcesses":  func() error { return p.ResumeProcess(ctx, "ng1", AZRebalance) },
			} {
				if err := call(); err != nil {
					t.Fatalf("%s: %v", action, err)
				}
				sent := f.last(action)
				if sent.Get("AutoScalingGroupName") != "ng1" || sent.Get("ScalingProcesses.member.1") != AZRebalance || sent.Has("ScalingProcesses.member.2") {
					t.Errorf("%s sent %v, want group ng1 and AZRebalance alone", action, sent)
				}
			}
		})
	}
}

const modifiedXML = `<ModifyLaunchTemplateResponse ` + ec2NS + `><launchTemplate><launchTemplateId>lt-1</launchTemplateId><defaultVersionNumber>3</defaultVersionNumber></launchTemplate></ModifyLaunchTemplateResponse>`
