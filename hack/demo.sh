#!/usr/bin/env bash
# The demo: starts the embedded simulated cluster (real apiserver,
# controllers and scheduler, kwok nodes), with a local endpoint of the
# path's cloud, whose node group backs the nodes, and a few Deployments and
# PDBs on them; then plans and runs the upgrade of the group and prints its
# status. One path per way the plugin replaces nodes:
#
#   hack/demo.sh [aks|aws|eks-managed|gce|gke|karpenter|none]
#   hack/demo.sh in-cluster
#   hack/demo.sh fleet
#
# aks:         AKS agent pool "demopool", AKS's own upgrade to Kubernetes
#              1.32 started and followed (demo-aks.sh).
# aws:         Auto Scaling group "demo" (9 nodes), image ami-old to ami-new
#              through a new launch template version (the default).
# eks-managed: EKS managed node group "demo-managed" (3 nodes) beside it,
#              Kubernetes 1.30 to 1.31: EKS runs the update, the plugin
#              plans, starts and follows it.
# gce:         regional managed instance group "demo" (kOps labels), image
#              img-old to img-new through a new instance template.
# gke:         GKE node pool "default-pool", GKE's own upgrade (demo-gke.sh).
# in-cluster:  the aws path's group, upgraded by run --in-cluster: a Job in
#              kube-system (deploy/rbac.yaml, deploy/in-cluster.yaml) whose
#              pods land on node system-0, outside the group, whose
#              stand-in kubelet (simcluster kubelet) runs them as local
#              processes of the plugin with the pod's own token; the demo
#              deletes the Job's pod mid-run, the next pod resumes, and
#              report shows each attempt and node (docs/in-cluster.md).
# fleet:       three clusters, each a simcluster of its own (the none, AWS
#              and GKE demos), one fleet of three stages over them: the
#              canary cluster, its approval, then the rest (demo-fleet.sh,
#              docs/fleet.md).
# karpenter:   the real Karpenter (v1.15.0, its KWOK provider, built once
#              into the user's cache) beside the cluster; NodePool "demo" of
#              9 nodes over three zones, pointed at a new NodeClass: the run
#              holds Karpenter's drift off and replaces them in waves.
# none:        node group "demo" of nodes no cloud owns (6 on ami-old, 3 on
#              ami-new, by label): --provider none drains and deletes the
#              outdated ones.
set -euo pipefail
# The usage line names the paths (docs/docs_test.go holds them to the
# docs'); in-cluster is the aws path run from a Job.
usage="usage: hack/demo.sh [aks|aws|eks-managed|gce|gke|karpenter|none]"
usage="$usage
       hack/demo.sh in-cluster
       hack/demo.sh fleet"
path=${1:-aws}
if [ "$path" = gke ]; then exec "$(dirname "$0")/demo-gke.sh"; fi
if [ "$path" = aks ]; then exec "$(dirname "$0")/demo-aks.sh"; fi
if [ "$path" = fleet ]; then exec "$(dirname "$0")/demo-fleet.sh"; fi
cd "$(dirname "$0")/.."
case $path in
aws | eks-managed | gce | in-cluster | karpenter | none) ;;
*) echo "$usage" >&2; exit 2 ;;
esac
# shellcheck source=hack/demo-lib.sh
. hack/demo-lib.sh

# What each path starts, its group, the target and the flags of the demo's
# plan and run, the same for both so the plan's estimate is the run's
# (--seed 1 makes the plan the README shows, --post-drain-wait 5s keeps
# the run short).
group=demo
wait="--post-drain-wait 5s"
opts="--max-unavailable 2 --seed 1 $wait"
case $path in
aws | in-cluster)
  demo_start "the simulated cluster, the local AWS endpoint and Auto Scaling group demo" --aws-demo
  demo_aws_env
  if [ "$path" = in-cluster ]; then demo_kubelet eks.amazonaws.com/nodegroup; fi
  labels=eks.amazonaws.com/nodegroup,eks.amazonaws.com/nodegroup-image,eks.amazonaws.com/sourceLaunchTemplateVersion,topology.kubernetes.io/zone
  target="--ami ami-new"
  ;;
