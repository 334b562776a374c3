package aws

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// bothFakes is one endpoint for every service, as AWS_ENDPOINT_URL makes
// it: EKS's paths and SSM's target header to eks, the query protocol to q.
type bothFakes struct {
	q *fakeAWS
	e *fakeEKS
}

func (b bothFakes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/clusters") || r.Header.Get("X-Amz-Target") != "" {
		b.e.ServeHTTP(w, r)
		return
	}
	b.q.ServeHTTP(w, r)
}

// managedGroupXML is group ng1 tagged as managed node group ng1 of c1;
// without cluster, with no cluster tag.
func managedGroupXML(cluster bool) string {
	tags := `<member><Key>eks:nodegroup-name</Key><Value>ng1</Value></member>`
	if cluster {
		tags += `<member><Key>eks:cluster-name</Key><Value>c1</Value></member>`
	}
	return strings.Replace(groupXML, "<Instances>", "<Tags>"+tags+"</Tags><Instances>", 1)
}

const clusterJSON = `{"cluster":{"name":"c1","version":"1.31","status":"ACTIVE"}}`

// release answers SSM's GetParameter with an EKS AMI release.
func release(v string) reply {
	return reply{200, `{"Parameter":{"Name":"x","Type":"String","Value":"` + v + `","Version":1}}`}
}

// openThrough opens nodes n1 and n2 (i-1, i-2) of a managed node group
// through one endpoint for every service, found from the environment.
func openThrough(t *testing.T, cluster bool, eks map[string][]reply, target plan.CloudTarget) (*plan.CloudGroup, cloud.Provider, *fakeEKS, error) {
	t.Helper()
	q := &fakeAWS{replies: openReplies()}
	q.replies["DescribeAutoScalingGroups"] = fixed(200, managedGroupXML(cluster))
	e := &fakeEKS{replies: eks}
	srv := httptest.NewServer(bothFakes{q, e})
	t.Cleanup(srv.Close)
	isolate(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKID")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	nodes := []corev1.Node{*awsNode("n1", "i-1"), *awsNode("n2", "i-2")}
	cg, p, err := awsCloud{}.Open(context.Background(), fake.NewClientset(), nodes, target)
	for _, a := range q.actions() {
		if !strings.HasPrefix(a, "Describe") {
			t.Errorf("Open called %s: it only reads", a)
		}
	}
	return cg, p, e, err
}

// TestOpenManaged: a managed node group's nodes open as EKS's own update
// (the eks strategy) or as blue/green, the target resolved as EKS takes
// it, with only reads.
func TestOpenManaged(t *testing.T) {
	k8s := func(v string) map[string]string { return map[string]string{optKubernetesVersion: v} }
	for _, tc := range []struct {
		name      string
		target    plan.CloudTarget
		green     reply // DescribeNodegroup of green
		want      string
		wantGreen string
		wantErr   string
	}{
		{name: "in place, the group's version", want: "1.30/1.30.5-20240301"},
		{name: "in place, the control plane's", target: plan.CloudTarget{Options: k8s("1.31")}, want: "1.31/1.31.2-20250201"},
		{name: "blue/green", target: plan.CloudTarget{Strategy: "blue-green", Options: k8s("1.31")}, green: eksErr(404, "ResourceNotFoundException", "No node group found"),
			want: "1.31/1.31.2-20250201", wantGreen: "ng1-1-31-2-20250201"},
		{name: "blue/green, green someone else's", target: plan.CloudTarget{Strategy: "blue-green", Options: k8s("1.31")}, green: ngJSON("ACTIVE"),
			wantErr: `already exists and is not a green group of "ng1"`},
		{name: "blue/green at blue's version", target: plan.CloudTarget{Strategy: "blue-green"}, wantErr: "at the control plane's version only; add --kubernetes-version 1.31"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ssm := release("1.30.5-20240301")
			if tc.target.Options[optKubernetesVersion] == "1.31" {
				ssm = release("1.31.2-20250201")
			}
			cg, p, e, err := openThrough(t, true, map[string][]reply{
				"eks:DescribeNodegroup": {ngJSON("ACTIVE"), tc.green},
				"eks:DescribeCluster":   {{200, clusterJSON}},
				"ssm:GetParameter":      {ssm},
			}, tc.target)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !isInput(err) {
					t.Fatalf("err = %v, want an input error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cg.TargetVersion != tc.want || cg.Green != tc.wantGreen || len(cg.Nodes) != 2 {
				t.Errorf("target %q green %q nodes %d, want %q, %q, 2", cg.TargetVersion, cg.Green, len(cg.Nodes), tc.want, tc.wantGreen)
			}
			named, _ := p.(interface{ GroupName() string })
			if _, bg := p.(*ManagedBlueGreen); bg != (tc.wantGreen != "") || named == nil || named.GroupName() != "ng1" || !strings.Contains(p.Describe(), `"ng1"`) {
				t.Errorf("provider %T %q", p, p.Describe())
			}
			for _, c := range e.calls {
				if !strings.Contains(c, ":Describe") && c != "ssm:GetParameter" {
					t.Errorf("Open called %s: it only reads", c)
				}
			}
		})
	}
}

func TestOpenManagedWithoutClusterTag(t *testing.T) {
	_, _, e, err := openThrough(t, false, map[string][]reply{}, plan.CloudTarget{})
	if !errors.Is(err, cloud.ErrManaged) || !isInput(err) || !strings.Contains(err.Error(), "eks:cluster-name") {
		t.Errorf("err = %v, want ErrManaged naming the tag", err)
	}
	if len(e.calls) != 0 {
		t.Errorf("EKS called: %v", e.calls)
	}
}

// TestOpenDegradedManaged: a DEGRADED managed node group opens with a
// group-degraded blocker naming its health issues, for EKS's update and
// blue/green alike, having only read: the plan stops the run before
// UpdateNodegroupConfig (or blue's pin) changes anything; an ACTIVE
// group has none.
func TestOpenDegradedManaged(t *testing.T) {
	k8s := map[string]string{optKubernetesVersion: "1.31"}
	for _, tc := range []struct {
		name, status string
		target       plan.CloudTarget
		want         bool
	}{
		{"in place", "DEGRADED", plan.CloudTarget{Options: k8s}, true},
		{"blue/green", "DEGRADED", plan.CloudTarget{Strategy: "blue-green", Options: k8s}, true},
		{"active", "ACTIVE", plan.CloudTarget{Options: k8s}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cg, _, e, err := openThrough(t, true, map[string][]reply{
				"eks:DescribeNodegroup": {ngJSON(tc.status), eksErr(404, "ResourceNotFoundException", "No node group found")},
				"eks:DescribeCluster":   {{200, clusterJSON}},
				"ssm:GetParameter":      {release("1.31.2-20250201")},
			}, tc.target)
			if err != nil {
				t.Fatal(err)
			}
			got := len(cg.Findings) == 1 && cg.Findings[0].Check == check.CheckGroupDegraded && cg.Findings[0].Severity == check.Blocker &&
				strings.Contains(cg.Findings[0].Message, "AsgInstanceLaunchFailures: no capacity") && strings.Contains(cg.Findings[0].Fix, "--ignore-check group-degraded")
			if got != tc.want || (!tc.want && len(cg.Findings) > 0) {
				t.Errorf("findings %+v, want a group-degraded blocker: %v", cg.Findings, tc.want)
			}
			for _, c := range e.calls {
				if !strings.Contains(c, ":Describe") && c != "ssm:GetParameter" {
					t.Errorf("Open called %s: it only reads", c)
				}
			}
		})
	}
}

