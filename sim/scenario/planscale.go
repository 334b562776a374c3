package scenario

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// PlanScale describes the read-only cluster of hack/bench.sh --plan-scale:
// node group Name of Nodes nodes over three zones (a tenth current, on
// image ami-new, the rest on ami-old) that no kubelet manages, and
// Nodes*PodsPerNode pods, Running and Ready, bound to them by nodeName, from
// Deployments of Replicas pods each with a PDB, spread over Namespaces
// namespaces named Name-0, Name-1, ….
//
// The pods are made here, not by the controllers: a ValidatingAdmissionPolicy
// refuses pods created by kube-system's service accounts in these
// namespaces, so the ReplicaSet each Deployment gets from the deployment
// controller cannot make its own pods (it retries with back-off), and then
// finds the ones made here, which it owns, at its replica count. The
// cluster must run without the node lifecycle controller
// (cluster.Options.NoNodeLifecycle): the nodes are Ready because they were
// created so, and nothing renews them.
type PlanScale struct {
	Name        string
	Nodes       int
	PodsPerNode int
	Replicas    int
	Namespaces  int
	Workers     int       // requests in flight; default 64
	Progress    io.Writer // a line every 10 s; may be nil
}

// planScaleLabel marks the namespaces whose pods only PlanScale makes.
const planScaleLabel = "sim.nodeupgrade.dev/prebuilt-pods"

func (p PlanScale) validate() error {
	if p.Name == "" || p.Nodes <= 0 || p.PodsPerNode <= 0 || p.Replicas <= 0 || p.Namespaces <= 0 {
		return fmt.Errorf("plan-scale needs a name and positive node, pod, replica and namespace counts")
	}
	if p.Nodes*p.PodsPerNode%p.Replicas != 0 {
		return fmt.Errorf("plan-scale: %d pods do not divide into Deployments of %d", p.Nodes*p.PodsPerNode, p.Replicas)
	}
	return nil
}

// CreatePlanScale builds p; rc is the admin's config (it impersonates a
// controller to see the admission policy in force).
func CreatePlanScale(ctx context.Context, rc *rest.Config, p PlanScale) error {
	if err := p.validate(); err != nil {
		return err
	}
	if p.Workers <= 0 {
		p.Workers = 64
	}
	rc = rest.CopyConfig(rc)
	rc.QPS = -1
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	b := &planScaleBuilder{p: p, c: c}
	if err := b.denyControllerPods(ctx, rc); err != nil {
		return err
	}
	steps := []struct {
		what string
		fn   func(context.Context) error
	}{
		{"nodes", b.nodes},
		{"namespaces", b.namespaces},
		{"deployments and PDBs", b.deployments},
		{"pods", b.pods},
		{"PDB status", b.waitPDBs},
	}
	for _, s := range steps {
		start := time.Now()
		if err := s.fn(ctx); err != nil {
			return fmt.Errorf("plan-scale %s: %w", s.what, err)
		}
		b.logf("%s done in %s", s.what, time.Since(start).Round(time.Second))
	}
	return nil
}

type planScaleBuilder struct {
	p   PlanScale
	c   kubernetes.Interface
	rss []*appsv1.ReplicaSet // one per Deployment, in Deployment order
}

func (b *planScaleBuilder) logf(format string, args ...any) {
	if b.p.Progress != nil {
		fmt.Fprintf(b.p.Progress, "[%s] plan-scale: %s\n", time.Now().UTC().Format(time.TimeOnly), fmt.Sprintf(format, args...))
	}
}

// The objects of the scenario come from the constructors below, pure
// functions of p and an index, so that the builder here and the replay
// server (replay.go) state the scenario once.

func (p PlanScale) deploymentCount() int { return p.Nodes * p.PodsPerNode / p.Replicas }

// namespaceCount is how many namespaces hold Deployments.
func (p PlanScale) namespaceCount() int { return min(p.Namespaces, p.deploymentCount()) }

// deploymentNamespace is the namespace of Deployment i.
func (p PlanScale) deploymentNamespace(i int) string {
	return fmt.Sprintf("%s-%d", p.Name, i%p.Namespaces)
}

// namespace is namespace i, as the builder creates it.
func (p PlanScale) namespace(i int) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.deploymentNamespace(i),
		Labels: map[string]string{planScaleLabel: "true"}}}
}

