// Package argo holds the test that holds "fleet export --argo" to Argo
// Workflows' own types: the exported WorkflowTemplate is decoded strictly
// into github.com/argoproj/argo-workflows/v3's, so a field Argo does not
// have, or one of the wrong shape, fails it.
package argo

import (
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/argoproj/argo-workflows/v3/workflow/validate"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/fleet"
)

// threeStages: a canary with a soak and an approval, two of three
// production clusters at once, then a node group chosen by a selector.
const threeStages = `apiVersion: nodeupgrade.dev/v1alpha1
kind: FleetPlan
metadata: {name: img-42}
defaults:
  run: {provider: none}
stages:
- name: canary
  targets:
  - {context: dev, nodeGroup: ng1}
  afterStage: {soak: 15m, approval: true}
- name: prod
  maxConcurrency: 2
  targets:
  - {contextSelector: "prod-*", nodeGroup: ng1}
- name: edge
  targets:
  - {context: dev, selector: "pool=edge", run: {max-unavailable: 2}}
`

var opts = fleet.ArgoOptions{Image: "ghcr.io/nodeupgrade/kubectl-nodeupgrade:v1.2.3", KubeconfigSecret: "fleet-kubeconfig"}

// exported is threeStages exported and decoded into Argo's types.
func exported(t *testing.T) *wfv1.WorkflowTemplate {
	t.Helper()
	return exportedFile(t, threeStages)
}

