package snapshot

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// realisticPod is a Deployment's pod as an apiserver returns it: managed
// fields, two containers with environment, probes and mounts, the service
// account token volume, and a running status.
func realisticPod(ns, name, node, app string) *corev1.Pod {
	// what differs from pod to pod (uid, IP, container IDs) is as unlike
	// from one pod to the next as a cluster's, so gzip compresses as much
	// as it would there
	sum := sha256.Sum256([]byte(ns + "/" + name))
	id := hex.EncodeToString(sum[:])
	// the API server's service account admission names the token volume
	// of each pod anew, and the mounts of its containers with it
	token := "kube-api-access-" + id[:5]
	env := make([]corev1.EnvVar, 12)
	for i := range env {
		env[i] = corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", i), Value: fmt.Sprintf("value-of-setting-%d-for-%s", i, app)}
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
	container := func(n string) corev1.Container {
		return corev1.Container{
			Name: n, Image: "registry.example.com/team/" + app + ":v1.2.3",
			Command: []string{"/bin/" + app}, Args: []string{"--port=8080", "--log-level=info", "--config=/etc/" + app + "/config.yaml"},
			Env:            env,
			Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			ReadinessProbe: probe, LivenessProbe: probe,
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
			},
			VolumeMounts:           []corev1.VolumeMount{{Name: "config", MountPath: "/etc/" + app}, {Name: token, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
		}
	}
	ready := []corev1.PodCondition{{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue}, {Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.ContainersReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	status := func(n string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: n, Ready: true, Image: "registry.example.com/team/" + app + ":v1.2.3", ImageID: "registry.example.com/team/" + app + "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			ContainerID: "containerd://" + hex.EncodeToString(func() []byte { s := sha256.Sum256([]byte(id + n)); return s[:] }()), Started: new(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	}
	fields := []byte(`{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"0000\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:args":{},"f:command":{},"f:env":{".":{},"k:{\"name\":\"SETTING_0\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"SETTING_1\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:imagePullPolicy":{},"f:livenessProbe":{},"f:name":{},"f:ports":{},"f:readinessProbe":{},"f:resources":{},"f:volumeMounts":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{},"f:volumes":{}}}`)
	// the kubelet's entry, valid JSON so the pod encodes as JSON too
	statusFields := []byte(`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{},"f:startTime":{}}}`)
	podIP := fmt.Sprintf("10.%d.%d.%d", sum[3], sum[4], sum[5])
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, GenerateName: app + "-7d9f8c6b5-", UID: types.UID(id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:32]),
			ResourceVersion: strconv.Itoa(int(sum[0])<<16 | int(sum[1])<<8 | int(sum[2])),
			Labels:          map[string]string{"app": app, "pod-template-hash": "7d9f8c6b5", "team": "payments", "tier": "backend"},
			Annotations:     map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8080"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-7d9f8c6b5", UID: "0000", Controller: new(true), BlockOwnerDeletion: new(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(fields))},
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(statusFields)), Subresource: "status"},
			},
		},
		Spec: corev1.PodSpec{
			NodeName: node, ServiceAccountName: "default", DeprecatedServiceAccount: "default", RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
			SchedulerName: "default-scheduler", TerminationGracePeriodSeconds: new(int64(30)), SecurityContext: &corev1.PodSecurityContext{},
			// what the API server's defaulting and admission add to every pod
			Priority: new(int32(0)), EnableServiceLinks: new(true), PreemptionPolicy: new(corev1.PreemptLowerPriority),
			Containers: []corev1.Container{container("app"), container("sidecar")},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app}}}},
				{Name: token, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: new(int64(3607))}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}}}}}},
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready, HostIP: "10.0.1.17", PodIP: podIP,
			HostIPs: []corev1.HostIP{{IP: "10.0.1.17"}}, PodIPs: []corev1.PodIP{{IP: podIP}}, QOSClass: corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{status("app"), status("sidecar")}},
	}
}

