package snapshot

import (
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"
)

type decodeCase struct {
	name string
	pod  *corev1.Pod
}

// decodeCases are pods as varied as the API makes them, each a change of a
// realistic Deployment's pod.
func decodeCases() []decodeCase {
	pod := func(change func(p *corev1.Pod)) *corev1.Pod {
		p := realisticPod("shop", "web-1", "n1", "web")
		change(p)
		return p
	}
	required := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
		{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}},
		{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"n9"}}}}}}
	term := corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: "kubernetes.io/hostname"}
	return []decodeCase{
		{"realistic", pod(func(*corev1.Pod) {})},
		{"same workload, other pod", realisticPod("shop", "web-2", "n2", "web")},
		{"other workload", realisticPod("ops", "db-0", "n1", "db")},
		{"empty pod", &corev1.Pod{}},
		{"init containers and a sidecar", pod(func(p *corev1.Pod) {
			init := p.Spec.Containers[0]
			init.Name = "migrate"
			sidecar := p.Spec.Containers[1]
			sidecar.Name, sidecar.RestartPolicy = "proxy", new(corev1.ContainerRestartPolicyAlways)
			sidecar.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}},
				PostStart: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}}
			sidecar.StartupProbe = sidecar.ReadinessProbe
			p.Spec.InitContainers = []corev1.Container{init, sidecar}
			p.Status.InitContainerStatuses = p.Status.ContainerStatuses
		})},
		{"node and pod affinity", pod(func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{
				NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required,
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 10, Preference: required.NodeSelectorTerms[0]}}},
				PodAffinity:     &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}},
				PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term}}},
			}
		})},
		{"preferred node affinity only", pod(func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 10, Preference: required.NodeSelectorTerms[0]}}}}
		})},
		{"empty required node affinity", pod(func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
		})},
		{"pod-level resources and overhead", pod(func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("120Mi")}
			p.Spec.RuntimeClassName = new("kata")
		})},
		{"every kind of volume", pod(func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes,
				corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: new(resource.MustParse("1Gi"))}}},
				corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-1", ReadOnly: true}}},
				corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
					Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: new("gp3"), Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}}}}}}},
				corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
				corev1.Volume{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}},
				corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}},
				corev1.Volume{Name: "plain-scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		})},
		{"no volumes, containers or tolerations", pod(func(p *corev1.Pod) {
			p.Spec.Volumes, p.Spec.Containers, p.Spec.Tolerations = nil, nil, nil
		})},
		{"tolerations", pod(func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "batch", Effect: corev1.TaintEffectNoSchedule},
				corev1.Toleration{Operator: corev1.TolerationOpExists})
		})},
		{"readiness gates", pod(func(p *corev1.Pod) {
			p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "target-health.elbv2.k8s.aws/web"}}
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: "target-health.elbv2.k8s.aws/web", Status: corev1.ConditionTrue})
		})},
		{"terminating, with finalizers", pod(func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1700000300, 0)}
			p.DeletionGracePeriodSeconds = new(int64(30))
			p.CreationTimestamp = metav1.Time{Time: time.Unix(1700000000, 0)}
			p.Finalizers = []string{"example.com/cleanup", "batch.kubernetes.io/job-tracking"}
			p.Generation = 3
		})},
		{"no labels", pod(func(p *corev1.Pod) { p.Labels = nil })},
		{"empty annotations", pod(func(p *corev1.Pod) { p.Annotations = map[string]string{} })},
		{"last-applied annotation", pod(func(p *corev1.Pod) { p.Annotations[lastApplied] = `{"apiVersion":"v1","kind":"Pod"}` })},
		{"only a last-applied annotation", pod(func(p *corev1.Pod) { p.Annotations = map[string]string{lastApplied: "{}"} })},
		{"mirror pod", pod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "0123abcd", "kubernetes.io/config.source": "file"}
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-uid", Controller: new(true)}}
			p.Spec.NodeName, p.Spec.Priority, p.Spec.PriorityClassName = "n1", new(int32(2000001000)), "system-node-critical"
		})},
		{"many conditions", pod(func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions,
				corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", Message: "evicted",
					LastTransitionTime: metav1.Time{Time: time.Unix(1700000000, 0)}, ObservedGeneration: 2},
				corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"})
		})},
		{"not ready, no Ready condition", pod(func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}
			p.Status.Phase = corev1.PodPending
		})},
		{"scheduling and host fields", pod(func(p *corev1.Pod) {
			p.Status.NominatedNodeName, p.Status.Reason, p.Status.Resize = "n7", "Preempting", corev1.PodResizeStatusInProgress
			p.Status.ObservedGeneration = 4
			p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC, p.Spec.Hostname, p.Spec.Subdomain = true, true, true, "web-1", "web"
			p.Spec.ShareProcessNamespace, p.Spec.SetHostnameAsFQDN, p.Spec.HostUsers = new(true), new(false), new(false)
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}}
			p.Spec.Priority, p.Spec.PriorityClassName = new(int32(1000)), "high"
			p.Spec.PreemptionPolicy, p.Spec.EnableServiceLinks = new(corev1.PreemptNever), new(false)
			p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
			p.Spec.ActiveDeadlineSeconds, p.Spec.AutomountServiceAccountToken = new(int64(600)), new(false)
			p.Spec.DeprecatedServiceAccount = "default"
			p.Spec.NodeSelector = map[string]string{"disk": "ssd", "kubernetes.io/os": "linux"}
		})},
		{"what SlimPod drops", pod(func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: new(int64(1000))}
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
			p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"db"}}}
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: new("gpu-claim")}}
			p.Status.StartTime, p.Status.Message = &metav1.Time{Time: time.Unix(1700000000, 0)}, "m"
			p.Status.EphemeralContainerStatuses = p.Status.ContainerStatuses
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: new(true)}
			p.Spec.Containers[0].Stdin, p.Spec.Containers[0].TTY = true, true
		})},
		{"status resources", pod(func(p *corev1.Pod) {
			p.Status.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}
			p.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
		})},
		{"owners", pod(func(p *corev1.Pod) {
			p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Thing", Name: "t", UID: "t-uid"})
		})},
		{"uncanonical and varied requests", pod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.1"), corev1.ResourceMemory: resource.MustParse("134217728")}
			p.Spec.Containers[1].Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "bare",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")}}})
		})},
	}
}

