package scenario

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"math/big"
	"mime"
	"net"
	"net/http"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/admission"
	admissioninit "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authentication/user"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	api "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	"k8s.io/kubernetes/pkg/controller"
	deploymentutil "k8s.io/kubernetes/pkg/controller/deployment/util"
	"k8s.io/kubernetes/pkg/features"
	deploymentstore "k8s.io/kubernetes/pkg/registry/apps/deployment"
	replicasetstore "k8s.io/kubernetes/pkg/registry/apps/replicaset"
	namespacestore "k8s.io/kubernetes/pkg/registry/core/namespace"
	nodestore "k8s.io/kubernetes/pkg/registry/core/node"
	podstore "k8s.io/kubernetes/pkg/registry/core/pod"
	servicestore "k8s.io/kubernetes/pkg/registry/core/service"
	pdbstore "k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
	labelsutil "k8s.io/kubernetes/pkg/util/labels"
	"k8s.io/kubernetes/plugin/pkg/admission/defaulttolerationseconds"
	"k8s.io/kubernetes/plugin/pkg/admission/nodetaint"
	"k8s.io/kubernetes/plugin/pkg/admission/podtopologylabels"
	"k8s.io/kubernetes/plugin/pkg/admission/priority"
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Replay is a read-only API server on 127.0.0.1 (no authentication) that
// serves the lists of a scenario's objects as
// kube-apiserver serves them from its watch cache: paginated with continue
// tokens, remainingItemCount and field and label selectors, in protobuf or
// JSON as the client asks, gzipped above 128 KiB when the client accepts
// it. It measures a client at a scale the simulated control plane cannot
// hold: it builds no etcd, no watch cache, no controllers, and each page it
// serves is encoded (and compressed) once, so that its own cost stays small
// next to the client's on the same machine. Anything but get and list of
// the resources it knows answers NotFound or MethodNotAllowed, in the
// format the client asked for.
type Replay struct {
	URL    string // http://127.0.0.1:PORT, or https:// with ReplayOptions.TLS
	CAData []byte // with ReplayOptions.TLS, the PEM certificate the server's is checked against
	srv    *http.Server
}

// ReplayOptions are how a Replay serves.
type ReplayOptions struct {
	// RequestLog gets a line per request; may be nil.
	RequestLog io.Writer
	// TLS serves https (HTTP/2) with a certificate of its own, as
	// kube-apiserver does; else plain http. A client's costs differ
	// between the two beyond TLS itself: over plain http client-go uses
	// Go's default transport (HTTP/1.1), which asks for gzip even when the
	// client's config disables compression.
	TLS bool
}

// Close stops serving.
func (r *Replay) Close() error { return r.srv.Close() }

// StartPlanScaleReplay builds the objects "simcluster scenario plan-scale"
// would leave on a cluster of "simcluster up --no-node-lifecycle" for p,
// through kube-apiserver's own write path (see apiWriter), and serves them
// until Close; p.Progress, which may be nil, gets a line per build step.
func StartPlanScaleReplay(p PlanScale, opts ReplayOptions) (*Replay, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	objects, err := buildPlanScaleReplay(p, false)
	if err != nil {
		return nil, err
	}
	requestLog := opts.RequestLog
	if requestLog == nil {
		requestLog = io.Discard
	}
	h := newReplayHandler(objects, log.New(requestLog, "", log.Ltime|log.Lmicroseconds))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Replay{URL: "http://" + ln.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}}
	if !opts.TLS {
		go func() { _ = r.srv.Serve(ln) }()
		return r, nil
	}
	cert, caData, err := selfSignedCertificate()
	if err != nil {
		ln.Close()
		return nil, err
	}
	r.URL, r.CAData = "https://"+ln.Addr().String(), caData
	r.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	go func() { _ = r.srv.ServeTLS(ln, "", "") }()
	return r, nil
}

// selfSignedCertificate is a serving certificate for 127.0.0.1 of the kind
// the simulated cluster's API server has (ECDSA P-256), and its PEM.
func selfSignedCertificate() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "replay"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// Field managers of the writes. The simulated cluster runs the API server
// and the controllers in simcluster's process, whose user agent names the
// writes of all three as it names the builder's: their managedFields
// entries merge (one per operation and subresource). On a real cluster the
// controllers' would be kube-controller-manager's, the API server's
// kube-apiserver's.
const (
	builderManager    = "simcluster"
	controllerManager = "simcluster"
	apiserverManager  = "simcluster"
)

// replayObjects is what the API server holds: by resource, the objects as
// they are stored, in no particular order, and the resource version of the
// last write.
type replayObjects struct {
	byResource map[schema.GroupVersionResource][]storedItem
	rv         int64
}

// storedItem is an object marshalled (protobuf, without the envelope of
// kind and version): a fraction of the memory of the object itself, and
// decoded only when a page is first encoded.
type storedItem struct {
	namespace, name string
	data            []byte
}

func stow(obj kruntime.Object) (storedItem, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return storedItem{}, err
	}
	marshaler, ok := obj.(interface{ Marshal() ([]byte, error) })
	if !ok {
		return storedItem{}, fmt.Errorf("%T does not marshal", obj)
	}
	data, err := marshaler.Marshal()
	return storedItem{namespace: m.GetNamespace(), name: m.GetName(), data: data}, err
}