func TestSlimPodKeepsWhatPlanningReads(t *testing.T) {
	p := realisticPod("shop", "web-1", "n1", "web")
	p.Annotations[lastApplied] = "{}"
	p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}}}
	required := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}
	p.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	p.Spec.Affinity = &corev1.Affinity{
		NodeAffinity:    &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required, PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1}}},
		PodAntiAffinity: &corev1.PodAntiAffinity{},
	}
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-1"}}})
	started := metav1.Time{Time: time.Unix(1700000000, 0)}
	p.Status.StartTime = &started
	SlimPod(p)
	checks := []struct {
		what string
		ok   bool
	}{
		{"managedFields dropped", p.ManagedFields == nil},
		{"last-applied dropped", p.Annotations[lastApplied] == "" && p.Annotations["prometheus.io/scrape"] == "true"},
		{"env dropped", p.Spec.Containers[0].Env == nil && p.Spec.Containers[1].Env == nil},
		{"container statuses dropped", p.Status.ContainerStatuses == nil},
		{"labels and owner kept", p.Labels["app"] == "web" && len(p.OwnerReferences) == 1},
		{"node and tolerations kept", p.Spec.NodeName == "n1" && len(p.Spec.Tolerations) == 2},
		{"emptyDir and claim volumes kept, the config map and projected ones dropped", len(p.Spec.Volumes) == 2 &&
			p.Spec.Volumes[0].Name == "scratch" && p.Spec.Volumes[0].EmptyDir != nil && p.Spec.Volumes[1].PersistentVolumeClaim.ClaimName == "data-web-1"},
		{"names, readiness probe and preStop kept", p.Spec.Containers[1].Name == "sidecar" && p.Spec.Containers[0].ReadinessProbe != nil &&
			p.Spec.Containers[0].Lifecycle.PreStop != nil},
		{"node selector and required node affinity kept, the rest of the affinity dropped", p.Spec.NodeSelector["disk"] == "ssd" && p.Spec.Affinity != nil &&
			p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == required && p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution == nil && p.Spec.Affinity.PodAntiAffinity == nil},
		{"grace period kept", p.Spec.TerminationGracePeriodSeconds != nil && *p.Spec.TerminationGracePeriodSeconds == 30},
		{"requests kept (the room estimate), limits dropped", p.Spec.Containers[0].Resources.Requests.Cpu().String() == "100m" &&
			p.Spec.Containers[0].Resources.Limits == nil},
		{"image and liveness probe dropped", p.Spec.Containers[0].Image == "" && p.Spec.Containers[0].LivenessProbe == nil},
		{"startTime kept (a do-not-disrupt duration runs from it)", p.Status.StartTime != nil && p.Status.StartTime.Equal(&started)},
		{"phase and the Ready condition kept, the other conditions dropped", p.Status.Phase == corev1.PodRunning && len(p.Status.Conditions) == 1 &&
			p.Status.Conditions[0].Type == corev1.PodReady && p.Status.Conditions[0].Status == corev1.ConditionTrue},
	}
	for _, c := range checks {
		t.Run(c.what, func(t *testing.T) {
			if !c.ok {
				t.Errorf("after SlimPod: %+v", p)
			}
		})
	}
}

// TestTakePages lists pods over several pages, and again in one
// piece when a continue token expires, as client-go's pager.List does.
func TestTakePages(t *testing.T) {
	const total = 2*listPageSize + 7
	tests := []struct {
		name       string
		expireAt   int // the request (1-based) answered 410 Expired; 0 for none
		wantLimits []int64
		wantErr    bool
	}{
		{"pages", 0, []int64{listPageSize, listPageSize, listPageSize}, false},
		// half way: one full list, and the page already kept is not kept twice
		{"expired continue token", 2, []int64{listPageSize, listPageSize, 0}, false},
		{"expired on the last page", 3, []int64{listPageSize, listPageSize, listPageSize, 0}, false},
		// without a continue token a 410 is the server's answer, not a
		// stale token: no full list
		{"expired first request", 1, []int64{listPageSize}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			var limits []int64
			client.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
				opts := a.(k8stesting.ListActionImpl).ListOptions
				limits = append(limits, opts.Limit)
				start := 0
				if opts.Continue != "" {
					start, _ = strconv.Atoi(opts.Continue)
				}
				if len(limits) == tc.expireAt {
					return true, nil, apierrors.NewResourceExpired("continue token expired")
				}
				end := total
				if opts.Limit > 0 {
					end = min(total, start+int(opts.Limit))
				}
				list := &corev1.PodList{}
				for i := start; i < end; i++ {
					list.Items = append(list.Items, *realisticPod("ns", fmt.Sprintf("pod-%d", i), "n1", "web"))
				}
				if end < total {
					list.Continue = strconv.Itoa(end)
				}
				return true, list, nil
			})
			snap, err := Take(context.Background(), client, nil)
			if fmt.Sprint(limits) != fmt.Sprint(tc.wantLimits) {
				t.Errorf("limits %v, want %v", limits, tc.wantLimits)
			}
			if tc.wantErr {
				if !apierrors.IsResourceExpired(err) {
					t.Fatalf("error %v, want the 410", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, p := range snap.Pods {
				if seen[p.Name] {
					t.Fatalf("pod %q listed twice", p.Name)
				}
				seen[p.Name] = true
				if p.ManagedFields != nil || p.Spec.Containers[0].Env != nil {
					t.Fatalf("pod %q not slimmed", p.Name)
				}
			}
			if len(seen) != total {
				t.Errorf("%d pods, want %d", len(seen), total)
			}
		})
	}
}