// slimmedUnmarshal is today's pipeline, which decodePod must match.
func slimmedUnmarshal(in *interner, b []byte) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	if err := p.Unmarshal(b); err != nil {
		return nil, err
	}
	SlimPod(p)
	in.pod(p)
	return p, nil
}

func marshalPod(t testing.TB, p *corev1.Pod) []byte {
	t.Helper()
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodePodMatchesSlimmedUnmarshal(t *testing.T) {
	cases := decodeCases()
	for _, interners := range []string{"shared interner", "fresh interner"} {
		t.Run(interners, func(t *testing.T) {
			refIn, in := newInterner(), newInterner()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					if interners == "fresh interner" {
						refIn, in = newInterner(), newInterner()
					}
					b := marshalPod(t, c.pod)
					want, err := slimmedUnmarshal(refIn, b)
					if err != nil {
						t.Fatal(err)
					}
					var got corev1.Pod
					// the pods the API serves take the fast path, not the
					// fallback to Unmarshal
					if err := in.decodePodFast(b, &got); err != nil {
						t.Fatalf("decodePodFast: %v", err)
					}
					if !equality.Semantic.DeepEqual(&got, want) {
						t.Fatalf("decodePod differs from Unmarshal+SlimPod+intern:\n got %+v\nwant %+v", got, *want)
					}
				})
			}
		})
	}
	// encodings the fast path leaves to Unmarshal still come out right
	fallbacks := []struct {
		name string
		b    func() []byte
	}{
		{"metadata given twice", func() []byte {
			b := marshalPod(t, cases[0].pod)
			meta := marshalPod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"extra": "label"}, Name: "renamed"}})
			return append(b, meta...)
		}},
		{"spec given twice", func() []byte {
			b := marshalPod(t, cases[0].pod)
			spec := marshalPod(t, &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "third"}}, NodeSelector: map[string]string{"a": "b"}}})
			return append(b, spec...)
		}},
	}
	for _, c := range fallbacks {
		t.Run(c.name, func(t *testing.T) {
			b := c.b()
			want, err := slimmedUnmarshal(newInterner(), b)
			if err != nil {
				t.Fatal(err)
			}
			in := newInterner()
			var got corev1.Pod
			if err := in.decodePod(b, &got); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(&got, want) {
				t.Fatalf("decodePod differs from Unmarshal+SlimPod+intern:\n got %+v\nwant %+v", got, *want)
			}
		})
	}
}