func stowAll(objs []kruntime.Object) ([]storedItem, error) {
	items := make([]storedItem, len(objs))
	for i, o := range objs {
		var err error
		if items[i], err = stow(o); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// buildPlanScaleReplay writes p's objects, as the builder (planscale.go)
// and the controllers it relies on write them, through an apiWriter.
// With exact, the field manager runs on every write as a whole (slower).
func buildPlanScaleReplay(p PlanScale, exact bool) (replayObjects, error) {
	logf := func(format string, args ...any) {
		if p.Progress != nil {
			fmt.Fprintf(p.Progress, "[%s] replay: %s\n", time.Now().UTC().Format(time.TimeOnly), fmt.Sprintf(format, args...))
		}
	}
	w, err := newAPIWriter()
	if err != nil {
		return replayObjects{}, err
	}
	defer w.close()
	w.exact = exact
	// Every object is written at the same moment: timestamps are not what
	// the replay is for.
	at := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	ttl := strconv.Itoa(nodeTTLSeconds(p.Nodes))
	start := time.Now()

	// The API server's own objects: the system namespaces and the
	// kubernetes Service.
	var namespaces []kruntime.Object
	for _, name := range []string{metav1.NamespaceDefault, "kube-node-lease", metav1.NamespacePublic, metav1.NamespaceSystem} {
		ns, err := w.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, apiserverManager, at, createOptions{})
		if err != nil {
			return replayObjects{}, err
		}
		namespaces = append(namespaces, ns)
	}
	kubernetesService, err := w.create(&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.1", SessionAffinity: corev1.ServiceAffinityNone,
			IPFamilyPolicy: new(corev1.IPFamilyPolicySingleStack),
			Ports:          []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(6443)}}},
	}, apiserverManager, at, createOptions{allocate: func(obj kruntime.Object) {
		// the service storage allocates the address before validation
		svc := obj.(*api.Service)
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		svc.Spec.IPFamilies = []api.IPFamily{api.IPv4Protocol}
	}})
	if err != nil {
		return replayObjects{}, err
	}

	nodes := make([]kruntime.Object, p.Nodes)
	if err := parallelDo(p.Nodes, func(i int) error {
		stored, err := w.create(p.node(i, at), builderManager, at, createOptions{})
		if err != nil {
			return err
		}
		// the builder takes off the taint TaintNodesByCondition puts on
		// new nodes, with the merge patch {"spec":{"taints":null}}
		if n := stored.(*corev1.Node); len(n.Spec.Taints) > 0 {
			untainted := n.DeepCopy()
			untainted.Spec.Taints = nil
			if stored, err = w.update(n, untainted, "", builderManager, at); err != nil {
				return err
			}
		}
		// the TTL controller's annotation
		annotated := stored.(*corev1.Node).DeepCopy()
		metav1.SetMetaDataAnnotation(&annotated.ObjectMeta, "node.alpha.kubernetes.io/ttl", ttl)
		nodes[i], err = w.update(stored, annotated, "", controllerManager, at)
		return err
	}); err != nil {
		return replayObjects{}, fmt.Errorf("replay nodes: %w", err)
	}
	logf("%d nodes in %s", len(nodes), time.Since(start).Round(time.Millisecond))

	// Pods are admitted knowing the nodes (PodTopologyLabels copies their
	// zone and region) and the default service account of each namespace.
	admissionObjects := slices.Clone(nodes)
	for i := range p.namespaceCount() {
		ns, err := w.create(p.namespace(i), builderManager, at, createOptions{})
		if err != nil {
			return replayObjects{}, err
		}
		namespaces = append(namespaces, ns)
		admissionObjects = append(admissionObjects, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns.(*corev1.Namespace).Name}})
	}
	if err := w.admitWith(admissionObjects...); err != nil {
		return replayObjects{}, err
	}

	n := p.deploymentCount()
	deployments, replicaSets, pdbs := make([]kruntime.Object, n), make([]kruntime.Object, n), make([]kruntime.Object, n)
	if err := parallelDo(n, func(i int) (err error) {
		if deployments[i], err = w.create(p.deployment(i), builderManager, at, createOptions{}); err != nil {
			return err
		}
		if replicaSets[i], err = w.create(newReplicaSet(deployments[i].(*appsv1.Deployment)), controllerManager, at, createOptions{}); err != nil {
			return err
		}
		pdbs[i], err = w.create(p.pdb(i), builderManager, at, createOptions{})
		return err
	}); err != nil {
		return replayObjects{}, fmt.Errorf("replay deployments: %w", err)
	}
	logf("%d Deployments, ReplicaSets and PDBs in %s", n, time.Since(start).Round(time.Millisecond))

	// stowed as they are made: the pods of 5,000 nodes would hold gigabytes
	// as objects
	pods := make([]storedItem, p.Nodes*p.PodsPerNode)
	// The pods of a Deployment differ only in their name and node, values
	// the field manager keys nothing on: their creates' managedFields are
	// the same (TestReplayManagedFieldsAreTheFieldManagers).
	podFields := make([]managedFieldsMemo, n)
	var done atomic.Int64
	if err := parallelDo(len(pods), func(g int) error {
		d := g / p.Replicas
		created, err := w.create(p.pod(g, replicaSets[d].(*appsv1.ReplicaSet)), builderManager, at, createOptions{fields: w.memo(&podFields[d])})
		if err != nil {
			return err
		}
		running := created.(*corev1.Pod).DeepCopy()
		running.Status = p.podStatus(g, created.(*corev1.Pod), at)
		stored, err := w.update(created, running, "status", builderManager, at)
		if err != nil {
			return err
		}
		if pods[g], err = stow(stored); err != nil {
			return err
		}
		if count := done.Add(1); count%20000 == 0 {
			logf("%d/%d pods in %s", count, len(pods), time.Since(start).Round(time.Millisecond))
		}
		return nil
	}); err != nil {
		return replayObjects{}, fmt.Errorf("replay pods: %w", err)
	}
	logf("%d pods in %s", len(pods), time.Since(start).Round(time.Millisecond))

	// The controllers' status updates once every pod is Ready.
	if err := parallelDo(n, func(i int) (err error) {
		rs := replicaSets[i].(*appsv1.ReplicaSet)
		counted := rs.DeepCopy()
		counted.Status = replicaSetStatus(rs)
		if replicaSets[i], err = w.update(rs, counted, "status", controllerManager, at); err != nil {
			return err
		}
		d := deployments[i].(*appsv1.Deployment)
		rolledOut := d.DeepCopy()
		deploymentutil.SetDeploymentRevision(rolledOut, replicaSets[i].(*appsv1.ReplicaSet).Annotations[deploymentutil.RevisionAnnotation])
		rolledOut.Status = deploymentStatus(d, replicaSets[i].(*appsv1.ReplicaSet), at)
		if deployments[i], err = w.update(d, rolledOut, "status", controllerManager, at); err != nil {
			return err
		}
		pdb := pdbs[i].(*policyv1.PodDisruptionBudget)
		pdbs[i], err = w.update(pdb, pdbCounted(pdb, *d.Spec.Replicas, at), "status", controllerManager, at)
		return err
	}); err != nil {
		return replayObjects{}, fmt.Errorf("replay statuses: %w", err)
	}
	logf("built in %s", time.Since(start).Round(time.Millisecond))

	core, apps, policy := corev1.SchemeGroupVersion, appsv1.SchemeGroupVersion, policyv1.SchemeGroupVersion
	objects := replayObjects{rv: w.rv.Load(), byResource: map[schema.GroupVersionResource][]storedItem{core.WithResource("pods"): pods}}
	for gvr, objs := range map[schema.GroupVersionResource][]kruntime.Object{
		core.WithResource("namespaces"):             namespaces,
		core.WithResource("services"):               {kubernetesService},
		core.WithResource("nodes"):                  nodes,
		apps.WithResource("deployments"):            deployments,
		apps.WithResource("replicasets"):            replicaSets,
		policy.WithResource("poddisruptionbudgets"): pdbs,
	} {
		if objects.byResource[gvr], err = stowAll(objs); err != nil {
			return replayObjects{}, err
		}
	}
	return objects, nil
}

// parallelDo calls fn(i) for i in [0, n) on a goroutine per CPU; the first
// error stops it.
func parallelDo(n int, fn func(int) error) error {
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for failed.Load() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		return *err
	}
	return nil
}

// nodeTTLSeconds is the node.alpha.kubernetes.io/ttl the TTL controller
// (pkg/controller/ttl) settles on for n nodes: it steps up through these
// boundaries as the nodes are added.
func nodeTTLSeconds(n int) int {
	switch {
	case n <= 100:
		return 0
	case n <= 500:
		return 15
	case n <= 1000:
		return 30
	case n <= 2000:
		return 60
	}
	return 300
}