// fakeListServer serves the lists Take makes, pods from pods in
// pages of the requested limit, as JSON or protobuf as the client asks.
type fakeListServer struct {
	pods         []corev1.Pod
	nodes        []corev1.Node
	replicaSets  []appsv1.ReplicaSet
	deployments  []appsv1.Deployment
	statefulSets []appsv1.StatefulSet
	// truncate cuts this many bytes off the end of every pods page
	truncate atomic.Int64
	// cutNext cuts 100 bytes off the end of this many pods pages more
	// (the size hint's aside)
	cutNext atomic.Int64
	mu      sync.Mutex
	cache   map[string][]byte // encoded responses by content type and query
}

func (f *fakeListServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mediaType := k8sruntime.ContentTypeJSON
	if strings.Contains(r.Header.Get("Accept"), k8sruntime.ContentTypeProtobuf) {
		mediaType = k8sruntime.ContentTypeProtobuf
	}
	key := mediaType + " " + r.URL.String()
	f.mu.Lock()
	body, ok := f.cache[key]
	f.mu.Unlock()
	if !ok {
		var obj k8sruntime.Object
		var gv schema.GroupVersion
		switch r.URL.Path {
		case "/api/v1/pods":
			limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
			start, _ := strconv.Atoi(r.URL.Query().Get("continue"))
			end := len(f.pods)
			if limit > 0 {
				end = min(end, start+limit)
			}
			list := &corev1.PodList{Items: f.pods[start:end]}
			if end < len(f.pods) {
				list.Continue = strconv.Itoa(end)
			}
			// as the API server: a filtered list does not say how many
			// items remain
			if end < len(f.pods) && r.URL.Query().Get("fieldSelector") == "" {
				list.RemainingItemCount = new(int64(len(f.pods) - end))
			}
			obj, gv = list, corev1.SchemeGroupVersion
		case "/api/v1/nodes":
			obj, gv = &corev1.NodeList{Items: f.nodes}, corev1.SchemeGroupVersion
		case "/api/v1/services":
			obj, gv = &corev1.ServiceList{}, corev1.SchemeGroupVersion
		case "/api/v1/namespaces":
			obj, gv = &corev1.NamespaceList{}, corev1.SchemeGroupVersion
		case "/api/v1/persistentvolumeclaims":
			obj, gv = &corev1.PersistentVolumeClaimList{}, corev1.SchemeGroupVersion
		case "/api/v1/persistentvolumes":
			obj, gv = &corev1.PersistentVolumeList{}, corev1.SchemeGroupVersion
		case "/apis/policy/v1/poddisruptionbudgets":
			obj, gv = &policyv1.PodDisruptionBudgetList{}, policyv1.SchemeGroupVersion
		case "/apis/apps/v1/replicasets":
			obj, gv = &appsv1.ReplicaSetList{Items: f.replicaSets}, appsv1.SchemeGroupVersion
		case "/apis/apps/v1/deployments":
			obj, gv = &appsv1.DeploymentList{Items: f.deployments}, appsv1.SchemeGroupVersion
		case "/apis/apps/v1/statefulsets":
			obj, gv = &appsv1.StatefulSetList{Items: f.statefulSets}, appsv1.SchemeGroupVersion
		default:
			http.NotFound(w, r)
			return
		}
		info, _ := k8sruntime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
		var buf bytes.Buffer
		if err := scheme.Codecs.EncoderForVersion(info.Serializer, gv).Encode(obj, &buf); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		body = buf.Bytes()
		f.mu.Lock()
		f.cache[key] = body
		f.mu.Unlock()
	}
	cut := int64(0)
	if r.URL.Path == "/api/v1/pods" {
		cut = f.truncate.Load()
		// not the one-item list of the size hint, which does not fail
		if r.URL.Query().Get("limit") != "1" && f.cutNext.Add(-1) >= 0 {
			cut = 100
		}
		body = body[:len(body)-int(cut)]
	}
	w.Header().Set("Content-Type", mediaType)
	// as the API server: gzip at level 1 above 128 KiB, when asked
	if len(body) > 128<<10 && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		f.mu.Lock()
		zipped, ok := f.cache["gzip "+key]
		f.mu.Unlock()
		if !ok || cut != 0 {
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
			_, _ = zw.Write(body)
			_ = zw.Close()
			zipped = buf.Bytes()
			f.mu.Lock()
			f.cache["gzip "+key] = zipped
			f.mu.Unlock()
		}
		w.Header().Set("Content-Encoding", "gzip")
		body = zipped
	}
	_, _ = w.Write(body)
}

