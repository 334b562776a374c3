package fleet

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Where an exported workflow's pods find the fleet's kubeconfig: the
// Secret's key "config", as a file of the mounted directory.
const (
	ArgoKubeconfigKey = "config"
	ArgoKubeconfig    = "/etc/nodeupgrade/kubeconfig"
	argoMountDir      = "/etc/nodeupgrade"
	// argoBinary is the plugin in its image: the entrypoint of an image
	// with no shell (hack/image), named because Argo's emissary executor
	// wants a container's command.
	argoBinary = "/kubectl-nodeupgrade"
	// argoMaxName is Argo's limit on a WorkflowTemplate's name
	// (maxCharsInObjectName, workflow/validate/validate.go): it becomes a
	// label value of every workflow made from it.
	argoMaxName = 63
	// ArgoNotMappedAnnotation lists what of the fleet the template does
	// not do, one item a line.
	ArgoNotMappedAnnotation = "nodeupgrade.dev/not-mapped"
)

// ArgoOptions are what an exported workflow runs the targets with.
type ArgoOptions struct {
	// Image is the container image with the plugin, such as
	// ghcr.io/nodeupgrade/kubectl-nodeupgrade:<version>.
	Image string
	// KubeconfigSecret is the Secret, in the workflow's namespace, holding
	// the fleet's kubeconfig (every target's context) under key "config".
	KubeconfigSecret string
	// ServiceAccount runs the workflow's pods; empty leaves Argo's default.
	ServiceAccount string
}

// Validate checks the options, naming the flag that sets each.
func (o ArgoOptions) Validate() error {
	if o.Image == "" || strings.ContainsAny(o.Image, " \t\n") {
		return fmt.Errorf("image %q: give the plugin's container image with --image-ref", o.Image)
	}
	if errs := validation.IsDNS1123Subdomain(o.KubeconfigSecret); len(errs) > 0 {
		return fmt.Errorf("kubeconfig Secret %q is no Secret name: %s (--kubeconfig-secret sets it)", o.KubeconfigSecret, strings.Join(errs, "; "))
	}
	if o.ServiceAccount == "" {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(o.ServiceAccount); len(errs) > 0 {
		return fmt.Errorf("service account %q is no ServiceAccount name: %s (--service-account sets it)", o.ServiceAccount, strings.Join(errs, "; "))
	}
	return nil
}

// ArgoName is the name of the fleet's WorkflowTemplate.
func ArgoName(f *Fleet) string { return "nodeupgrade-fleet-" + f.Name }

// ArgoWorkflowTemplate renders the fleet as an Argo Workflows
// WorkflowTemplate (argoproj.io/v1alpha1), for teams that schedule with
// Argo. Its entrypoint "fleet" is a step group per stage, in order: the
// stage's template runs a step per target, at most maxConcurrency at once
// (the template's parallelism), and stops starting targets at the first
// that fails, those in flight running to their end (failFast); each target
// is a container running "run --yes" in its context with the fleet's
// kubeconfig. After a stage, a soak is a suspend step with its duration
// and an approval a suspend step that "argo resume" ends. What Argo cannot
// do as the coordinator ("fleet run") does is listed in the template's
// header and its ArgoNotMappedAnnotation: the after-stage gates are the
// coordinator's to evaluate (an Argo user adds steps of their own), and a
// stage stops at its first failure whatever its maxFailures.
func ArgoWorkflowTemplate(f *Fleet, o ArgoOptions) ([]byte, error) {
	name := ArgoName(f)
	errs := validation.IsDNS1123Subdomain(name)
	if len(name) > argoMaxName {
		errs = append(errs, fmt.Sprintf("Argo takes at most %d characters", argoMaxName))
	}
	if len(errs) > 0 {
		return nil, fileErrorf("metadata.name %q cannot name an Argo WorkflowTemplate %q: %s", f.Name, name, strings.Join(errs, "; "))
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("cannot export fleet %q to Argo: %w", f.Name, err)
	}
	notes := argoNotMapped(f)
	wt := argoWorkflowTemplate{
		APIVersion: "argoproj.io/v1alpha1",
		Kind:       "WorkflowTemplate",
		Metadata: argoObjectMeta{
			Name:        name,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "kubectl-nodeupgrade"},
			Annotations: map[string]string{"nodeupgrade.dev/fleet": f.Name, "nodeupgrade.dev/fleet-hash": f.Hash},
		},
		Spec: argoSpec{
			Entrypoint:         "fleet",
			ServiceAccountName: o.ServiceAccount,
			Volumes:            []corev1.Volume{kubeconfigVolume(o.KubeconfigSecret)},
			Templates:          argoTemplates(f, o),
		},
	}
	if len(notes) > 0 {
		wt.Metadata.Annotations[ArgoNotMappedAnnotation] = strings.Join(notes, "\n")
	}
	body, err := yaml.Marshal(wt)
	if err != nil {
		return nil, fmt.Errorf("cannot encode the Argo WorkflowTemplate of fleet %q: %w", f.Name, err)
	}
	return append([]byte(argoHeader(f, notes)), body...), nil
}