// newReplicaSet is the ReplicaSet the deployment controller creates for d,
// a new Deployment, with its functions (pkg/controller/deployment,
// getNewReplicaSet).
func newReplicaSet(d *appsv1.Deployment) *appsv1.ReplicaSet {
	template := *d.Spec.Template.DeepCopy()
	hash := controller.ComputeHash(&template, d.Status.CollisionCount)
	template.Labels = labelsutil.CloneAndAddLabel(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        new(int32),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        labelsutil.CloneSelectorAndAddLabel(d.Spec.Selector, appsv1.DefaultDeploymentUniqueLabelKey, hash),
			Template:        template,
		},
	}
	// a new Deployment: no errors, its first revision; 2000 is the
	// controller's maxRevHistoryLengthInChars
	*rs.Spec.Replicas, _ = deploymentutil.NewRSNewReplicas(d, []*appsv1.ReplicaSet{rs}, rs)
	deploymentutil.SetNewReplicaSetAnnotations(context.Background(), d, rs, "1", false, 2000)
	return rs
}

// replicaSetStatus is rs's status as the replicaset controller reports it
// once all its pods are Ready (pkg/controller/replicaset, calculateStatus).
func replicaSetStatus(rs *appsv1.ReplicaSet) appsv1.ReplicaSetStatus {
	st := appsv1.ReplicaSetStatus{Replicas: *rs.Spec.Replicas, FullyLabeledReplicas: *rs.Spec.Replicas, ReadyReplicas: *rs.Spec.Replicas,
		AvailableReplicas: *rs.Spec.Replicas, ObservedGeneration: rs.Generation}
	if utilfeature.DefaultFeatureGate.Enabled(features.DeploymentReplicaSetTerminatingReplicas) {
		st.TerminatingReplicas = new(int32(0))
	}
	return st
}

// deploymentStatus is d's status as the deployment controller reports it
// once rs, its only ReplicaSet, is available (pkg/controller/deployment,
// calculateStatus and syncRolloutStatus).
func deploymentStatus(d *appsv1.Deployment, rs *appsv1.ReplicaSet, at metav1.Time) appsv1.DeploymentStatus {
	all := []*appsv1.ReplicaSet{rs}
	st := appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation,
		Replicas:           deploymentutil.GetActualReplicaCountForReplicaSets(all),
		UpdatedReplicas:    deploymentutil.GetActualReplicaCountForReplicaSets(all),
		ReadyReplicas:      deploymentutil.GetReadyReplicaCountForReplicaSets(all),
		AvailableReplicas:  deploymentutil.GetAvailableReplicaCountForReplicaSets(all),
	}
	if utilfeature.DefaultFeatureGate.Enabled(features.DeploymentReplicaSetTerminatingReplicas) {
		st.TerminatingReplicas = deploymentutil.GetTerminatingReplicaCountForReplicaSets(all)
	}
	// In the order the controller leaves them: Available turns True after
	// Progressing was set, and Progressing is set once more at the end.
	for _, c := range []*appsv1.DeploymentCondition{
		deploymentutil.NewDeploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, deploymentutil.MinimumReplicasAvailable, "Deployment has minimum availability."),
		deploymentutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, deploymentutil.NewRSAvailableReason, fmt.Sprintf("ReplicaSet %q has successfully progressed.", rs.Name)),
	} {
		c.LastUpdateTime, c.LastTransitionTime = at, at
		deploymentutil.SetDeploymentCondition(&st, *c)
	}
	return st
}

// pdbCounted is pdb with the status the disruption controller reports once
// it has counted every pod of its Deployment of replicas pods Ready
// (pkg/controller/disruption, updatePdbStatus).
func pdbCounted(pdb *policyv1.PodDisruptionBudget, replicas int32, at metav1.Time) *policyv1.PodDisruptionBudget {
	expected := replicas
	desired := expected
	if pdb.Spec.MaxUnavailable != nil {
		maxUnavailable, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
		desired = max(0, expected-int32(maxUnavailable))
	} else if pdb.Spec.MinAvailable != nil {
		minAvailable, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
		desired = int32(minAvailable)
	}
	counted := pdb.DeepCopy()
	counted.Status = policyv1.PodDisruptionBudgetStatus{CurrentHealthy: replicas, DesiredHealthy: desired, ExpectedPods: expected,
		DisruptionsAllowed: max(0, replicas-desired), ObservedGeneration: pdb.Generation}
	pdbhelper.UpdateDisruptionAllowedCondition(counted)
	for i := range counted.Status.Conditions {
		counted.Status.Conditions[i].LastTransitionTime = at
	}
	return counted
}

// replayUID is a uid that depends only on the object: runs of the replay
// serve the same uids.
func replayUID(kind schema.GroupKind, namespace, name string) types.UID {
	h := sha256.Sum256([]byte(kind.String() + "/" + namespace + "/" + name))
	h[6] = h[6]&0x0f | 0x40 // a version 4 UUID, as the API server makes
	h[8] = h[8]&0x3f | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16]))
}

// apiWriter runs writes through kube-apiserver's own code, so that the
// objects come out as the API server stores them: the request decoded from
// protobuf as a client sends it (the API's defaults, conversion to the
// internal version), managedFields from the API server's field manager,
// the default mutating admission plugins that change pods and nodes, and
// the registry strategies (PrepareForCreate or PrepareForUpdate,
// validation). What the store adds is done here too: uid and
// creationTimestamp (deterministic), resourceVersion (one per write, as
// etcd's revision).
type apiWriter struct {
	kinds  map[schema.GroupKind]*writeKind
	admit  []admission.MutationInterface
	stop   chan struct{}
	ifaces admission.ObjectInterfaces
	rv     atomic.Int64
	// exact has the field manager run on every write as a whole, as the
	// API server does, not once per alike creates and on status updates
	// without the spec
	exact bool
}

type writeKind struct {
	resource schema.GroupVersionResource
	kind     schema.GroupVersionKind
	strategy rest.RESTCreateUpdateStrategy
	status   rest.RESTUpdateStrategy
	managers map[string]*managedfields.FieldManager // by subresource
	encoder  kruntime.Encoder                       // the request as a client sends it
	decoder  kruntime.Decoder                       // and as the API server reads it
}

// writeUser is who the admission plugins see write.
var writeUser = &user.DefaultInfo{Name: "system:admin", Groups: []string{"system:masters"}}