// BenchmarkTake lists 30,000 realistic pods from a local server
// that hands out pre-encoded pages, so the figures are the client's:
// decoding and what the snapshot keeps. heap-B/pod is the live heap the
// snapshot holds per pod.
func BenchmarkTake(b *testing.B) {
	const pods = 30_000
	srv := &fakeListServer{cache: map[string][]byte{}}
	for i := range pods {
		app := fmt.Sprintf("app-%d", i%500)
		srv.pods = append(srv.pods, *realisticPod(fmt.Sprintf("ns-%d", i%50), fmt.Sprintf("%s-%d", app, i), fmt.Sprintf("node-%d", i%1000), app))
	}
	// TLS as an API server: a plain-HTTP config gets http.DefaultTransport,
	// which ignores DisableCompression
	ts := httptest.NewTLSServer(srv)
	b.Cleanup(ts.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	for _, tc := range []struct {
		name, contentType string
		gzip, klauspost   bool // gzip by Go's transport, or by the plugin's (transport.GunzipFaster)
	}{
		{"json", k8sruntime.ContentTypeJSON, false, false},
		{"protobuf", k8sruntime.ContentTypeProtobuf, false, false},
		{"protobuf-gzip", k8sruntime.ContentTypeProtobuf, true, false},
		{"protobuf-gzip-klauspost", k8sruntime.ContentTypeProtobuf, true, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := &rest.Config{Host: ts.URL, QPS: -1, DisableCompression: !tc.gzip, TLSClientConfig: rest.TLSClientConfig{CAData: ca},
				ContentConfig: rest.ContentConfig{ContentType: tc.contentType, AcceptContentTypes: tc.contentType}}
			if tc.klauspost {
				transport.GunzipFaster(cfg)
			}
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				b.Fatal(err)
			}
			// the first list fills the server's cache of encoded pages,
			// which is not the client's cost
			snap, err := Take(context.Background(), client, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				snap = Cluster{}
				if snap, err = Take(context.Background(), client, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if len(snap.Pods) != pods {
				b.Fatalf("%d pods, want %d", len(snap.Pods), pods)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(snap)
			snap = Cluster{}
			runtime.GC()
			runtime.ReadMemStats(&before)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/pods, "heap-B/pod")
		})
	}
}

// TestRunAllReturnsTheFirstFailure: the step that fails first cancels the
// others, and its error wins over the cancellations it caused, whatever its
// place in the list; the caller's cancellation wins when it came first.
func TestRunAllReturnsTheFirstFailure(t *testing.T) {
	errRefused := errors.New("connection refused")
	succeed := func(context.Context) error { return nil }
	// waitThenWrap fails only once ctx ends, as a list cut short does
	waitThenWrap := func(ctx context.Context) error {
		<-ctx.Done()
		return fmt.Errorf("listing nodes: %w", ctx.Err())
	}
	refuse := func(context.Context) error { return fmt.Errorf("listing pods: %w", errRefused) }
	tests := []struct {
		name         string
		steps        []func(context.Context) error
		cancelCaller bool
		want         error // nil for success
	}{
		{"all succeed", []func(context.Context) error{succeed, succeed, succeed}, false, nil},
		{"failure first in order", []func(context.Context) error{refuse, waitThenWrap, succeed}, false, errRefused},
		{"failure last in order", []func(context.Context) error{waitThenWrap, waitThenWrap, refuse}, false, errRefused},
		{"caller cancels", []func(context.Context) error{waitThenWrap, waitThenWrap}, true, context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelCaller {
				cancel()
			}
			err := runAll(ctx, tc.steps)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("error %v, want %v", err, tc.want)
			case tc.want != nil && tc.want != context.Canceled && errors.Is(err, context.Canceled):
				t.Fatalf("error %v is a cancellation", err)
			}
		})
	}
}