// argoTemplates are the entrypoint, then each stage's templates.
func argoTemplates(f *Fleet, o ArgoOptions) []argoTemplate {
	names := argoStageNames(f)
	entry := argoTemplate{Name: "fleet"}
	var rest []argoTemplate
	for i, st := range f.Stages {
		n := names[i]
		entry.Steps = append(entry.Steps, []argoStep{{Name: n, Template: "stage-" + n}})
		rest = append(rest, argoStage(n, st, o)...)
		if st.Soak > 0 {
			entry.Steps = append(entry.Steps, []argoStep{{Name: n + "-soak", Template: "soak-" + n}})
			rest = append(rest, argoTemplate{Name: "soak-" + n, Suspend: &argoSuspend{Duration: st.Soak.String()}})
		}
		if st.Approval {
			entry.Steps = append(entry.Steps, []argoStep{{Name: n + "-approval", Template: "approval-" + n}})
			rest = append(rest, argoTemplate{Name: "approval-" + n, Suspend: &argoSuspend{}})
		}
	}
	return append([]argoTemplate{entry}, rest...)
}

// argoStage is the stage's steps template, one parallel step group of
// its targets, then a container template per target: Argo puts a
// parameter in one argument, and the image has no shell to split a
// target's run flags out of one.
func argoStage(n string, st ResolvedStage, o ArgoOptions) []argoTemplate {
	parallelism, failFast := int64(st.MaxConcurrency), true
	stage := argoTemplate{Name: "stage-" + n, Parallelism: &parallelism, FailFast: &failFast}
	var group []argoStep
	out := []argoTemplate{}
	for j, t := range st.Targets {
		tn := fmt.Sprintf("%s-target-%d", n, j+1)
		group = append(group, argoStep{Name: fmt.Sprintf("target-%d", j+1), Template: tn})
		out = append(out, argoTemplate{
			Name:      tn,
			Metadata:  &argoPodMeta{Annotations: map[string]string{"nodeupgrade.dev/target": t.ID()}},
			Container: argoTargetContainer(t, o),
		})
	}
	stage.Steps = [][]argoStep{group}
	return append([]argoTemplate{stage}, out...)
}

func argoTargetContainer(t Target, o ArgoOptions) *argoContainer {
	extra := append([]string{"--kubeconfig", ArgoKubeconfig, "--yes"}, t.Args...)
	return &argoContainer{
		Image:        o.Image,
		Command:      []string{argoBinary},
		Args:         t.Command("run", extra...),
		VolumeMounts: []corev1.VolumeMount{{Name: "kubeconfig", MountPath: argoMountDir, ReadOnly: true}},
	}
}

func kubeconfigVolume(secret string) corev1.Volume {
	return corev1.Volume{Name: "kubeconfig", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret,
		Items:      []corev1.KeyToPath{{Key: ArgoKubeconfigKey, Path: "kubeconfig"}},
	}}}
}