func newAPIWriter() (*apiWriter, error) {
	w := &apiWriter{kinds: map[schema.GroupKind]*writeKind{}, ifaces: admission.NewObjectInterfacesFromScheme(legacyscheme.Scheme)}
	typeConverter := applyconfigurations.NewTypeConverter(clientscheme.Scheme)
	clientProto, ok := kruntime.SerializerInfoForMediaType(clientscheme.Codecs.SupportedMediaTypes(), kruntime.ContentTypeProtobuf)
	if !ok {
		return nil, errors.New("client-go has no protobuf serializer")
	}
	serverProto, ok := kruntime.SerializerInfoForMediaType(legacyscheme.Codecs.SupportedMediaTypes(), kruntime.ContentTypeProtobuf)
	if !ok {
		return nil, errors.New("the API server scheme has no protobuf serializer")
	}
	core, apps, policy := corev1.SchemeGroupVersion, appsv1.SchemeGroupVersion, policyv1.SchemeGroupVersion
	for _, k := range []struct {
		resource schema.GroupVersionResource
		kind     string
		strategy rest.RESTCreateUpdateStrategy
		status   rest.RESTUpdateStrategy
	}{
		{core.WithResource("namespaces"), "Namespace", namespacestore.Strategy, namespacestore.StatusStrategy},
		{core.WithResource("services"), "Service", servicestore.Strategy, nil},
		{core.WithResource("nodes"), "Node", nodestore.Strategy, nodestore.StatusStrategy},
		{core.WithResource("pods"), "Pod", podstore.Strategy, podstore.StatusStrategy},
		{apps.WithResource("deployments"), "Deployment", deploymentstore.Strategy, deploymentstore.StatusStrategy},
		{apps.WithResource("replicasets"), "ReplicaSet", replicasetstore.Strategy, replicasetstore.StatusStrategy},
		{policy.WithResource("poddisruptionbudgets"), "PodDisruptionBudget", pdbstore.Strategy, pdbstore.StatusStrategy},
	} {
		gvk := k.resource.GroupVersion().WithKind(k.kind)
		internal := schema.GroupVersion{Group: gvk.Group, Version: kruntime.APIVersionInternal}
		wk := &writeKind{resource: k.resource, kind: gvk, strategy: k.strategy, status: k.status, managers: map[string]*managedfields.FieldManager{},
			encoder: clientscheme.Codecs.EncoderForVersion(clientProto.Serializer, gvk.GroupVersion()),
			decoder: legacyscheme.Codecs.DecoderToVersion(serverProto.Serializer, internal)}
		// as the API server's installer makes them (endpoints/installer.go)
		for sub, strategy := range map[string]rest.RESTUpdateStrategy{"": k.strategy, "status": k.status} {
			if strategy == nil {
				continue
			}
			var reset map[fieldpath.APIVersion]fieldpath.Filter
			if s, ok := strategy.(rest.ResetFieldsStrategy); ok {
				reset = fieldpath.NewExcludeFilterSetMap(s.GetResetFields())
			}
			fm, err := managedfields.NewDefaultFieldManager(typeConverter, kruntime.UnsafeObjectConvertor(legacyscheme.Scheme), legacyscheme.Scheme,
				legacyscheme.Scheme, gvk, internal, sub, reset)
			if err != nil {
				return nil, fmt.Errorf("field manager of %s: %w", k.resource, err)
			}
			wk.managers[sub] = fm
		}
		w.kinds[gvk.GroupKind()] = wk
	}
	return w, w.admitWith()
}

// admitWith (re)makes the admission plugins, their informers holding
// objects: the nodes and service accounts pods are admitted against.
func (w *apiWriter) admitWith(objects ...kruntime.Object) error {
	w.close()
	w.stop = make(chan struct{})
	client := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	plugins := admission.NewPlugins()
	serviceaccount.Register(plugins)
	nodetaint.Register(plugins)
	priority.Register(plugins)
	defaulttolerationseconds.Register(plugins)
	podtopologylabels.Register(plugins)
	initializer := admissioninit.New(client, nil, factory, nil, utilfeature.DefaultFeatureGate, nil, w.stop, nil)
	w.admit = nil
	// the default mutating plugins that change these objects, in the API
	// server's order (pkg/kubeapiserver/options/plugins.go)
	for _, name := range []string{serviceaccount.PluginName, nodetaint.PluginName, priority.PluginName, defaulttolerationseconds.PluginName, podtopologylabels.PluginName} {
		plugin, err := plugins.InitPlugin(name, nil, initializer)
		if err != nil {
			return fmt.Errorf("admission plugin %s: %w", name, err)
		}
		mutating, ok := plugin.(admission.MutationInterface)
		if !ok {
			return fmt.Errorf("admission plugin %s does not mutate", name)
		}
		w.admit = append(w.admit, mutating)
	}
	factory.Start(w.stop)
	for informer, synced := range factory.WaitForCacheSync(w.stop) {
		if !synced {
			return fmt.Errorf("admission informer of %s did not sync", informer)
		}
	}
	return nil
}

func (w *apiWriter) close() {
	if w.stop != nil {
		close(w.stop)
		w.stop = nil
	}
}

func (w *apiWriter) kindOf(obj kruntime.Object) (*writeKind, error) {
	gvks, _, err := clientscheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return nil, err
	}
	k, ok := w.kinds[gvks[0].GroupKind()]
	if !ok {
		return nil, fmt.Errorf("no write path for %s", gvks[0])
	}
	return k, nil
}