// failingTransport refuses the connection for one path and holds every
// other request until it is cancelled, so the refusal is the first error
// and every other list ends cancelled.
type failingTransport struct{ path string }

func (f failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == f.path {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// TestTakeReturnsTheRefusal: whichever kind's list fails, the
// snapshot's error is that failure, not another list's cancellation.
func TestTakeReturnsTheRefusal(t *testing.T) {
	for _, path := range []string{"/api/v1/nodes", "/api/v1/pods", "/api/v1/namespaces"} {
		t.Run(path, func(t *testing.T) {
			client, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1", QPS: -1, Transport: failingTransport{path}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = Take(context.Background(), client, nil)
			var uerr *url.Error
			if !errors.Is(err, syscall.ECONNREFUSED) || !errors.As(err, &uerr) || errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want the refusal of %s", err, path)
			}
		})
	}
}

// realisticNode is a node as a kubelet reports it: images, volumes,
// conditions and managed fields.
func realisticNode(name string) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"topology.kubernetes.io/zone": "z1", "eks.amazonaws.com/nodegroup": "ng"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)}}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///z1/i-0" + name, Taints: []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Allocatable:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")},
			Capacity:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")},
			Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
			NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: "v1.34.1", OSImage: "Amazon Linux 2023"},
			VolumesInUse:    []corev1.UniqueVolumeName{"kubernetes.io/csi/ebs.csi.aws.com^vol-1"},
			VolumesAttached: []corev1.AttachedVolume{{Name: "kubernetes.io/csi/ebs.csi.aws.com^vol-1", DevicePath: "/dev/xvdba"}},
		},
	}
	for i := range 40 {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{fmt.Sprintf("registry.example.com/team/app-%d@sha256:%064d", i, i)}, SizeBytes: int64(i) << 20})
	}
	return n
}

