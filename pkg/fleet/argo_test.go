package fleet

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// argoFleet: a canary with a soak, gates and an approval, two of three
// production clusters at once with maxFailures, then a selector target.
const argoFleet = `apiVersion: nodeupgrade.dev/v1alpha1
kind: FleetPlan
metadata: {name: img-42}
defaults:
  run: {provider: none, prometheus-url: "http://prom:9090"}
stages:
- name: canary
  targets:
  - {context: dev, nodeGroup: ng1}
  afterStage: {soak: 10m, gates: ["prometheus:sum(rate(errors[5m])) < 1"], approval: true}
- name: prod
  maxConcurrency: 2
  maxFailures: 1
  targets:
  - {contextSelector: "prod-*", nodeGroup: ng1}
  afterStage: {soak: 90s}
- name: edge
  targets:
  - {context: dev, selector: "pool=edge", run: {max-unavailable: 2}}
`

var argoOpts = ArgoOptions{Image: "ghcr.io/nodeupgrade/kubectl-nodeupgrade:v1.2.3", KubeconfigSecret: "fleet-kubeconfig", ServiceAccount: "nodeupgrade"}

func resolveArgo(t *testing.T, file string) *Fleet {
	t.Helper()
	f, err := Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	fl, err := Resolve(f, Options{Contexts: contexts})
	if err != nil {
		t.Fatal(err)
	}
	return fl
}

// exportArgo renders fl and decodes it back strictly.
func exportArgo(t *testing.T, fl *Fleet) (argoWorkflowTemplate, string) {
	t.Helper()
	out, err := ArgoWorkflowTemplate(fl, argoOpts)
	if err != nil {
		t.Fatal(err)
	}
	var wt argoWorkflowTemplate
	if err := yaml.UnmarshalStrict(out, &wt); err != nil {
		t.Fatalf("the output does not decode: %v\n%s", err, out)
	}
	return wt, string(out)
}

func argoTemplateNamed(t *testing.T, wt argoWorkflowTemplate, name string) argoTemplate {
	t.Helper()
	for _, tm := range wt.Spec.Templates {
		if tm.Name == name {
			return tm
		}
	}
	t.Fatalf("no template %q", name)
	return argoTemplate{}
}