// decode is obj as the API server reads it from a request.
func (k *writeKind) decode(obj kruntime.Object) (kruntime.Object, metav1.Object, error) {
	data, err := kruntime.Encode(k.encoder, obj)
	if err != nil {
		return nil, nil, err
	}
	in, _, err := k.decoder.Decode(data, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	m, err := meta.Accessor(in)
	return in, m, err
}

func (k *writeKind) context(verb string, m metav1.Object, subresource string) context.Context {
	ctx := genericrequest.WithNamespace(context.Background(), m.GetNamespace())
	ctx = genericrequest.WithUser(ctx, writeUser)
	prefix := "apis"
	if k.resource.Group == "" {
		prefix = "api"
	}
	return genericrequest.WithRequestInfo(ctx, &genericrequest.RequestInfo{IsResourceRequest: true, Verb: verb,
		APIPrefix: prefix, APIGroup: k.resource.Group, APIVersion: k.resource.Version, Namespace: m.GetNamespace(),
		Resource: k.resource.Resource, Subresource: subresource, Name: m.GetName()})
}

func (w *apiWriter) mutate(ctx context.Context, attrs admission.Attributes) error {
	for _, plugin := range w.admit {
		if plugin.Handles(attrs.GetOperation()) {
			if err := plugin.Admit(ctx, attrs, w.ifaces); err != nil {
				return err
			}
		}
	}
	return nil
}

type createOptions struct {
	// allocate, when not nil, does to the internal object what the
	// resource's storage does before validation
	allocate func(kruntime.Object)
	// fields, when not nil, holds the managedFields of the creates that
	// differ from this one only in values the field manager keys nothing
	// on: the field manager, the most costly part of a write, runs once
	// for them all
	fields *managedFieldsMemo
}

// managedFieldsMemo is the managedFields of a set of creates.
type managedFieldsMemo struct {
	once    sync.Once
	entries []metav1.ManagedFieldsEntry
	err     error
}

// memo is m, or nil when the writer computes every write's managedFields.
func (w *apiWriter) memo(m *managedFieldsMemo) *managedFieldsMemo {
	if w.exact {
		return nil
	}
	return m
}

// create is what a create of obj by manager stores, as of at.
func (w *apiWriter) create(obj kruntime.Object, manager string, at metav1.Time, opts createOptions) (kruntime.Object, error) {
	k, err := w.kindOf(obj)
	if err != nil {
		return nil, err
	}
	in, m, err := k.decode(obj)
	if err != nil {
		return nil, err
	}
	// the order of endpoints/handlers/create.go and registry/generic's
	// Store.Create
	rest.WipeObjectMetaSystemFields(m)
	ctx := k.context("create", m, "")
	live, err := legacyscheme.Scheme.New(k.kind)
	if err != nil {
		return nil, err
	}
	if opts.fields == nil {
		in, err = k.managers[""].Update(live, in, manager)
	} else {
		computed := false
		opts.fields.once.Do(func() {
			computed = true
			if in, opts.fields.err = k.managers[""].Update(live, in, manager); opts.fields.err != nil {
				return
			}
			managed, err := meta.Accessor(in)
			if err != nil {
				opts.fields.err = err
				return
			}
			opts.fields.entries = managed.GetManagedFields()
		})
		if err = opts.fields.err; !computed && err == nil {
			m.SetManagedFields(slices.Clone(opts.fields.entries))
		}
	}
	if err != nil {
		return nil, err
	}
	if m, err = meta.Accessor(in); err != nil {
		return nil, err
	}
	attrs := admission.NewAttributesRecord(in, nil, k.kind, m.GetNamespace(), m.GetName(), k.resource, "", admission.Create,
		&metav1.CreateOptions{}, false, writeUser)
	if err := w.mutate(ctx, attrs); err != nil {
		return nil, fmt.Errorf("admit %s %s: %w", k.kind.Kind, m.GetName(), err)
	}
	m.SetUID(replayUID(k.kind.GroupKind(), m.GetNamespace(), m.GetName()))
	m.SetCreationTimestamp(at)
	if opts.allocate != nil {
		opts.allocate(in)
	}
	if err := rest.BeforeCreate(k.strategy, ctx, in); err != nil {
		return nil, err
	}
	return w.stored(k, in, manager, "", at)
}

// update is what an update of old to obj by manager stores, on subresource
// ("" or "status"), as of at.
func (w *apiWriter) update(old, obj kruntime.Object, subresource, manager string, at metav1.Time) (kruntime.Object, error) {
	k, err := w.kindOf(obj)
	if err != nil {
		return nil, err
	}
	// old as the store holds it: already decoded and defaulted
	oldIn, err := legacyscheme.Scheme.ConvertToVersion(old, schema.GroupVersion{Group: k.kind.Group, Version: kruntime.APIVersionInternal})
	if err != nil {
		return nil, err
	}
	in, m, err := k.decode(obj)
	if err != nil {
		return nil, err
	}
	ctx := k.context("update", m, subresource)
	if in, err = w.manage(k, subresource, oldIn, in, m, manager); err != nil {
		return nil, err
	}
	if m, err = meta.Accessor(in); err != nil {
		return nil, err
	}
	attrs := admission.NewAttributesRecord(in, oldIn, k.kind, m.GetNamespace(), m.GetName(), k.resource, subresource, admission.Update,
		&metav1.UpdateOptions{}, false, writeUser)
	if err := w.mutate(ctx, attrs); err != nil {
		return nil, fmt.Errorf("admit %s %s: %w", k.kind.Kind, m.GetName(), err)
	}
	strategy := rest.RESTUpdateStrategy(k.strategy)
	if subresource == "status" {
		strategy = k.status
	}
	if err := rest.BeforeUpdate(strategy, ctx, in, oldIn); err != nil {
		return nil, err
	}
	return w.stored(k, in, manager, subresource, at)
}

// manage is in, the update of old, with the managedFields the field
// manager gives it. On a status update that changes nothing but the
// status, the field manager is shown old and in without their spec and
// old without the other writers' entries, at a fraction of the cost (a
// pod's spec and the entry of its create are most of it), for the same
// outcome: the status strategy resets the spec, so the field manager
// finds the same fields changed without it; and those are none of the
// other writers', whose entries it would leave as they are
// (structured-merge-diff's Updater.update changes another manager's set
// only where it intersects the fields changed).
func (w *apiWriter) manage(k *writeKind, subresource string, old, in kruntime.Object, m metav1.Object, manager string) (kruntime.Object, error) {
	fm := k.managers[subresource]
	oldMeta, err := meta.Accessor(old)
	if err != nil {
		return nil, err
	}
	if w.exact || subresource != "status" || !onlyStatusChanged(oldMeta, m) {
		return fm.Update(old, in, manager)
	}
	var own, others []metav1.ManagedFieldsEntry
	for _, e := range oldMeta.GetManagedFields() {
		if e.Manager == manager && e.Subresource == subresource && e.Operation == metav1.ManagedFieldsOperationUpdate {
			own = append(own, e)
		} else {
			others = append(others, e)
		}
	}
	lite, liteOld := withoutSpec(in), withoutSpec(old)
	liteOldMeta, err := meta.Accessor(liteOld)
	if err != nil {
		return nil, err
	}
	liteOldMeta.SetManagedFields(own)
	if len(own) == 0 {
		// without a uid: the field manager does not begin tracking an
		// object it finds with no managedFields unless it is new
		// (skipNonAppliedManager)
		liteOldMeta.SetUID("")
	}
	managed, err := fm.Update(liteOld, lite, manager)
	if err != nil {
		return nil, err
	}
	mm, err := meta.Accessor(managed)
	if err != nil {
		return nil, err
	}
	entries := append(others, mm.GetManagedFields()...)
	// in the field manager's order (managedfields/internal, sortEncodedManagedFields)
	slices.SortStableFunc(entries, func(p, q metav1.ManagedFieldsEntry) int {
		var pt, qt int64
		if p.Time != nil {
			pt = p.Time.Unix()
		}
		if q.Time != nil {
			qt = q.Time.Unix()
		}
		return cmp.Or(cmp.Compare(p.Operation, q.Operation), cmp.Compare(pt, qt), cmp.Compare(p.Manager, q.Manager),
			cmp.Compare(p.APIVersion, q.APIVersion), cmp.Compare(p.Subresource, q.Subresource))
	})
	m.SetManagedFields(entries)
	return in, nil
}

// onlyStatusChanged says whether an update from old leaves the metadata
// of m as it was (the status strategy resets the spec).
func onlyStatusChanged(old, m metav1.Object) bool {
	return old.GetName() == m.GetName() && old.GetNamespace() == m.GetNamespace() && old.GetGenerateName() == m.GetGenerateName() &&
		maps.Equal(old.GetLabels(), m.GetLabels()) && maps.Equal(old.GetAnnotations(), m.GetAnnotations()) &&
		equality.Semantic.DeepEqual(old.GetOwnerReferences(), m.GetOwnerReferences()) && slices.Equal(old.GetFinalizers(), m.GetFinalizers()) &&
		old.GetDeletionTimestamp().Equal(m.GetDeletionTimestamp())
}

// withoutSpec is a shallow copy of obj, an internal object, without its
// spec.
func withoutSpec(obj kruntime.Object) kruntime.Object {
	v := reflect.New(reflect.TypeOf(obj).Elem())
	v.Elem().Set(reflect.ValueOf(obj).Elem())
	v.Elem().FieldByName("Spec").SetZero()
	return v.Interface().(kruntime.Object)
}

// stored is in, internal, as the store keeps it after a write: in the
// version it is served in, without the kind a list's items leave out, at
// the next resource version; the managedFields entry of the write is dated
// at.
func (w *apiWriter) stored(k *writeKind, in kruntime.Object, manager, subresource string, at metav1.Time) (kruntime.Object, error) {
	out, err := legacyscheme.Scheme.ConvertToVersion(in, k.kind.GroupVersion())
	if err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	m, err := meta.Accessor(out)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(strconv.FormatInt(w.rv.Add(1), 10))
	entries := m.GetManagedFields()
	for i := range entries {
		if entries[i].Manager == manager && entries[i].Subresource == subresource {
			entries[i].Time = &at
		}
	}
	return out, nil
}

// replayResource is one resource the replay serves, its objects in the
// API server's storage order: by key, /registry/RESOURCE/[NAMESPACE/]NAME.
type replayResource struct {
	gvr        schema.GroupVersionResource
	kind       string
	shortNames []string
	categories []string
	namespaced bool
	keyPrefix  string // /registry/RESOURCE
	keys       []string
	items      [][]byte // stowed objects, in the order of keys
	// fields are the fields of an object the resource selects on, beyond
	// metadata.name and metadata.namespace (the registry's GetAttrs);
	// fieldNames their names
	fields     func(kruntime.Object) fields.Set
	fieldNames []string
}

// replayResources are the resources discovery announces, with what
// kubectl needs to find them; those that hold no object in the replay
// serve empty lists.
func replayResources() []*replayResource {
	core, apps, policy := corev1.SchemeGroupVersion, appsv1.SchemeGroupVersion, policyv1.SchemeGroupVersion
	coordination := schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1"}
	all := []string{"all"}
	return []*replayResource{
		{gvr: core.WithResource("pods"), kind: "Pod", shortNames: []string{"po"}, categories: all, namespaced: true, fields: podFields},
		{gvr: core.WithResource("nodes"), kind: "Node", shortNames: []string{"no"}, fields: func(o kruntime.Object) fields.Set {
			return fields.Set{"spec.unschedulable": strconv.FormatBool(o.(*corev1.Node).Spec.Unschedulable)}
		}},
		{gvr: core.WithResource("namespaces"), kind: "Namespace", shortNames: []string{"ns"}, fields: func(o kruntime.Object) fields.Set {
			return fields.Set{"status.phase": string(o.(*corev1.Namespace).Status.Phase)}
		}},
		{gvr: core.WithResource("services"), kind: "Service", shortNames: []string{"svc"}, categories: all, namespaced: true},
		{gvr: core.WithResource("persistentvolumeclaims"), kind: "PersistentVolumeClaim", shortNames: []string{"pvc"}, namespaced: true},
		{gvr: core.WithResource("persistentvolumes"), kind: "PersistentVolume", shortNames: []string{"pv"}},
		{gvr: core.WithResource("configmaps"), kind: "ConfigMap", shortNames: []string{"cm"}, namespaced: true},
		{gvr: apps.WithResource("deployments"), kind: "Deployment", shortNames: []string{"deploy"}, categories: all, namespaced: true},
		{gvr: apps.WithResource("replicasets"), kind: "ReplicaSet", shortNames: []string{"rs"}, categories: all, namespaced: true,
			fields: func(o kruntime.Object) fields.Set {
				return fields.Set{"status.replicas": strconv.Itoa(int(o.(*appsv1.ReplicaSet).Status.Replicas))}
			}},
		{gvr: apps.WithResource("statefulsets"), kind: "StatefulSet", shortNames: []string{"sts"}, categories: all, namespaced: true},
		{gvr: apps.WithResource("daemonsets"), kind: "DaemonSet", shortNames: []string{"ds"}, categories: all, namespaced: true},
		{gvr: policy.WithResource("poddisruptionbudgets"), kind: "PodDisruptionBudget", shortNames: []string{"pdb"}, namespaced: true},
		{gvr: coordination.WithResource("leases"), kind: "Lease", namespaced: true},
	}
}

// podFields are the pod fields the API server selects on (registry/core/pod,
// ToSelectableFields).
func podFields(o kruntime.Object) fields.Set {
	p := o.(*corev1.Pod)
	return fields.Set{
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             p.Status.PodIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}

// replayHandler serves the replay's API.
type replayHandler struct {
	resources map[schema.GroupVersionResource]*replayResource
	groups    []schema.GroupVersion // of /apis, in discovery order
	rv        int64
	log       *log.Logger
	version   version.Info
	pages     sync.Map // pageKey -> *replayPage
}

func newReplayHandler(objects replayObjects, logger *log.Logger) *replayHandler {
	h := &replayHandler{resources: map[schema.GroupVersionResource]*replayResource{}, rv: objects.rv, log: logger, version: replayVersion()}
	for _, res := range replayResources() {
		res.keyPrefix = "/registry/" + res.gvr.Resource
		if res.fields != nil {
			zero, _ := clientscheme.Scheme.New(res.gvr.GroupVersion().WithKind(res.kind))
			for name := range res.fields(zero) {
				res.fieldNames = append(res.fieldNames, name)
			}
		}
		stored := objects.byResource[res.gvr]
		res.keys, res.items = make([]string, len(stored)), make([][]byte, len(stored))
		for i, s := range stored {
			res.keys[i], res.items[i] = res.keyPrefix+"/"+s.name, s.data
			if res.namespaced {
				res.keys[i] = res.keyPrefix + "/" + s.namespace + "/" + s.name
			}
		}
		sort.Sort(byKey{res})
		h.resources[res.gvr] = res
		if gv := res.gvr.GroupVersion(); gv.Group != "" && !slices.Contains(h.groups, gv) {
			h.groups = append(h.groups, gv)
		}
	}
	return h
}

type byKey struct{ *replayResource }

func (b byKey) Len() int           { return len(b.keys) }
func (b byKey) Less(i, j int) bool { return b.keys[i] < b.keys[j] }
func (b byKey) Swap(i, j int) {
	b.keys[i], b.keys[j] = b.keys[j], b.keys[i]
	b.items[i], b.items[j] = b.items[j], b.items[i]
}

// object decodes item i.
func (res *replayResource) object(i int) (kruntime.Object, error) {
	obj, err := clientscheme.Scheme.New(res.gvr.GroupVersion().WithKind(res.kind))
	if err != nil {
		return nil, err
	}
	unmarshaler, ok := obj.(interface{ Unmarshal([]byte) error })
	if !ok {
		return nil, fmt.Errorf("%T does not unmarshal", obj)
	}
	return obj, unmarshaler.Unmarshal(res.items[i])
}

// replayVersion is the version of the Kubernetes the sim module builds.
func replayVersion() version.Info {
	v := "v0.0.0"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/kubernetes" {
				v = d.Version
			}
		}
	}
	major, minor, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	return version.Info{Major: major, Minor: minor, GitVersion: v, GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
}