// TestTakeRefusesATruncatedPage: a protobuf page that ends inside
// an item (a connection cut short) fails the snapshot; it never passes for
// a shorter list.
func TestTakeRefusesATruncatedPage(t *testing.T) {
	srv := &fakeListServer{cache: map[string][]byte{}}
	for i := range 20 {
		srv.pods = append(srv.pods, *realisticPod("ns", fmt.Sprintf("pod-%d", i), "n1", "web"))
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	client, err := kubernetes.NewForConfig(&rest.Config{Host: ts.URL, QPS: -1,
		ContentConfig: rest.ContentConfig{ContentType: k8sruntime.ContentTypeProtobuf, AcceptContentTypes: k8sruntime.ContentTypeProtobuf}})
	if err != nil {
		t.Fatal(err)
	}
	relistWait = time.Millisecond // read again at once
	t.Cleanup(func() { relistWait = time.Second })
	for _, cut := range []int{1, 100, 3000} {
		t.Run(fmt.Sprintf("%d bytes short", cut), func(t *testing.T) {
			srv.truncate.Store(int64(cut))
			snap, err := Take(context.Background(), client, nil)
			if err == nil || !strings.Contains(err.Error(), "cannot decode the pods list") {
				t.Fatalf("Take = %d pods, %v; want the pods list refused", len(snap.Pods), err)
			}
		})
	}
	// cut short now and then: read again, whole
	srv.truncate.Store(0)
	for _, cuts := range []int64{1, relists - 1} {
		t.Run(fmt.Sprintf("cut %d times, then whole", cuts), func(t *testing.T) {
			srv.cutNext.Store(cuts)
			var told []transport.RetryNotice
			ctx := transport.WithRetryReport(context.Background(), func(n transport.RetryNotice) { told = append(told, n) })
			snap, err := Take(ctx, client, nil)
			if err != nil || len(snap.Pods) != len(srv.pods) {
				t.Fatalf("Take = %d pods, %v; want all %d", len(snap.Pods), err, len(srv.pods))
			}
			if len(told) != int(cuts) || told[0].Target != "pods" {
				t.Errorf("relists told %v, want %d of pods", told, cuts)
			}
		})
	}
}

// TestTakeDecodesAsSlimmed: pods listed page by page from an API
// server, decoded item by item (protobuf: pods by decodePod, nodes with
// the wire filter) or whole (JSON), are the pods SlimPod makes of the
// originals, nothing more or less.
func TestTakeDecodesAsSlimmed(t *testing.T) {
	const total = listPageSize + 7 // two pages
	srv := &fakeListServer{cache: map[string][]byte{}}
	for i := range total {
		p := realisticPod("ns", fmt.Sprintf("pod-%d", i), "n1", "web")
		if i%2 == 0 {
			init := p.Spec.Containers[1]
			init.Name, init.RestartPolicy = "init", new(corev1.ContainerRestartPolicyAlways)
			init.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "5"}}}}
			p.Spec.InitContainers = []corev1.Container{init}
			p.Status.InitContainerStatuses = p.Status.ContainerStatuses
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		}
		if i%3 == 0 {
			// every kind of volume source the slimming keeps, and one it drops
			p.Spec.Volumes = append(p.Spec.Volumes,
				corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: new(resource.MustParse("1Gi"))}}},
				corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-0"}}},
				corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
					Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: new("gp3")}}}}},
				corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}})
			p.Status.StartTime, p.Status.Message, p.Status.Reason, p.Status.NominatedNodeName = &metav1.Time{Time: time.Unix(1700000000, 0)}, "m", "Evicted", "n2"
		}
		if i == 1 {
			// bigger than the reader's buffer: copied out, not decoded in place
			p.Annotations["example.com/big"] = strings.Repeat("x", 100<<10)
		}
		srv.pods = append(srv.pods, *p)
	}
	for i := range 3 {
		srv.nodes = append(srv.nodes, *realisticNode(fmt.Sprintf("n%d", i)))
	}
	// The controllers carry what their slimming drops: managed fields, a
	// last-applied annotation, pod templates, volume claim templates.
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: srv.pods[0].Spec}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": "web"},
			Annotations:     map[string]string{lastApplied: "{}", "deployment.kubernetes.io/revision": "3"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1"}},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "u1", Controller: new(true)}}}
	}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	srv.replicaSets = []appsv1.ReplicaSet{{ObjectMeta: meta("web-abc"), Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(3)), MinReadySeconds: 5, Selector: selector, Template: template},
		Status: appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 2}}}
	srv.deployments = []appsv1.Deployment{{ObjectMeta: meta("web"), Spec: appsv1.DeploymentSpec{Replicas: new(int32(3)), MinReadySeconds: 10, Selector: selector, Template: template},
		Status: appsv1.DeploymentStatus{Replicas: 3, ReadyReplicas: 3}}}
	srv.statefulSets = []appsv1.StatefulSet{{ObjectMeta: meta("db"), Spec: appsv1.StatefulSetSpec{Replicas: new(int32(2)), Selector: selector, Template: template, ServiceName: "db",
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: new("gp3")}}}},
		Status: appsv1.StatefulSetStatus{Replicas: 2}}}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	for _, contentType := range []string{k8sruntime.ContentTypeProtobuf, k8sruntime.ContentTypeJSON} {
		t.Run(contentType, func(t *testing.T) {
			client, err := kubernetes.NewForConfig(&rest.Config{Host: ts.URL, QPS: -1,
				ContentConfig: rest.ContentConfig{ContentType: contentType, AcceptContentTypes: contentType}})
			if err != nil {
				t.Fatal(err)
			}
			snap, err := Take(context.Background(), client, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Pods) != total || cap(snap.Pods) != total {
				t.Fatalf("%d pods in a slice of %d, want %d in one made for them (listSource.sizeHint)", len(snap.Pods), cap(snap.Pods), total)
			}
			assertSlimmed(t, "pod", snap.Pods, srv.pods, SlimPod)
			if len(snap.Nodes) != len(srv.nodes) {
				t.Fatalf("%d nodes, want %d", len(snap.Nodes), len(srv.nodes))
			}
			assertSlimmed(t, "node", snap.Nodes, srv.nodes, slimNode)
			assertSlimmed(t, "replicaset", snap.ReplicaSets, srv.replicaSets, slimReplicaSet)
			assertSlimmed(t, "deployment", snap.Deployments, srv.deployments, slimDeployment)
			assertSlimmed(t, "statefulset", snap.StatefulSets, srv.statefulSets, slimStatefulSet)
		})
	}
}