// TestDecodePodMatchesOnRandomPods: on thousands of pods with every field
// filled at random (randfill, with apimachinery's fillers for metadata,
// quantities and times), the fast path decodes what Unmarshal, SlimPod and
// the interner make of the same bytes. Every other pod takes parts of the
// one before it, as a workload's pods share them, so the interner's
// shortcuts for what it has seen are taken too.
func TestDecodePodMatchesOnRandomPods(t *testing.T) {
	const pods = 3000
	fill := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(1), serializer.NewCodecFactory(k8sruntime.NewScheme())).
		NilChance(0.5).NumElements(0, 3).Funcs(randomQuantity)
	refIn, in := newInterner(), newInterner()
	var prev *corev1.Pod
	for i := range pods {
		p := &corev1.Pod{}
		fill.Fill(p)
		if i%2 == 1 {
			sharePodParts(p, prev)
		}
		prev = p
		b := marshalPod(t, p)
		want, err := slimmedUnmarshal(refIn, b)
		if err != nil {
			t.Fatalf("pod %d: Unmarshal: %v", i, err)
		}
		var got corev1.Pod
		// a pod the API encodes takes the fast path, not the fallback
		if err := in.decodePodFast(b, &got); err != nil {
			t.Fatalf("pod %d: decodePodFast: %v", i, err)
		}
		if !equality.Semantic.DeepEqual(&got, want) {
			t.Fatalf("pod %d: decodePod differs from Unmarshal+SlimPod+intern:\n got %+v\nwant %+v", i, got, *want)
		}
	}
}

// randomQuantity fills a quantity in one of the forms the API writes:
// whole, milli, binary or decimal-exponent.
func randomQuantity(q *resource.Quantity, c randfill.Continue) {
	switch c.Intn(4) {
	case 0:
		*q = *resource.NewQuantity(c.Int63n(1000), resource.DecimalSI)
	case 1:
		*q = *resource.NewMilliQuantity(c.Int63n(100000), resource.DecimalSI)
	case 2:
		*q = *resource.NewQuantity(c.Int63n(1<<40), resource.BinarySI)
	default:
		*q = *resource.NewScaledQuantity(c.Int63n(1000), resource.Scale(c.Intn(19)-9))
	}
}

// sharePodParts gives p some of prev's parts, as two pods of a workload
// have the same labels, containers, tolerations and the like.
func sharePodParts(p, prev *corev1.Pod) {
	p.Namespace, p.Labels, p.Annotations, p.OwnerReferences = prev.Namespace, prev.Labels, prev.Annotations, prev.OwnerReferences
	p.Spec.Containers, p.Spec.InitContainers, p.Spec.Tolerations = prev.Spec.Containers, prev.Spec.InitContainers, prev.Spec.Tolerations
	p.Spec.Volumes, p.Spec.Affinity, p.Spec.NodeSelector = prev.Spec.Volumes, prev.Spec.Affinity, prev.Spec.NodeSelector
	p.Spec.TerminationGracePeriodSeconds, p.Spec.Priority, p.Spec.EnableServiceLinks = prev.Spec.TerminationGracePeriodSeconds, prev.Spec.Priority, prev.Spec.EnableServiceLinks
	p.Status.Conditions, p.Status.Phase = prev.Status.Conditions, prev.Status.Phase
}

// TestDecodePodInterns: the pods of a workload share their label map and
// request lists, as interner.pod makes them.
func TestDecodePodInterns(t *testing.T) {
	in := newInterner()
	var pods [3]corev1.Pod
	for i := range pods {
		p := realisticPod("shop", fmt.Sprintf("web-%d", i), fmt.Sprintf("n%d", i), "web")
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}}
		if i == 2 {
			// the same map, its entries in another order on the wire
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.1"), corev1.ResourceMemory: resource.MustParse("128Mi")}
		}
		if err := in.decodePod(marshalPod(t, p), &pods[i]); err != nil {
			t.Fatal(err)
		}
	}
	same := func(a, b any) bool { return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() }
	for i := 1; i < len(pods); i++ {
		a, b := &pods[0], &pods[i]
		checks := []struct {
			what string
			ok   bool
		}{
			{"labels", same(a.Labels, b.Labels)},
			{"annotations", same(a.Annotations, b.Annotations)},
			{"requests of a container", same(a.Spec.Containers[0].Resources.Requests, b.Spec.Containers[0].Resources.Requests)},
			{"requests of the containers", same(a.Spec.Containers[0].Resources.Requests, a.Spec.Containers[1].Resources.Requests)},
			{"namespace", unsafeStringData(a.Namespace) == unsafeStringData(b.Namespace)},
			{"owner name", unsafeStringData(a.OwnerReferences[0].Name) == unsafeStringData(b.OwnerReferences[0].Name)},
			{"owners", same(a.OwnerReferences, b.OwnerReferences)},
			{"tolerations", same(a.Spec.Tolerations, b.Spec.Tolerations)},
			{"volumes", same(a.Spec.Volumes, b.Spec.Volumes)},
			{"affinity", a.Spec.Affinity == b.Spec.Affinity},
			{"conditions", same(a.Status.Conditions, b.Status.Conditions)},
		}
		// the third pod's requests are written in another order, so its
		// containers are other bytes: decoded again, with the same requests
		if i == 1 {
			checks = append(checks, struct {
				what string
				ok   bool
			}{"containers", same(a.Spec.Containers, b.Spec.Containers)})
		}
		for _, c := range checks {
			t.Run(fmt.Sprintf("pod %d %s", i, c.what), func(t *testing.T) {
				if !c.ok {
					t.Error("not shared")
				}
			})
		}
	}
}