// gzipThreshold is the API server's: smaller bodies are sent as they are
// (endpoints/handlers/responsewriters, defaultGzipThresholdBytes).
const gzipThreshold = 128 * 1024

// replayResponse is an encoded body, compressed at most once.
type replayResponse struct {
	contentType string
	body        []byte
	gzipOnce    sync.Once
	gzipped     []byte
}

func (r *replayResponse) gzip() []byte {
	r.gzipOnce.Do(func() {
		var b bytes.Buffer
		// level 1, the API server's (defaultGzipContentEncodingLevel)
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
		_, _ = zw.Write(r.body)
		_ = zw.Close()
		r.gzipped = b.Bytes()
	})
	return r.gzipped
}

// pageKey names a distinct page: its resource and namespace, selectors,
// first item and size, and encoding.
type pageKey struct {
	res           *replayResource
	namespace     string
	labelSelector string
	fieldSelector string
	from          int
	limit         int64
	rv            int64
	protobuf      bool
}

type replayPage struct {
	once sync.Once
	resp *replayResponse
	err  error
}

// statusWriter records what was answered, for the request log.
type statusWriter struct {
	http.ResponseWriter
	code  int
	bytes int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

func (h *replayHandler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	w := &statusWriter{ResponseWriter: rw}
	h.serve(w, r)
	h.log.Printf("%s %s %d %dB %s %s", r.Method, r.URL.RequestURI(), w.code, w.bytes, w.Header().Get("Content-Encoding"), time.Since(start).Round(time.Microsecond))
}

func (h *replayHandler) serve(w http.ResponseWriter, r *http.Request) {
	protobuf, ok := negotiate(r.Header.Get("Accept"))
	if !ok {
		h.writeStatus(w, r, false, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "get", schema.GroupResource{}, "", "only application/json and application/vnd.kubernetes.protobuf are served", 0, false))
		return
	}
	path := strings.Trim(r.URL.Path, "/")
	switch path {
	case "healthz", "livez", "readyz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
		return
	case "version":
		h.writeJSON(w, r, h.version)
		return
	}
	parts := strings.Split(path, "/")
	var gv schema.GroupVersion
	switch {
	case path == "api":
		h.writeObject(w, r, protobuf, schema.GroupVersion{}, &metav1.APIVersions{Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
		return
	case path == "apis":
		list := &metav1.APIGroupList{}
		for _, gv := range h.groups {
			list.Groups = append(list.Groups, apiGroup(gv))
		}
		h.writeObject(w, r, protobuf, metav1.SchemeGroupVersion, list)
		return
	case parts[0] == "api" && len(parts) >= 2:
		gv, parts = schema.GroupVersion{Version: parts[1]}, parts[2:]
	case parts[0] == "apis" && len(parts) == 2:
		for _, g := range h.groups {
			if g.Group == parts[1] {
				group := apiGroup(g)
				h.writeObject(w, r, protobuf, metav1.SchemeGroupVersion, &group)
				return
			}
		}
		h.writeStatus(w, r, protobuf, notFound())
		return
	case parts[0] == "apis" && len(parts) >= 3:
		gv, parts = schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	default:
		h.writeStatus(w, r, protobuf, notFound())
		return
	}
	if len(parts) == 0 {
		h.discovery(w, r, protobuf, gv)
		return
	}
	// [namespaces/NAMESPACE/]RESOURCE[/NAME[/SUBRESOURCE]]
	namespace := ""
	if parts[0] == "namespaces" && len(parts) >= 3 {
		namespace, parts = parts[1], parts[2:]
	}
	res, ok := h.resources[gv.WithResource(parts[0])]
	// a namespaced object is named in its namespace
	if !ok || len(parts) > 3 || (namespace != "" && !res.namespaced) || (namespace == "" && res.namespaced && len(parts) > 1) {
		h.writeStatus(w, r, protobuf, notFound())
		return
	}
	if r.Method != http.MethodGet {
		verb := map[string]string{http.MethodPost: "create", http.MethodPut: "update", http.MethodPatch: "patch", http.MethodDelete: "delete"}[r.Method]
		if verb == "" {
			verb = strings.ToLower(r.Method)
		}
		h.writeStatus(w, r, protobuf, apierrors.NewMethodNotSupported(res.gvr.GroupResource(), verb))
		return
	}
	switch len(parts) {
	case 1:
		h.list(w, r, protobuf, res, namespace)
	case 2:
		h.get(w, r, protobuf, res, namespace, parts[1])
	default:
		if parts[2] != "status" {
			h.writeStatus(w, r, protobuf, notFound())
			return
		}
		h.get(w, r, protobuf, res, namespace, parts[1])
	}
}

// negotiate picks the response's encoding from an Accept header, as the
// API server does for the media types the replay serves: a type asking for
// a transformation (as=Table, PartialObjectMetadata, aggregated discovery)
// is passed over for the next.
func negotiate(accept string) (protobuf, ok bool) {
	if strings.TrimSpace(accept) == "" {
		return false, true
	}
	for part := range strings.SplitSeq(accept, ",") {
		mediaType, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || params["as"] != "" {
			continue
		}
		switch mediaType {
		case kruntime.ContentTypeProtobuf:
			return true, true
		case kruntime.ContentTypeJSON, "application/*", "*/*":
			return false, true
		}
	}
	return false, false
}

func notFound() *apierrors.StatusError {
	return apierrors.NewGenericServerResponse(http.StatusNotFound, "get", schema.GroupResource{}, "", "", 0, false)
}

func apiGroup(gv schema.GroupVersion) metav1.APIGroup {
	v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
	return metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}
}

func (h *replayHandler) discovery(w http.ResponseWriter, r *http.Request, protobuf bool, gv schema.GroupVersion) {
	list := &metav1.APIResourceList{GroupVersion: gv.String()}
	for _, res := range replayResources() {
		if res.gvr.GroupVersion() == gv {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: res.gvr.Resource, SingularName: strings.ToLower(res.kind),
				Namespaced: res.namespaced, Kind: res.kind, Verbs: metav1.Verbs{"get", "list"}, ShortNames: res.shortNames, Categories: res.categories})
		}
	}
	if len(list.APIResources) == 0 {
		h.writeStatus(w, r, protobuf, notFound())
		return
	}
	// the legacy group's documents have no apiVersion, as the API
	// server's
	encodeAs := metav1.SchemeGroupVersion
	if gv.Group == "" {
		encodeAs = schema.GroupVersion{}
	}
	h.writeObject(w, r, protobuf, encodeAs, list)
}