// parallel calls fn(i) for i in [0, n) on p.Workers goroutines, reporting
// progress; the first error stops it.
func (b *planScaleBuilder) parallel(ctx context.Context, what string, n int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, done atomic.Int64
	stopProgress := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
				b.logf("%s: %d/%d", what, done.Load(), n)
			}
		}
	}()
	defer close(stopProgress)
	var wg sync.WaitGroup
	for range min(b.p.Workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					cancel(err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// retry retries fn on the errors a busy apiserver answers with.
func retry(ctx context.Context, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil || attempt == 10 || !(apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) ||
			apierrors.IsTimeout(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err)) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
}

// denyControllerPods installs the admission policy and waits until a
// controller's pod is refused (policies reach admission a moment after
// they are created).
func (b *planScaleBuilder) denyControllerPods(ctx context.Context, rc *rest.Config) error {
	name := "sim-prebuilt-pods"
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: new(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: "!request.userInfo.username.startsWith('system:serviceaccount:kube-system:')",
				Message:    "the pods of this namespace are made by simcluster scenario plan-scale",
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: planScaleLabel, Operator: metav1.LabelSelectorOpExists}},
			}},
		},
	}
	ar := b.c.AdmissionregistrationV1()
	if _, err := ar.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create admission policy: %w", err)
	}
	if _, err := ar.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create admission policy binding: %w", err)
	}
	probeNS := b.p.namespace(0)
	if err := ensurePlanScaleNamespace(ctx, b.c, probeNS); err != nil {
		return err
	}
	irc := rest.CopyConfig(rc)
	irc.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:kube-system:replicaset-controller"}
	ic, err := kubernetes.NewForConfig(irc)
	if err != nil {
		return err
	}
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "policy-probe", Namespace: probeNS.Name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: Image}}, AutomountServiceAccountToken: new(false)}}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := ic.CoreV1().Pods(probeNS.Name).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), nil
	})
}

func ensurePlanScaleNamespace(ctx context.Context, c kubernetes.Interface, ns *corev1.Namespace) error {
	_, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns.Name, err)
	}
	return nil
}

func (p PlanScale) nodeName(i int) string {
	kind := "old"
	if i%10 == 9 {
		kind = "new"
	}
	return fmt.Sprintf("%s-%s-%d", p.Name, kind, i)
}

// nodeIP is node i's address, and the host IP of its pods.
func nodeIP(i int) string { return fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256) }

// node is node i Ready, as a kubelet registers it, its conditions set at now.
func (p PlanScale) node(i int, now metav1.Time) *corev1.Node {
	zones := []string{"sim-a", "sim-b", "sim-c"}
	images := make([]corev1.ContainerImage, 20)
	for j := range images {
		images[j] = corev1.ContainerImage{Names: []string{fmt.Sprintf("registry.example.com/team/image-%d@sha256:%064d", j, j),
			fmt.Sprintf("registry.example.com/team/image-%d:v1.2.%d", j, j)}, SizeBytes: int64(50_000_000 + j)}
	}
	name, zone, image := p.nodeName(i), zones[i%len(zones)], "ami-old"
	if i%10 == 9 {
		image = "ami-new"
	}
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			HostnameLabel: name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
			ZoneLabel: zone, RegionLabel: Region, "node.kubernetes.io/instance-type": "m5.4xlarge",
			BenchGroupKey: p.Name, BenchImageKey: image,
		}},
		Spec: corev1.NodeSpec{ProviderID: fmt.Sprintf("sim://%s/%s", zone, name), PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 128+i/256%128, i%256)},
		Status: corev1.NodeStatus{
			Capacity: rl, Allocatable: rl.DeepCopy(),
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"),
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"),
			},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nodeIP(i)}, {Type: corev1.NodeHostName, Address: name}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.34.0", ContainerRuntimeVersion: "containerd://2.1.0",
				OSImage: "Amazon Linux 2023", KernelVersion: "6.1.0", OperatingSystem: "linux", Architecture: "amd64"},
			Images: images,
		},
	}
}