func TestArgoStepGroups(t *testing.T) {
	tests := []struct {
		name, file string
		want       []string // each step group's step:template
	}{
		{"stages, soaks and approvals in order", argoFleet, []string{
			"canary:stage-canary", "canary-soak:soak-canary", "canary-approval:approval-canary",
			"prod:stage-prod", "prod-soak:soak-prod", "edge:stage-edge"}},
		{"a stage name Argo refuses names every stage by its place", strings.Replace(argoFleet, "name: prod", "name: prod eu", 1), []string{
			"stage-1:stage-stage-1", "stage-1-soak:soak-stage-1", "stage-1-approval:approval-stage-1",
			"stage-2:stage-stage-2", "stage-2-soak:soak-stage-2", "stage-3:stage-stage-3"}},
		{"names that would collide name every stage by its place", strings.Replace(argoFleet, "name: edge", "name: canary-soak", 1), []string{
			"stage-1:stage-stage-1", "stage-1-soak:soak-stage-1", "stage-1-approval:approval-stage-1",
			"stage-2:stage-stage-2", "stage-2-soak:soak-stage-2", "stage-3:stage-stage-3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wt, _ := exportArgo(t, resolveArgo(t, tc.file))
			entry := argoTemplateNamed(t, wt, wt.Spec.Entrypoint)
			var got []string
			for _, group := range entry.Steps {
				if len(group) != 1 {
					t.Fatalf("step group %v: want one step", group)
				}
				got = append(got, group[0].Name+":"+group[0].Template)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("step groups\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

func TestArgoStages(t *testing.T) {
	wt, _ := exportArgo(t, resolveArgo(t, argoFleet))
	tests := []struct {
		template    string
		parallelism int64
		steps       []string
	}{
		{"stage-canary", 1, []string{"target-1:canary-target-1"}},
		{"stage-prod", 2, []string{"target-1:prod-target-1", "target-2:prod-target-2", "target-3:prod-target-3"}},
		{"stage-edge", 1, []string{"target-1:edge-target-1"}},
	}
	for _, tc := range tests {
		t.Run(tc.template, func(t *testing.T) {
			st := argoTemplateNamed(t, wt, tc.template)
			if st.Parallelism == nil || *st.Parallelism != tc.parallelism {
				t.Errorf("parallelism %v, want %d", st.Parallelism, tc.parallelism)
			}
			if st.FailFast == nil || !*st.FailFast {
				t.Errorf("failFast %v, want true: a failed target starts no more", st.FailFast)
			}
			if len(st.Steps) != 1 {
				t.Fatalf("%d step groups, want the stage's targets in one", len(st.Steps))
			}
			var got []string
			for _, s := range st.Steps[0] {
				got = append(got, s.Name+":"+s.Template)
			}
			if strings.Join(got, " ") != strings.Join(tc.steps, " ") {
				t.Errorf("steps %v, want %v", got, tc.steps)
			}
		})
	}
}

func TestArgoSuspends(t *testing.T) {
	wt, _ := exportArgo(t, resolveArgo(t, argoFleet))
	tests := []struct {
		template, duration string
	}{
		{"soak-canary", "10m0s"},
		{"approval-canary", ""}, // no duration: "argo resume" ends it
		{"soak-prod", "1m30s"},
	}
	for _, tc := range tests {
		t.Run(tc.template, func(t *testing.T) {
			s := argoTemplateNamed(t, wt, tc.template).Suspend
			if s == nil || s.Duration != tc.duration {
				t.Errorf("suspend %+v, want duration %q", s, tc.duration)
			}
		})
	}
}

func TestArgoTargetContainers(t *testing.T) {
	wt, _ := exportArgo(t, resolveArgo(t, argoFleet))
	common := " --kubeconfig /etc/nodeupgrade/kubeconfig --yes "
	tests := []struct {
		template, target, args string
	}{
		{"canary-target-1", "dev/ng1", "run ng1" + common + "--prometheus-url=http://prom:9090 --provider=none --context dev"},
		{"prod-target-3", "prod-c/ng1", "run ng1" + common + "--prometheus-url=http://prom:9090 --provider=none --context prod-c"},
		{"edge-target-1", "dev/-l pool=edge", "run -l pool=edge" + common + "--max-unavailable=2 --prometheus-url=http://prom:9090 --provider=none --context dev"},
	}
	for _, tc := range tests {
		t.Run(tc.template, func(t *testing.T) {
			tm := argoTemplateNamed(t, wt, tc.template)
			c := tm.Container
			if c == nil {
				t.Fatal("no container")
			}
			if got := strings.Join(c.Args, " "); got != tc.args {
				t.Errorf("args\n%q\nwant\n%q", got, tc.args)
			}
			if c.Image != argoOpts.Image || strings.Join(c.Command, " ") != "/kubectl-nodeupgrade" {
				t.Errorf("image %q command %q", c.Image, c.Command)
			}
			if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/etc/nodeupgrade" || c.VolumeMounts[0].Name != "kubeconfig" {
				t.Errorf("volume mounts %+v", c.VolumeMounts)
			}
			if got := tm.Metadata.Annotations["nodeupgrade.dev/target"]; got != tc.target {
				t.Errorf("target annotation %q, want %q", got, tc.target)
			}
		})
	}
	if v := wt.Spec.Volumes; len(v) != 1 || v[0].Secret == nil || v[0].Secret.SecretName != "fleet-kubeconfig" ||
		len(v[0].Secret.Items) != 1 || v[0].Secret.Items[0].Key != "config" || v[0].Secret.Items[0].Path != "kubeconfig" {
		t.Errorf("volumes %+v", v)
	}
	if wt.Spec.ServiceAccountName != "nodeupgrade" || wt.Metadata.Name != "nodeupgrade-fleet-img-42" {
		t.Errorf("service account %q, name %q", wt.Spec.ServiceAccountName, wt.Metadata.Name)
	}
}

func TestArgoNotMapped(t *testing.T) {
	wt, out := exportArgo(t, resolveArgo(t, argoFleet))
	notes := strings.Split(wt.Metadata.Annotations[ArgoNotMappedAnnotation], "\n")
	want := []string{
		`stage "canary": afterStage.gates prometheus:sum(rate(errors[5m])) < 1 are not evaluated: "fleet run" evaluates them; add steps of your own`,
		`stage "prod": maxFailures 1: the stage stops at its first failed target (failFast) and the workflow with it`,
	}
	if strings.Join(notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("not mapped\n%q\nwant\n%q", notes, want)
	}
	for _, n := range want {
		if !strings.Contains(out, "# Not mapped: "+n+"\n") {
			t.Errorf("the header lacks %q:\n%s", n, out)
		}
	}
	plain := strings.NewReplacer("  afterStage: {soak: 10m, gates: [\"prometheus:sum(rate(errors[5m])) < 1\"], approval: true}\n", "", "  maxFailures: 1\n", "").Replace(argoFleet)
	wt, out = exportArgo(t, resolveArgo(t, plain))
	if _, ok := wt.Metadata.Annotations[ArgoNotMappedAnnotation]; ok || strings.Contains(out, "Not mapped") {
		t.Errorf("a fleet the template does whole has notes:\n%s", out)
	}
}

func TestArgoRefusals(t *testing.T) {
	long := strings.Repeat("a", 46) // 18 + 46 = 64 > 63
	tests := []struct {
		name   string
		fleet  string
		opts   ArgoOptions
		want   string
		isFile bool
	}{
		{"a fleet name that is no object name", "Prod_EU", argoOpts, `metadata.name "Prod_EU" cannot name an Argo WorkflowTemplate "nodeupgrade-fleet-Prod_EU": a lowercase RFC 1123 subdomain`, true},
		{"a fleet name too long for Argo", long, argoOpts, "Argo takes at most 63 characters", true},
		{"no image", "img-42", ArgoOptions{KubeconfigSecret: "s"}, `image "": give the plugin's container image with --image-ref`, false},
		{"a Secret name that is none", "img-42", ArgoOptions{Image: "i", KubeconfigSecret: "My Secret"}, `kubeconfig Secret "My Secret" is no Secret name`, false},
		{"no Secret", "img-42", ArgoOptions{Image: "i"}, "(--kubeconfig-secret sets it)", false},
		{"a service account that is none", "img-42", ArgoOptions{Image: "i", KubeconfigSecret: "s", ServiceAccount: "A_B"}, `service account "A_B" is no ServiceAccount name`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fl := resolveArgo(t, argoFleet)
			fl.Name = tc.fleet
			out, err := ArgoWorkflowTemplate(fl, tc.opts)
			if err == nil {
				t.Fatalf("no error; output:\n%s", out)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one line with %q", msg, tc.want)
			}
			if IsFileError(err) != tc.isFile {
				t.Errorf("IsFileError %v, want %v", IsFileError(err), tc.isFile)
			}
		})
	}
}
