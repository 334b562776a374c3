package snapshot

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// lastApplied is kubectl apply's copy of the whole object: nothing reads it
// here and it is often the biggest annotation.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// SlimPod keeps what planning, the audit and a run read: metadata but
// managedFields and kubectl's last-applied copy; of the spec the node,
// tolerations, volumes, grace period and readiness gates, and of each
// container its name, readiness probe, lifecycle hooks and restart policy;
// the status but the container statuses and addresses (startTime stays: a
// karpenter.sh/do-not-disrupt duration runs from it). Of the resources
// only the requests stay (the room estimate reads them); limits go. A
// planner, check or run step reading more of a pod must keep it here
// (TestSlimPodKeepsWhatPlanningReads). The plan's snapshot and the run's
// pod cache (Slim) both keep this much, so the capacity estimate reads the
// same pods in both.
func SlimPod(p *corev1.Pod) {
	slimMeta(&p.ObjectMeta)
	p.Spec.InitContainers = slimContainers(p.Spec.InitContainers)
	p.Spec.Containers = slimContainers(p.Spec.Containers)
	// Of the affinity, only the required node affinity is read (where a
	// pod may go: pod-cannot-move).
	var required *corev1.NodeSelector
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	p.Spec.Affinity = nil
	if required != nil {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required}}
	}
	p.Spec.Volumes = slimVolumes(p.Spec.Volumes)
	dropPodSpec(&p.Spec)
	st := &p.Status
	dropPodStatus(st)
	// Of the conditions, Ready is read (a pod's readiness); a new slice,
	// so the others' memory goes.
	var ready []corev1.PodCondition
	for _, c := range st.Conditions {
		if c.Type == corev1.PodReady {
			ready = []corev1.PodCondition{{Type: corev1.PodReady, Status: c.Status}}
		}
	}
	st.Conditions = ready
}

// dropPodSpec drops the parts of a pod's spec SlimPod leaves out whole
// (decodePod skips them undecoded).
func dropPodSpec(sp *corev1.PodSpec) {
	sp.EphemeralContainers = nil
	sp.TopologySpreadConstraints, sp.SecurityContext = nil, nil
	sp.ImagePullSecrets, sp.HostAliases, sp.DNSConfig = nil, nil, nil
	sp.ResourceClaims = nil
}

// dropPodStatus drops the parts of a pod's status SlimPod leaves out
// whole (decodePod skips them undecoded).
func dropPodStatus(st *corev1.PodStatus) {
	st.ContainerStatuses, st.InitContainerStatuses, st.EphemeralContainerStatuses = nil, nil, nil
	st.ResourceClaimStatuses, st.PodIPs, st.HostIPs = nil, nil, nil
	st.Message, st.HostIP, st.PodIP = "", "", ""
}

// slimVolumes keeps the volumes the audit and the room estimate read, with
// only the source they read: emptyDir (data lost in a drain), a claim or
// an ephemeral volume (where the pod can go).
func slimVolumes(vs []corev1.Volume) []corev1.Volume {
	var out []corev1.Volume // a new slice, so the others' memory goes
	for _, v := range vs {
		src := corev1.VolumeSource{EmptyDir: v.EmptyDir, PersistentVolumeClaim: v.PersistentVolumeClaim, Ephemeral: v.Ephemeral}
		if src != (corev1.VolumeSource{}) {
			out = append(out, corev1.Volume{Name: v.Name, VolumeSource: src})
		}
	}
	return out
}

// slimContainers keeps, of each container, only the fields the audit and
// the room estimate read, so a field added to Container later is dropped
// unless kept here.
func slimContainers(cs []corev1.Container) []corev1.Container {
	for i, c := range cs {
		cs[i] = corev1.Container{Name: c.Name, ReadinessProbe: c.ReadinessProbe, Lifecycle: c.Lifecycle, RestartPolicy: c.RestartPolicy,
			Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests}}
	}
	return cs
}

// slimNode drops the node's image list and volume status, which nothing
// here reads and which make up much of a node object.
func slimNode(n *corev1.Node) {
	slimMeta(&n.ObjectMeta)
	n.Status.Images, n.Status.VolumesInUse, n.Status.VolumesAttached = nil, nil, nil
}

// slimReplicaSet drops the pod template: a ReplicaSet is read for its
// owner and replica counts.
func slimReplicaSet(rs *appsv1.ReplicaSet) {
	slimMeta(&rs.ObjectMeta)
	rs.Spec.Template = corev1.PodTemplateSpec{}
}

// slimDeployment drops the pod template: a Deployment is read for its
// replicas and minReadySeconds (the audit), its pods for the rest.
func slimDeployment(d *appsv1.Deployment) {
	slimMeta(&d.ObjectMeta)
	d.Spec.Template = corev1.PodTemplateSpec{}
}

// slimStatefulSet drops the pod and volume claim templates: a StatefulSet
// is read for its replicas.
func slimStatefulSet(s *appsv1.StatefulSet) {
	slimMeta(&s.ObjectMeta)
	s.Spec.Template, s.Spec.VolumeClaimTemplates = corev1.PodTemplateSpec{}, nil
}

// slimClaim keeps what ties a claim to its volume.
func slimClaim(c *corev1.PersistentVolumeClaim) {
	*c = corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: c.Spec.VolumeName}}
}

// slimVolume keeps where a volume can be reached from: its node affinity
// (a local volume's node, a disk's zone) and whether it is a local one.
func slimVolume(v *corev1.PersistentVolume) {
	*v = corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: v.Name},
		Spec: corev1.PersistentVolumeSpec{NodeAffinity: v.Spec.NodeAffinity,
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: v.Spec.Local, HostPath: v.Spec.HostPath}}}
}

func slimMeta(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	delete(m.Annotations, lastApplied)
}

// Slim is the slimming of the snapshot as an informer's transform
// (cache.TransformFunc), for the pods and workload controllers a run
// watches: its caches hold what the plan's snapshot holds, so what the run
// estimates and waits for reads the same fields the plan read. Objects of
// other types pass unchanged.
func Slim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		SlimPod(o)
	case *appsv1.ReplicaSet:
		slimReplicaSet(o)
	case *appsv1.Deployment:
		slimDeployment(o)
	case *appsv1.StatefulSet:
		slimStatefulSet(o)
	case *corev1.ReplicationController:
		slimMeta(&o.ObjectMeta)
		o.Spec.Template = nil
	}
	return obj, nil
}