// nodes creates the nodes Ready, as a kubelet registers them, then takes
// off the not-ready taint admission puts on every new node (the node
// lifecycle controller, absent here, would).
func (b *planScaleBuilder) nodes(ctx context.Context) error {
	return b.parallel(ctx, "nodes", b.p.Nodes, func(ctx context.Context, i int) error {
		node := b.p.node(i, metav1.Now())
		name := node.Name
		var created *corev1.Node
		if err := retry(ctx, func() (err error) {
			created, err = b.c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				created, err = b.c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			}
			return err
		}); err != nil {
			return fmt.Errorf("create node %s: %w", name, err)
		}
		if len(created.Spec.Taints) == 0 {
			return nil
		}
		// a patch: the TTL controller annotates new nodes at the same time
		return retry(ctx, func() error {
			_, err := b.c.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"taints":null}}`), metav1.PatchOptions{})
			return err
		})
	})
}

// namespaces creates them and waits for their default service accounts:
// admission refuses pods before.
func (b *planScaleBuilder) namespaces(ctx context.Context) error {
	for i := range b.p.namespaceCount() {
		ns := b.p.namespace(i)
		if err := ensurePlanScaleNamespace(ctx, b.c, ns); err != nil {
			return err
		}
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := b.c.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, nil
		}); err != nil {
			return fmt.Errorf("namespace %s: no default service account: %w", ns.Name, err)
		}
	}
	return nil
}

func (p PlanScale) appName(i int) string { return fmt.Sprintf("app-%04d", i) }

// planScaleTemplate is a pod as a team would write it: two containers with
// environment, probes, requests and limits, a config volume.
func planScaleTemplate(app string) corev1.PodTemplateSpec {
	env := make([]corev1.EnvVar, 12)
	for i := range env {
		env[i] = corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", i), Value: fmt.Sprintf("value-of-setting-%d-for-%s", i, app)}
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
	container := func(n string, port int32) corev1.Container {
		return corev1.Container{
			Name: n, Image: "registry.example.com/team/" + app + ":v1.2.3",
			Command: []string{"/bin/" + app}, Args: []string{fmt.Sprintf("--port=%d", port), "--log-level=info", "--config=/etc/" + app + "/config.yaml"},
			Env:            env,
			Ports:          []corev1.ContainerPort{{Name: n, ContainerPort: port, Protocol: corev1.ProtocolTCP}},
			ReadinessProbe: probe, LivenessProbe: probe,
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/" + app}},
		}
	}
	labels := map[string]string{AppLabel: app, "team": "payments", "tier": "backend"}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8080"}},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{container("app", 8080), container("sidecar", 9090)},
			Volumes:                       []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app}}}}},
			TerminationGracePeriodSeconds: new(int64(30)),
			NodeSelector:                  map[string]string{"kubernetes.io/os": "linux"},
		},
	}
}

// deployment is Deployment i, of p.Replicas pods of app i.
func (p PlanScale) deployment(i int) *appsv1.Deployment {
	app := p.appName(i)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: p.deploymentNamespace(i), Labels: map[string]string{AppLabel: app}},
		Spec: appsv1.DeploymentSpec{Replicas: new(int32(p.Replicas)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{AppLabel: app}},
			Template: planScaleTemplate(app)},
	}
}

// pdb is the budget of Deployment i: maxUnavailable 10% of its pods.
func (p PlanScale) pdb(i int) *policyv1.PodDisruptionBudget {
	app := p.appName(i)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: p.deploymentNamespace(i)},
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{AppLabel: app}},
			MaxUnavailable: new(intstr.FromString("10%"))},
	}
}

// deployments creates each Deployment and its PDB, and waits for the
// ReplicaSet the deployment controller makes for it.
func (b *planScaleBuilder) deployments(ctx context.Context) error {
	n := b.p.deploymentCount()
	b.rss = make([]*appsv1.ReplicaSet, n)
	return b.parallel(ctx, "deployments", n, func(ctx context.Context, i int) error {
		d, pdb := b.p.deployment(i), b.p.pdb(i)
		ns, app := d.Namespace, d.Name
		if err := retry(ctx, func() error {
			_, err := b.c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		}); err != nil {
			return fmt.Errorf("create deployment %s/%s: %w", ns, app, err)
		}
		if err := retry(ctx, func() error {
			_, err := b.c.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		}); err != nil {
			return fmt.Errorf("create pdb %s/%s: %w", ns, app, err)
		}
		return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			list, err := b.c.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: AppLabel + "=" + app})
			if err != nil || len(list.Items) == 0 {
				return false, nil
			}
			b.rss[i] = &list.Items[0]
			return true, nil
		})
	})
}

// pod is pod g, the (g mod p.Replicas)th of Deployment g / p.Replicas,
// whose ReplicaSet rs owns it: bound by nodeName round-robin to the nodes
// (so an app's pods are spread over many nodes).
func (p PlanScale) pod(g int, rs *appsv1.ReplicaSet) *corev1.Pod {
	t := rs.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05x", rs.Name, g%p.Replicas), Namespace: rs.Namespace, GenerateName: rs.Name + "-",
			Labels: t.Labels, Annotations: t.Annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID,
				Controller: new(true), BlockOwnerDeletion: new(true)}}},
		Spec: t.Spec,
	}
	pod.Spec.NodeName = p.nodeName(g % p.Nodes)
	return pod
}

// podStatus is pod g's status Running and Ready, as a kubelet would set it
// at now on created, the pod as the API server stored it.
func (p PlanScale) podStatus(g int, created *corev1.Pod, now metav1.Time) corev1.PodStatus {
	cond := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now}
	}
	hostIP, podIP := nodeIP(g%p.Nodes), fmt.Sprintf("10.%d.%d.%d", 128+g/65536%128, g/256%256, g%256)
	var statuses []corev1.ContainerStatus
	for _, ct := range created.Spec.Containers {
		statuses = append(statuses, corev1.ContainerStatus{Name: ct.Name, Ready: true, Started: new(true), Image: ct.Image,
			ImageID:     ct.Image + "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			ContainerID: fmt.Sprintf("containerd://%064x", g),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
	return corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: created.Status.QOSClass,
		Conditions: []corev1.PodCondition{cond(corev1.PodReadyToStartContainers), cond(corev1.PodInitialized), cond(corev1.PodReady),
			cond(corev1.ContainersReady), cond(corev1.PodScheduled)},
		HostIP: hostIP, HostIPs: []corev1.HostIP{{IP: hostIP}}, PodIP: podIP, PodIPs: []corev1.PodIP{{IP: podIP}},
		StartTime: &now, ContainerStatuses: statuses}
}

// pods creates every Deployment's pods, owned by its ReplicaSet, then sets
// their status Running and Ready as a kubelet would.
func (b *planScaleBuilder) pods(ctx context.Context) error {
	total := b.p.Nodes * b.p.PodsPerNode
	return b.parallel(ctx, "pods", total, func(ctx context.Context, g int) error {
		rs := b.rss[g/b.p.Replicas]
		pod := b.p.pod(g, rs)
		name := pod.Name
		var created *corev1.Pod
		if err := retry(ctx, func() (err error) {
			created, err = b.c.CoreV1().Pods(rs.Namespace).Create(ctx, pod, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				created, err = b.c.CoreV1().Pods(rs.Namespace).Get(ctx, name, metav1.GetOptions{})
			}
			return err
		}); err != nil {
			return fmt.Errorf("create pod %s/%s: %w", rs.Namespace, name, err)
		}
		if created.Status.Phase == corev1.PodRunning {
			return nil
		}
		created.Status = b.p.podStatus(g, created, metav1.Now())
		status := created.Status
		return retry(ctx, func() error {
			_, err := b.c.CoreV1().Pods(rs.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				// the disruption controller or a retried create got there first
				if created, err = b.c.CoreV1().Pods(rs.Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
					created.Status = status
					_, err = b.c.CoreV1().Pods(rs.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
				}
			}
			return err
		})
	})
}

// waitPDBs waits until the disruption controller has counted every pod:
// until then the audit would see budgets with no healthy pods.
func (b *planScaleBuilder) waitPDBs(ctx context.Context) error {
	want := b.p.deploymentCount()
	last := time.Now()
	return wait.PollUntilContextTimeout(ctx, 2*time.Second, 30*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := b.c.PolicyV1().PodDisruptionBudgets("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		healthy := 0
		for _, p := range list.Items {
			if strings.HasPrefix(p.Namespace, b.p.Name+"-") && p.Status.CurrentHealthy == int32(b.p.Replicas) {
				healthy++
			}
		}
		if time.Since(last) > 10*time.Second {
			b.logf("PDBs counting every pod healthy: %d/%d", healthy, want)
			last = time.Now()
		}
		return healthy >= want, nil
	})
}