// argoFieldName is Argo's rule for a template's or a step's name
// (workflowFieldNameFmt, workflow/validate/validate.go).
var argoFieldName = regexp.MustCompile(`^[a-zA-Z0-9][-a-zA-Z0-9]*$`)

// argoMaxStageName leaves room for "approval-" and "-target-NNNN" within
// Argo's 128 characters of a name (workflowFieldMaxLength, ibid.).
const argoMaxStageName = 100

// argoStageNames name each stage's steps and templates: the stage's own
// name where Argo takes it and every derived name stays unique, else
// stage-1, stage-2… for all, so the names never depend on one another.
func argoStageNames(f *Fleet) []string {
	names := make([]string, len(f.Stages))
	seen := map[string]bool{}
	ok := true
	for i, st := range f.Stages {
		names[i] = st.Name
		for _, derived := range []string{st.Name, st.Name + "-soak", st.Name + "-approval"} {
			ok = ok && !seen[derived]
			seen[derived] = true
		}
		ok = ok && argoFieldName.MatchString(st.Name) && len(st.Name) <= argoMaxStageName
	}
	if !ok {
		for i := range names {
			names[i] = fmt.Sprintf("stage-%d", i+1)
		}
	}
	return names
}

// argoNotMapped is what of the fleet the template does not do, a line
// per stage and item.
func argoNotMapped(f *Fleet) []string {
	var out []string
	for _, st := range f.Stages {
		if len(st.Gates) > 0 {
			out = append(out, fmt.Sprintf("stage %q: afterStage.gates %s are not evaluated: \"fleet run\" evaluates them; add steps of your own", st.Name, strings.Join(st.Gates, ", ")))
		}
		if st.MaxFailures > 0 {
			out = append(out, fmt.Sprintf("stage %q: maxFailures %d: the stage stops at its first failed target (failFast) and the workflow with it", st.Name, st.MaxFailures))
		}
	}
	return out
}

func argoHeader(f *Fleet, notes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Argo Workflows WorkflowTemplate of fleet %q (hash %s), made by \"kubectl nodeupgrade fleet export --argo\".\n", f.Name, f.Hash)
	b.WriteString("# Approvals are suspend steps: \"argo resume\" ends one.\n")
	for _, n := range notes {
		fmt.Fprintf(&b, "# Not mapped: %s\n", n)
	}
	return b.String()
}

// The subset of Argo's WorkflowTemplate the export writes, field names as
// Argo's (pkg/apis/workflow/v1alpha1): the sim module's test decodes the
// output strictly into Argo's own types.
type argoWorkflowTemplate struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   argoObjectMeta `json:"metadata"`
	Spec       argoSpec       `json:"spec"`
}

type argoObjectMeta struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type argoSpec struct {
	Entrypoint         string          `json:"entrypoint"`
	ServiceAccountName string          `json:"serviceAccountName,omitempty"`
	Volumes            []corev1.Volume `json:"volumes"`
	Templates          []argoTemplate  `json:"templates"`
}

type argoTemplate struct {
	Name        string         `json:"name"`
	Metadata    *argoPodMeta   `json:"metadata,omitempty"`
	Parallelism *int64         `json:"parallelism,omitempty"`
	FailFast    *bool          `json:"failFast,omitempty"`
	Steps       [][]argoStep   `json:"steps,omitempty"`
	Suspend     *argoSuspend   `json:"suspend,omitempty"`
	Container   *argoContainer `json:"container,omitempty"`
}

type argoPodMeta struct {
	Annotations map[string]string `json:"annotations,omitempty"`
}

type argoStep struct {
	Name     string `json:"name"`
	Template string `json:"template"`
}

type argoSuspend struct {
	Duration string `json:"duration,omitempty"`
}

type argoContainer struct {
	Image        string               `json:"image"`
	Command      []string             `json:"command"`
	Args         []string             `json:"args"`
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts"`
}