func (h *replayHandler) get(w http.ResponseWriter, r *http.Request, protobuf bool, res *replayResource, namespace, name string) {
	if watching(r) {
		h.writeStatus(w, r, protobuf, apierrors.NewMethodNotSupported(res.gvr.GroupResource(), "watch"))
		return
	}
	key := res.keyPrefix + "/" + name
	if res.namespaced {
		key = res.keyPrefix + "/" + namespace + "/" + name
	}
	i, found := sort.Find(len(res.keys), func(i int) int { return strings.Compare(key, res.keys[i]) })
	if !found {
		h.writeStatus(w, r, protobuf, apierrors.NewNotFound(res.gvr.GroupResource(), name))
		return
	}
	obj, err := res.object(i)
	if err != nil {
		h.writeStatus(w, r, protobuf, apierrors.NewInternalError(err))
		return
	}
	body, err := encode(obj, res.gvr.GroupVersion(), protobuf)
	if err != nil {
		h.writeStatus(w, r, protobuf, apierrors.NewInternalError(err))
		return
	}
	write(w, r, http.StatusOK, &replayResponse{contentType: contentType(protobuf), body: body})
}

func watching(r *http.Request) bool {
	v := r.URL.Query().Get("watch")
	return v == "true" || v == "1"
}

// list answers a list as the API server's watch cache does
// (storage/cacher, GetList): from the continue token's key, the items that
// match the selectors up to limit; a continue token when items are left
// after the last one taken, and with no selector the count of the items
// left; limit ignored at resourceVersion=0.
func (h *replayHandler) list(w http.ResponseWriter, r *http.Request, protobuf bool, res *replayResource, namespace string) {
	q := r.URL.Query()
	if watching(r) {
		h.writeStatus(w, r, protobuf, apierrors.NewMethodNotSupported(res.gvr.GroupResource(), "watch"))
		return
	}
	badRequest := func(format string, args ...any) {
		h.writeStatus(w, r, protobuf, apierrors.NewBadRequest(fmt.Sprintf(format, args...)))
	}
	key := pageKey{res: res, namespace: namespace, protobuf: protobuf, rv: h.rv}
	if v := q.Get("limit"); v != "" && q.Get("resourceVersion") != "0" {
		limit, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			badRequest("limit: %v", err)
			return
		}
		key.limit = max(limit, 0)
	}
	if _, err := labels.Parse(q.Get("labelSelector")); err != nil {
		badRequest("unable to parse requirement: %v", err)
		return
	}
	key.labelSelector = q.Get("labelSelector")
	fieldSelector, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		badRequest("%v", err)
		return
	}
	for _, req := range fieldSelector.Requirements() {
		if req.Field != "metadata.name" && req.Field != "metadata.namespace" && !slices.Contains(res.fieldNames, req.Field) {
			badRequest("field label not supported: %s", req.Field)
			return
		}
	}
	key.fieldSelector = q.Get("fieldSelector")
	prefix := res.keyPrefix
	if namespace != "" {
		prefix += "/" + namespace
	}
	key.from = sort.SearchStrings(res.keys, prefix+"/")
	if token := q.Get("continue"); token != "" {
		from, rv, err := storage.DecodeContinue(token, prefix+"/")
		if err != nil {
			badRequest("invalid continue token: %v", err)
			return
		}
		key.from, key.rv = max(key.from, sort.SearchStrings(res.keys, from)), rv
	}
	v, _ := h.pages.LoadOrStore(key, &replayPage{})
	page := v.(*replayPage)
	page.once.Do(func() { page.resp, page.err = h.page(key, prefix) })
	if page.err != nil {
		h.writeStatus(w, r, protobuf, apierrors.NewInternalError(page.err))
		return
	}
	write(w, r, http.StatusOK, page.resp)
}