eks-managed)
  demo_start "the simulated cluster, the local AWS and EKS endpoint and managed node group demo-managed" --aws-demo --aws-demo-managed
  demo_aws_env
  labels=eks.amazonaws.com/nodegroup,eks.amazonaws.com/nodegroup-image,topology.kubernetes.io/zone
  group=demo-managed
  target="--kubernetes-version 1.31"
  # EKS orders the nodes itself: no seed.
  opts="--max-unavailable 2 $wait"
  ;;
gce)
  demo_start "the simulated cluster, the local Compute Engine endpoint and managed instance group demo" --gce-demo
  export NODEUPGRADE_GCE_ENDPOINT=$(sed -n 's/.* gce-endpoint=\([^ ]*\).*/\1/p' <<<"$ready")
  export NODEUPGRADE_GCE_NO_AUTH=true
  echo "KUBECONFIG=$KUBECONFIG NODEUPGRADE_GCE_ENDPOINT=$NODEUPGRADE_GCE_ENDPOINT (creations and deletions: $work/simcluster.log)"
  labels=kops.k8s.io/instancegroup,topology.kubernetes.io/zone
  target="--image img-new"
  ;;
karpenter)
  demo_start "the simulated cluster"
  (cd sim && go build -o "$work/bin/karpenter-demo" ./karpenter/demo)
  echo "== starting Karpenter and NodePool demo (the first build of Karpenter takes several minutes)"
  "$work/bin/karpenter-demo" --kubeconfig "$KUBECONFIG" >"$work/karpenter.out" 2>"$work/karpenter.log" &
  karp_pid=$!
  trap 'kill $karp_pid $sim_pid 2>/dev/null; wait $karp_pid $sim_pid 2>/dev/null || true' EXIT
  for _ in $(seq 1 9000); do
    grep -q '^ready ' "$work/karpenter.out" 2>/dev/null && break
    kill -0 $karp_pid 2>/dev/null || { tail -50 "$work/karpenter.log"; exit 1; }
    sleep 0.2
  done
  grep -q '^ready ' "$work/karpenter.out" || { echo "Karpenter's demo did not come up; see $work/karpenter.log"; exit 1; }
  echo "KUBECONFIG=$KUBECONFIG (Karpenter's log: $work/karpenter.log)"
  kubectl get nodepools,nodeclaims
  labels=karpenter.sh/nodepool,topology.kubernetes.io/zone,node.kubernetes.io/instance-type
  target=""
  opts="--max-unavailable 3 --seed 1 $wait"
  ;;
none)
  demo_start "the simulated cluster and node group demo of nodes no cloud owns" --none-demo
  echo "KUBECONFIG=$KUBECONFIG"
  labels=eks.amazonaws.com/nodegroup,eks.amazonaws.com/nodegroup-image,topology.kubernetes.io/zone
  target="--provider none --target-label eks.amazonaws.com/nodegroup-image=ami-new"
  ;;
esac

echo
kubectl get nodes -L "$labels"

echo
echo "== kubectl nodeupgrade plan $group $target $opts"
kubectl nodeupgrade plan $group $target $opts

if [ "$path" = in-cluster ]; then
  demo_in_cluster eks.amazonaws.com/nodegroup
  exit
fi

echo
echo "== kubectl nodeupgrade run $group $target $opts --yes"
start=$(date +%s)
kubectl nodeupgrade run $group $target $opts --yes
echo "(the run took $(($(date +%s) - start)) s)"

echo
echo "== kubectl nodeupgrade status $group"
kubectl nodeupgrade status $group

echo
kubectl get nodes -L "$labels"
kubectl get deployments,pdb -n demo