// TestManagedNamedAfterBlueIsDeleted: a managed node group goes by its
// own name; once blue's delete began, the nodes span blue's Auto Scaling
// group, still leaving, and green's: the group of the name asked is
// found among them, and a name neither backs stays not found.
func TestManagedNamedAfterBlueIsDeleted(t *testing.T) {
	managedASG := func(asg, nodegroup string) string {
		tags := `<Tags><member><Key>eks:nodegroup-name</Key><Value>` + nodegroup + `</Value></member></Tags>`
		return strings.Replace(strings.Replace(groupXML, ">ng1</AutoScalingGroupName>", ">"+asg+"</AutoScalingGroupName>", 1), "<Instances>", tags+"<Instances>", 1)
	}
	notFound := errors.New("not found")
	for _, tc := range []struct {
		name, want string
	}{
		{"green", "eks-green"},
		{"blue", "eks-blue"},
		{"other", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := baseReplies()
			r["DescribeAutoScalingInstances"] = asgInstances("i-1", "eks-blue", "i-2", "eks-green")
			r["DescribeAutoScalingGroups"] = func(v url.Values) reply {
				switch asg := v.Get("AutoScalingGroupNames.member.1"); asg {
				case "eks-blue", "eks-green":
					return reply{200, managedASG(asg, strings.TrimPrefix(asg, "eks-"))}
				}
				return reply{200, noGroupXML}
			}
			p, _ := newTestProvider(t, r, Options{})
			g, err := p.managedNamed(context.Background(), []string{"i-1", "i-2"}, tc.name, notFound)
			switch {
			case tc.want == "" && err != notFound:
				t.Errorf("err = %v, want the not found given", err)
			case tc.want != "" && (err != nil || g.Name != tc.want):
				t.Errorf("group %v, err %v; want %q", g, err, tc.want)
			}
		})
	}
}