// page encodes the page key names; prefix is its key prefix.
func (h *replayHandler) page(key pageKey, prefix string) (*replayResponse, error) {
	res := key.res
	to := sort.SearchStrings(res.keys, prefix+"0") // '0' follows '/'
	labelSelector, err := labels.Parse(key.labelSelector)
	if err != nil {
		return nil, err
	}
	fieldSelector, err := fields.ParseSelector(key.fieldSelector)
	if err != nil {
		return nil, err
	}
	unfiltered := labelSelector.Empty() && fieldSelector.Empty()
	var items []kruntime.Object
	last, more := -1, false
	// decoded a chunk at a time on every CPU, filtered in order
	chunk := 256
	if unfiltered && key.limit > 0 {
		chunk = int(min(key.limit, int64(chunk)))
	}
	full := false
	for at := key.from; at < to && !full; at += chunk {
		decoded := make([]kruntime.Object, min(chunk, to-at))
		if err := parallelDo(len(decoded), func(j int) (err error) {
			decoded[j], err = res.object(at + j)
			return err
		}); err != nil {
			return nil, err
		}
		for j, o := range decoded {
			i := at + j
			if unfiltered || matches(res, o, labelSelector, fieldSelector) {
				items = append(items, o)
				last = i
			}
			if key.limit > 0 && int64(len(items)) >= key.limit {
				full, more = true, i < to-1
				break
			}
		}
	}
	list, err := clientscheme.Scheme.New(res.gvr.GroupVersion().WithKind(res.kind + "List"))
	if err != nil {
		return nil, err
	}
	if err := meta.SetList(list, items); err != nil {
		return nil, err
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	lm.SetResourceVersion(strconv.FormatInt(key.rv, 10))
	if more {
		token, err := storage.EncodeContinue(res.keys[last]+"\x00", prefix, key.rv)
		if err != nil {
			return nil, err
		}
		lm.SetContinue(token)
		if unfiltered {
			lm.SetRemainingItemCount(new(int64(to-key.from) - key.limit))
		}
	}
	body, err := encode(list, res.gvr.GroupVersion(), key.protobuf)
	if err != nil {
		return nil, err
	}
	return &replayResponse{contentType: contentType(key.protobuf), body: body}, nil
}

func matches(res *replayResource, o kruntime.Object, labelSelector labels.Selector, fieldSelector fields.Selector) bool {
	m := o.(metav1.Object)
	if !labelSelector.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	if fieldSelector.Empty() {
		return true
	}
	set := fields.Set{"metadata.name": m.GetName()}
	if res.namespaced {
		set["metadata.namespace"] = m.GetNamespace()
	}
	if res.fields != nil {
		for k, v := range res.fields(o) {
			set[k] = v
		}
	}
	return fieldSelector.Matches(set)
}

func contentType(protobuf bool) string {
	if protobuf {
		return kruntime.ContentTypeProtobuf
	}
	return kruntime.ContentTypeJSON
}

// encode is obj in the wire format of gv, as client-go's codecs (those of
// the API server) write it; with no gv, an unversioned object with its
// kind alone.
func encode(obj kruntime.Object, gv schema.GroupVersion, protobuf bool) ([]byte, error) {
	info, ok := kruntime.SerializerInfoForMediaType(clientscheme.Codecs.SupportedMediaTypes(), contentType(protobuf))
	if !ok {
		return nil, fmt.Errorf("no serializer for %q", contentType(protobuf))
	}
	if gv.Empty() {
		kinds, _, err := clientscheme.Scheme.ObjectKinds(obj)
		if err != nil {
			return nil, err
		}
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Kind: kinds[0].Kind})
		return kruntime.Encode(info.Serializer, obj)
	}
	return kruntime.Encode(clientscheme.Codecs.EncoderForVersion(info.Serializer, gv), obj)
}

// write sends resp, gzipped when the client accepts it and the body is
// over the API server's threshold.
func write(w http.ResponseWriter, r *http.Request, code int, resp *replayResponse) {
	body := resp.body
	if len(body) > gzipThreshold && acceptsGzip(r) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Add("Vary", "Accept-Encoding")
		body = resp.gzip()
	}
	w.Header().Set("Content-Type", resp.contentType)
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// acceptsGzip is the API server's reading of Accept-Encoding
// (responsewriters, negotiateContentEncoding).
func acceptsGzip(r *http.Request) bool {
	for token := range strings.SplitSeq(r.Header.Get("Accept-Encoding"), ",") {
		if strings.TrimSpace(token) == "gzip" {
			return true
		}
	}
	return false
}

func (h *replayHandler) writeObject(w http.ResponseWriter, r *http.Request, protobuf bool, gv schema.GroupVersion, obj kruntime.Object) {
	body, err := encode(obj, gv, protobuf)
	if err != nil {
		h.writeStatus(w, r, protobuf, apierrors.NewInternalError(err))
		return
	}
	write(w, r, http.StatusOK, &replayResponse{contentType: contentType(protobuf), body: body})
}

// writeJSON answers /version as the API server does (WriteRawJSON).
func (h *replayHandler) writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		h.writeStatus(w, r, false, apierrors.NewInternalError(err))
		return
	}
	write(w, r, http.StatusOK, &replayResponse{contentType: kruntime.ContentTypeJSON, body: body})
}

func (h *replayHandler) writeStatus(w http.ResponseWriter, r *http.Request, protobuf bool, err *apierrors.StatusError) {
	status := err.Status()
	body, encodeErr := encode(&status, metav1.SchemeGroupVersion, protobuf)
	if encodeErr != nil {
		http.Error(w, encodeErr.Error(), http.StatusInternalServerError)
		return
	}
	write(w, r, int(status.Code), &replayResponse{contentType: contentType(protobuf), body: body})
}