// assertSlimmed fails unless each object decoded is its original as slim
// leaves it (the kind and API version aside).
func assertSlimmed[T any, PT interface {
	*T
	DeepCopy() *T
	GetObjectKind() schema.ObjectKind
}](t *testing.T, kind string, got, originals []T, slim func(*T)) {
	t.Helper()
	for i := range got {
		want := PT(&originals[i]).DeepCopy()
		slim(want)
		PT(want).GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		g := got[i]
		PT(&g).GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		if !equality.Semantic.DeepEqual(&g, want) {
			t.Fatalf("%s %d differs from the slimmed original:\n got %+v\nwant %+v", kind, i, g, *want)
		}
	}
}

// TestFetchPageRefusesMalformedPages: a page that ends early, does not
// decode, or holds no list fails with an error; fields of the list it
// does not know are skipped.
func TestFetchPageRefusesMalformedPages(t *testing.T) {
	field := func(b []byte, num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
	}
	envelope := func(list []byte) []byte { return field(bytes.Clone(protobufPrefix), 2, list) }
	truncated := []byte{0x0a, 0x05, 'a'} // a field 1 of 5 bytes with one
	node := func(name string) []byte {
		b, err := (&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name  string
		body  []byte
		wire  *wireFilter
		want  string // in the error; "" for none
		nodes int    // decoded, when there is no error
	}{
		{"empty body", nil, nil, "'Kind' is missing", 0},
		{"JSON that does not decode", []byte(`{"kind":"NodeList",`), nil, "unexpected end", 0},
		{"JSON of an object, not a list", []byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"a"}}`), nil, "must be a list", 0},
		{"protobuf envelope without a list", field(bytes.Clone(protobufPrefix), 1, nil), nil, "no list in the envelope", 0},
		{"protobuf list meta that does not decode", envelope(field(nil, 1, truncated)), nil, "cannot decode the nodes list", 0},
		{"protobuf item that does not decode", envelope(field(nil, 2, truncated)), nil, "cannot decode the nodes list", 0},
		{"protobuf item the wire filter cannot read", envelope(field(nil, 2, truncated)), nodeWire, "cannot decode the nodes list", 0},
		{"protobuf list with a field it skips", envelope(field(field(nil, 3, []byte("x")), 2, node("a"))), nodeWire, "", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(c.body) }))
			t.Cleanup(ts.Close)
			client, err := kubernetes.NewForConfig(&rest.Config{Host: ts.URL, QPS: -1})
			if err != nil {
				t.Fatal(err)
			}
			rc := client.CoreV1().RESTClient().(*rest.RESTClient)
			var sl pageSlot[corev1.Node]
			err = fetchPage[corev1.Node](context.Background(), rc, "nodes", metav1.ListOptions{}, &sl, c.wire, nil, func(string) {})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("err = %v, want none", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
			if err == nil && len(sl.items) != c.nodes {
				t.Errorf("%d nodes, want %d", len(sl.items), c.nodes)
			}
		})
	}
}

// TestListIntoRefuses: a list whose source fails, or whose decoder is for
// another type, fails with an error naming the list.
func TestListIntoRefuses(t *testing.T) {
	failing := fake.NewClientset()
	failing.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("no RBAC"))
	})
	typed := func(c kubernetes.Interface) listPage {
		return func(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) {
			return c.CoreV1().Nodes().List(ctx, o)
		}
	}
	cases := []struct {
		name string
		src  listSource
		want string
	}{
		{"the list fails", listSource{typed: typed(failing)}, `listing nodes: nodes is forbidden`},
		{"a decoder of pods", listSource{typed: typed(fake.NewClientset()), newDecoder: func() func([]byte, *corev1.Pod) error { return nil }},
			"listing nodes: a func() func([]uint8, *v1.Pod) error cannot decode a *v1.Node"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var nodes []corev1.Node
			err := listInto(context.Background(), "nodes", &nodes, nil, c.src)
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}
