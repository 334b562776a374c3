package cluster

import (
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	"sigs.k8s.io/yaml"
)

// The kwok stages below play the kubelet's part for fake nodes:
//   - node-initialize: a new node gets its conditions, addresses and nodeInfo
//     at once, so it turns Ready right after creation;
//   - node-heartbeat: refreshes the conditions now and then (the lease kwok
//     renews is what keeps the node lifecycle controller content);
//   - pod-ready: a scheduled pod becomes Running and Ready after a delay
//     (PodReadyDelay, or the pod annotation sim.nodeupgrade.io/ready-delay
//     such as "5s" to slow down one pod);
//   - pod-delete: a pod whose deletionTimestamp is set is removed one second
//     after that timestamp (it is stored in whole seconds, rounded down), so
//     never before its grace period ends, like a kubelet whose containers
//     use all of terminationGracePeriodSeconds.

const nodeInitialize = `
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-initialize
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values: ['True']
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
      addresses:
      {{ with .status.addresses }}
      {{ YAML . 1 }}
      {{ else }}
      - address: {{ NodeIP | Quote }}
        type: InternalIP
      - address: {{ .metadata.name | Quote }}
        type: Hostname
      {{ end }}
      allocatable:
      {{ with .status.allocatable }}
      {{ YAML . 1 }}
      {{ else }}
        cpu: "4"
        memory: 16Gi
        pods: "110"
      {{ end }}
      capacity:
      {{ with .status.capacity }}
      {{ YAML . 1 }}
      {{ else }}
        cpu: "4"
        memory: 16Gi
        pods: "110"
      {{ end }}
      nodeInfo:
        architecture: amd64
        containerRuntimeVersion: sim://1.0.0
        kernelVersion: 6.0.0-sim
        kubeProxyVersion: v1.36.3
        kubeletVersion: {{ with .status.nodeInfo }}{{ with .kubeletVersion }}{{ . }}{{ else }}v1.36.3{{ end }}{{ else }}v1.36.3{{ end }}
        operatingSystem: linux
        osImage: sim
      phase: Running
`

const nodeHeartbeat = `
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-heartbeat
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'In'
      values: ['True']
  delay:
    durationMilliseconds: 20000
    jitterDurationMilliseconds: 25000
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range .status.conditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ .lastTransitionTime | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
`

const podReady = `
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.spec.nodeName'
      operator: 'Exists'
    - key: '.status.phase'
      operator: 'In'
      values: ['Pending']
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values: ['True']
  delay:
    durationMilliseconds: %d
    durationFrom:
      expressionFrom: '.metadata.annotations["sim.nodeupgrade.io/ready-delay"]'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: PodReadyToStartContainers
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
      {{ range .spec.readinessGates }}
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: {{ .conditionType | Quote }}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        imageID: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      phase: Running
      startTime: {{ $now | Quote }}
`

const podDelete = `
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.deletionTimestamp | fromdateiso8601 + 1 | todate'
  next:
    delete: true
`

// stages returns the kwok stages grouped the way the controller wants them.
func stages(podReadyDelay time.Duration) (map[internalversion.StageResourceRef][]*internalversion.Stage, error) {
	docs := []string{nodeInitialize, nodeHeartbeat, fmt.Sprintf(podReady, podReadyDelay.Milliseconds()), podDelete}
	out := map[internalversion.StageResourceRef][]*internalversion.Stage{}
	for _, doc := range docs {
		var s v1alpha1.Stage
		if err := yaml.UnmarshalStrict([]byte(strings.TrimSpace(doc)), &s); err != nil {
			return nil, fmt.Errorf("parse stage: %w", err)
		}
		in, err := internalversion.ConvertToInternalStage(&s)
		if err != nil {
			return nil, fmt.Errorf("convert stage %s: %w", s.Name, err)
		}
		out[in.Spec.ResourceRef] = append(out[in.Spec.ResourceRef], in)
	}
	return out, nil
}