func unsafeStringData(s string) *byte { return unsafe.StringData(s) }

// FuzzDecodePod: whatever bytes Unmarshal accepts, decodePod accepts and
// decodes to the same slimmed pod; it never panics.
func FuzzDecodePod(f *testing.F) {
	for _, c := range decodeCases() {
		f.Add(marshalPod(f, c.pod))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, werr := slimmedUnmarshal(newInterner(), b)
		var got corev1.Pod
		err := newInterner().decodePod(b, &got)
		if werr != nil {
			return
		}
		if err != nil {
			t.Fatalf("decodePod: %v; Unmarshal accepts the pod", err)
		}
		if !equality.Semantic.DeepEqual(&got, want) {
			t.Fatalf("decodePod differs from Unmarshal+SlimPod+intern:\n got %+v\nwant %+v", got, *want)
		}
	})
}

// BenchmarkDecodePod decodes 3,000 realistic pods as a list brings them:
// 60 pods a workload, one interner for the list, each pod copied first
// into the buffer it is decoded from, as fetchPage reads it (ns/op is a
// pod's). "generated" is what decodePod replaces: Unmarshal, SlimPod and
// the interner.
func BenchmarkDecodePod(b *testing.B) {
	const pods, apps = 3000, 50
	encoded := make([][]byte, pods)
	for i := range encoded {
		app := fmt.Sprintf("app-%d", i%apps)
		encoded[i] = marshalPod(b, realisticPod(fmt.Sprintf("ns-%d", i%5), fmt.Sprintf("%s-%d", app, i), fmt.Sprintf("node-%d", i%100), app))
	}
	generated := func(in *interner, item []byte, p *corev1.Pod) error {
		if err := p.Unmarshal(item); err != nil {
			return err
		}
		SlimPod(p)
		in.pod(p)
		return nil
	}
	for _, dec := range []struct {
		name   string
		decode func(*interner, []byte, *corev1.Pod) error
	}{
		{"hand-written", (*interner).decodePod},
		{"generated", generated},
	} {
		b.Run(dec.name, func(b *testing.B) {
			b.ReportAllocs()
			in, got := newInterner(), make([]corev1.Pod, pods)
			var item []byte
			i := 0
			for b.Loop() {
				if i == pods {
					in, i = newInterner(), 0
					clear(got)
				}
				item = append(item[:0], encoded[i]...)
				if err := dec.decode(in, item, &got[i]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// TestDecodeSpecWrongWireType: a spec field of a kind the fast path reads
// given with another wire type is left to the generated decoder, which
// refuses it.
func TestDecodeSpecWrongWireType(t *testing.T) {
	cases := []struct {
		name string
		spec []byte // one field of a PodSpec
	}{
		{"terminationGracePeriodSeconds as bytes", protowire.AppendBytes(protowire.AppendTag(nil, 4, protowire.BytesType), []byte("30"))},
		{"hostNetwork as bytes", protowire.AppendBytes(protowire.AppendTag(nil, 11, protowire.BytesType), []byte{1})},
		{"nodeName as varint", protowire.AppendVarint(protowire.AppendTag(nil, 10, protowire.VarintType), 1)},
		{"preemptionPolicy as varint", protowire.AppendVarint(protowire.AppendTag(nil, 31, protowire.VarintType), 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), c.spec) // Pod.spec
			var p corev1.Pod
			if err := newInterner().decodePodFast(b, &p); !errors.Is(err, errIrregular) {
				t.Errorf("decodePodFast: err = %v, want errIrregular", err)
			}
			if err := newInterner().decodePod(b, &p); err == nil {
				t.Errorf("decodePod accepted the spec, want the generated decoder's error")
			}
		})
	}
}