func exportedFile(t *testing.T, file string) *wfv1.WorkflowTemplate {
	t.Helper()
	f, err := fleet.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	fl, err := fleet.Resolve(f, fleet.Options{Contexts: []string{"dev", "prod-a", "prod-b", "prod-c"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := fleet.ArgoWorkflowTemplate(fl, opts)
	if err != nil {
		t.Fatal(err)
	}
	var wt wfv1.WorkflowTemplate
	if err := yaml.UnmarshalStrict(out, &wt); err != nil {
		t.Fatalf("Argo's WorkflowTemplate refuses the export: %v\n%s", err, out)
	}
	if wt.APIVersion != "argoproj.io/v1alpha1" || wt.Kind != "WorkflowTemplate" || wt.Name != "nodeupgrade-fleet-img-42" {
		t.Fatalf("decoded %s %s %q", wt.APIVersion, wt.Kind, wt.Name)
	}
	return &wt
}

// TestExportDecodesIntoArgoTypes: every step names a template of the
// export, each of the type it is for, and the entrypoint's step groups
// are the stages in order with a suspend after the canary for its soak
// and one for its approval.
func TestExportDecodesIntoArgoTypes(t *testing.T) {
	wt := exported(t)
	entry := wt.GetTemplateByName(wt.Spec.Entrypoint)
	if entry == nil || entry.GetType() != wfv1.TemplateTypeSteps {
		t.Fatalf("entrypoint %q: %+v, want a steps template", wt.Spec.Entrypoint, entry)
	}
	want := []wfv1.TemplateType{wfv1.TemplateTypeSteps, wfv1.TemplateTypeSuspend, wfv1.TemplateTypeSuspend, wfv1.TemplateTypeSteps, wfv1.TemplateTypeSteps}
	if len(entry.Steps) != len(want) {
		t.Fatalf("%d step groups, want %d", len(entry.Steps), len(want))
	}
	for i, group := range entry.Steps {
		if len(group.Steps) != 1 {
			t.Fatalf("step group %d has %d steps, want 1: a stage, a soak or an approval", i, len(group.Steps))
		}
		tm := wt.GetTemplateByName(group.Steps[0].Template)
		if tm == nil || tm.GetType() != want[i] {
			t.Errorf("step group %d: template %q is %v, want %s", i, group.Steps[0].Template, tm, want[i])
		}
	}
	tests := []struct {
		name, template string
		duration       time.Duration // -1: no duration
	}{
		{"the canary's soak", entry.Steps[1].Steps[0].Template, 15 * time.Minute},
		{"the canary's approval", entry.Steps[2].Steps[0].Template, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := wt.GetTemplateByName(tc.template).Suspend
			if tc.duration < 0 {
				if s.Duration != "" {
					t.Errorf("duration %q, want none: argo resume ends it", s.Duration)
				}
				return
			}
			d, err := wfv1.ParseStringToDuration(s.Duration)
			if err != nil || d != tc.duration {
				t.Errorf("duration %q (%v, %v), want %v", s.Duration, d, err, tc.duration)
			}
		})
	}
}

// TestExportStagesAndTargets: each stage's template runs its targets in
// one step group, maxConcurrency at once, stopping at a failure; each
// target's container runs the plugin with the mounted kubeconfig.
func TestExportStagesAndTargets(t *testing.T) {
	wt := exported(t)
	entry := wt.GetTemplateByName(wt.Spec.Entrypoint)
	tests := []struct {
		stage       int // its step group in the entrypoint
		parallelism int64
		args        []string // each target's container's
	}{
		{0, 1, []string{"run ng1 --kubeconfig /etc/nodeupgrade/kubeconfig --yes --provider=none --context dev"}},
		{3, 2, []string{
			"run ng1 --kubeconfig /etc/nodeupgrade/kubeconfig --yes --provider=none --context prod-a",
			"run ng1 --kubeconfig /etc/nodeupgrade/kubeconfig --yes --provider=none --context prod-b",
			"run ng1 --kubeconfig /etc/nodeupgrade/kubeconfig --yes --provider=none --context prod-c"}},
		{4, 1, []string{"run -l pool=edge --kubeconfig /etc/nodeupgrade/kubeconfig --yes --max-unavailable=2 --provider=none --context dev"}},
	}
	for _, tc := range tests {
		name := entry.Steps[tc.stage].Steps[0].Template
		t.Run(name, func(t *testing.T) {
			st := wt.GetTemplateByName(name)
			if !st.HasParallelism() || *st.Parallelism != tc.parallelism || !st.IsFailFast() {
				t.Errorf("parallelism %v failFast %v, want %d and true", st.Parallelism, st.FailFast, tc.parallelism)
			}
			if len(st.Steps) != 1 || len(st.Steps[0].Steps) != len(tc.args) {
				t.Fatalf("steps %+v, want one group of %d", st.Steps, len(tc.args))
			}
			for i, step := range st.Steps[0].Steps {
				c := wt.GetTemplateByName(step.Template).Container
				if c == nil {
					t.Fatalf("step %q: template %q has no container", step.Name, step.Template)
				}
				if got := strings.Join(c.Args, " "); got != tc.args[i] || c.Image != opts.Image {
					t.Errorf("step %q: image %q args\n%q\nwant\n%q", step.Name, c.Image, got, tc.args[i])
				}
				assertKubeconfigMounted(t, wt, c.VolumeMounts)
			}
		})
	}
}

// assertKubeconfigMounted: the Secret's key "config" is the file
// --kubeconfig names.
func assertKubeconfigMounted(t *testing.T, wt *wfv1.WorkflowTemplate, mounts []corev1.VolumeMount) {
	t.Helper()
	if len(mounts) != 1 || len(wt.Spec.Volumes) != 1 || mounts[0].Name != wt.Spec.Volumes[0].Name {
		t.Fatalf("mounts %+v, volumes %+v", mounts, wt.Spec.Volumes)
	}
	s := wt.Spec.Volumes[0].Secret
	if s == nil || s.SecretName != opts.KubeconfigSecret || len(s.Items) != 1 || s.Items[0].Key != fleet.ArgoKubeconfigKey {
		t.Fatalf("volume %+v, want Secret %q's key %q", wt.Spec.Volumes[0], opts.KubeconfigSecret, fleet.ArgoKubeconfigKey)
	}
	if got := mounts[0].MountPath + "/" + s.Items[0].Path; got != fleet.ArgoKubeconfig {
		t.Errorf("the kubeconfig is mounted at %q, want %q", got, fleet.ArgoKubeconfig)
	}
}

// TestExportPassesArgoValidation: Argo's own validation of a
// WorkflowTemplate (what "argo template lint" and its admission run)
// accepts the export: names, template references, suspend durations.
// The stage names are the export's where Argo takes them, else stage-N.
func TestExportPassesArgoValidation(t *testing.T) {
	tests := []struct{ name, file string }{
		{"the three stages", threeStages},
		{"a stage name Argo refuses", strings.Replace(threeStages, "name: prod", "name: prod eu", 1)},
		{"the longest stage name the export keeps", strings.Replace(threeStages, "name: prod", "name: "+strings.Repeat("p", 100), 1)},
		{"a stage name too long with its prefixes", strings.Replace(threeStages, "name: prod", "name: "+strings.Repeat("p", 120), 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := validate.ValidateWorkflowTemplate(nil, nil, exportedFile(t, tc.file), nil, validate.ValidateOpts{}); err != nil {
				t.Errorf("Argo refuses the export: %v", err)
			}
		})
	}
}
