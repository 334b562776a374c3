package aws

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

func TestAWSCloudValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target plan.CloudTarget
		want   string // "" valid; else part of the error
	}{
		{"nothing", plan.CloudTarget{}, ""},
		{"an AMI", plan.CloudTarget{Image: "ami-0abc1234"}, ""},
		{"a version", plan.CloudTarget{Version: "12"}, ""},
		{"$Latest", plan.CloudTarget{Version: "$Latest"}, ""},
		{"$Default", plan.CloudTarget{Version: "$Default"}, ""},
		{"both", plan.CloudTarget{Image: "ami-0abc1234", Version: "2"}, "--ami and --launch-template-version cannot be used together"},
		{"a bad AMI", plan.CloudTarget{Image: "img-1"}, `invalid --ami "img-1"`},
		{"a word", plan.CloudTarget{Version: "latest"}, `invalid --launch-template-version "latest"`},
		{"a leading zero", plan.CloudTarget{Version: "02"}, `invalid --launch-template-version "02"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := awsCloud{}.Validate(tc.target)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !isInput(err) {
				t.Errorf("err = %v, want an input error with %q", err, tc.want)
			}
		})
	}
}

func TestAWSCloudFlags(t *testing.T) {
	c := awsCloud{}
	if c.Name() != Name || !c.Owns("aws:///us-east-1a/i-0abc") || c.Owns("gce://p/z/vm") || c.Help() == "" {
		t.Errorf("name %q, owns, help %q", c.Name(), c.Help())
	}
	if v := c.FlagValues("launch-template-version"); strings.Join(v, ",") != "$Default,$Latest" {
		t.Errorf("launch-template-version values %v", v)
	}
	if v := c.FlagValues("ami"); v != nil {
		t.Errorf("ami values %v, want none", v)
	}
	b := cloud.BoundFlags()
	for _, f := range []string{"region", "profile", "asg", "ami", "launch-template-version", "green-asg", "keep-default-version"} {
		if !strings.Contains(strings.Join(b.Owners[f], ","), Name) {
			t.Errorf("flag --%s is not aws's: owners %v", f, b.Owners[f])
		}
	}
}

func TestRefuseOtherRegion(t *testing.T) {
	node := func(zone string) corev1.Node {
		n := awsNode("n1", "i-1")
		n.Spec.ProviderID = "aws:///" + zone + "/i-1"
		return *n
	}
	for _, tc := range []struct {
		name   string
		region string
		given  bool
		zone   string
		want   string
	}{
		{"its zone", "us-east-1", false, "us-east-1a", ""},
		{"a Local Zone", "us-west-2", true, "us-west-2-lax-1a", ""},
		{"no zone", "us-east-1", false, "", ""},
		{"another region, configured", "eu-west-1", false, "us-east-1a", `region "eu-west-1" from the AWS configuration (AWS_REGION or the profile's) does not hold node "n1"`},
		{"another region, --region", "eu-west-1", true, "us-east-1a", "from --region does not hold node \"n1\", whose provider ID names zone \"us-east-1a\"; use --region us-east-1"},
		{"a prefix of another region", "us-east-1", true, "us-east-10a", "use --region"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := refuseOtherRegion(tc.region, tc.given, []corev1.Node{node(tc.zone)})
			if (tc.want == "") != (err == nil) || err != nil && (!strings.Contains(err.Error(), tc.want) || !isInput(err)) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRefuseMovingDefault(t *testing.T) {
	onDefault := &AutoScalingGroup{Name: "ng1", spec: specDefault, LaunchTemplateVersion: "3"}
	for _, tc := range []struct {
		name   string
		g      *AutoScalingGroup
		target Target
		keep   bool
		want   string
	}{
		{"without the flag", onDefault, Target{Version: "4"}, false, ""},
		{"the default already", onDefault, Target{Version: "3"}, true, ""},
		{"another version", onDefault, Target{Version: "4"}, true, "the target, version 4, would have to become the default"},
		{"a new version", onDefault, Target{Create: true, Image: "ami-2"}, true, "a new version with image ami-2"},
		{"a group on a number", &AutoScalingGroup{Name: "ng1", spec: "3", LaunchTemplateVersion: "3"}, Target{Version: "4"}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := refuseMovingDefault(tc.g, tc.target, tc.keep)
			if (tc.want == "") != (err == nil) || err != nil && (!strings.Contains(err.Error(), tc.want) || !isInput(err)) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestMachineState(t *testing.T) {
	for lifecycle, want := range map[string]plan.MachineState{
		"InService": plan.MachineInService, "Pending": plan.MachinePending, "Pending:Wait": plan.MachinePending,
		"Terminating": plan.MachineLeaving, "Terminating:Wait": plan.MachineLeaving, "Terminated": plan.MachineLeaving,
		"Standby": plan.MachineInService,
	} {
		if got := machineState(lifecycle); got != want {
			t.Errorf("machineState(%q) = %q, want %q", lifecycle, got, want)
		}
	}
}

// openReplies answer what Open reads of group ng1 (i-1, i-2): no load
// balancers, hooks or warm pool.
func openReplies() map[string]func(url.Values) reply {
	r := baseReplies()
	r["DescribeAutoScalingInstances"] = asgInstances("i-1", "ng1", "i-2", "ng1")
	r["DescribeLifecycleHooks"] = fixed(200, `<DescribeLifecycleHooksResponse `+asgNS+`><DescribeLifecycleHooksResult><LifecycleHooks/></DescribeLifecycleHooksResult></DescribeLifecycleHooksResponse>`)
	r["DescribeWarmPool"] = fixed(200, noWarmPoolXML)
	return r
}

// TestAWSCloudOpen: Open, through the SDK's configuration from the
// environment, finds the nodes' group and reads it without changing
// anything; what a self-managed group cannot take is refused as input.
func TestAWSCloudOpen(t *testing.T) {
	nodes := []corev1.Node{*awsNode("n1", "i-1"), *awsNode("n2", "i-2")}
	for _, tc := range []struct {
		name   string
		target plan.CloudTarget
		want   string // part of the error; "" opens
	}{
		{"the group's version", plan.CloudTarget{}, ""},
		{"a new AMI", plan.CloudTarget{Image: "ami-next"}, ""},
		{"an EKS option", plan.CloudTarget{Options: map[string]string{optKubernetesVersion: "1.31"}}, `auto scaling group "ng1" is no EKS managed node group`},
		{"another region", plan.CloudTarget{Options: map[string]string{optRegion: "eu-west-1"}}, `region "eu-west-1" from --region does not hold node "n1"`},
		{"a group that is not there", plan.CloudTarget{Group: "nope"}, `"nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeAWS{replies: openReplies()}
			srv := httptest.NewServer(f)
			t.Cleanup(srv.Close)
			isolate(t)
			t.Setenv("AWS_ACCESS_KEY_ID", "AKID")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
			t.Setenv("AWS_ENDPOINT_URL", srv.URL)
			cg, p, err := awsCloud{}.Open(context.Background(), fake.NewClientset(), nodes, tc.target)
			for _, a := range f.actions() {
				if !strings.HasPrefix(a, "Describe") {
					t.Errorf("Open called %s: it only reads", a)
				}
			}
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ng, ok := p.(*NodeGroup)
			if !ok || ng.ASG != "ng1" || ng.AMI != tc.target.Image || cg.Group != "ng1" || cg.Region != "us-east-1" || len(cg.Nodes) != 2 {
				t.Errorf("opened %+v as %+v", cg, p)
			}
			if tc.target.Image != "" && cg.TargetImage != tc.target.Image {
				t.Errorf("target image %q, want %q", cg.TargetImage, tc.target.Image)
			}
		})
	}
}

func TestAWSCloudOpenWithoutGroup(t *testing.T) {
	f := &fakeAWS{replies: openReplies()}
	f.replies["DescribeAutoScalingInstances"] = asgInstances()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	isolate(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKID")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	_, _, err := awsCloud{}.Open(context.Background(), fake.NewClientset(), []corev1.Node{*awsNode("n1", "i-1")}, plan.CloudTarget{})
	if !errors.Is(err, cloud.ErrNoGroup) {
		t.Errorf("err = %v, want ErrNoGroup", err)
	}
}
