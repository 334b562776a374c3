#!/usr/bin/env bash
# The demo: starts the embedded simulated cluster (real apiserver,
# controllers and scheduler, kwok nodes) with a local endpoint of the cloud
# given (default aws) whose node group "demo" backs 9 nodes over 3 zones,
# with a few Deployments and PDBs on them; then plans and runs the upgrade
# of the group to a new image through the cloud's APIs.
#
#   hack/demo.sh [aws|gce|gke]
#
# aws: Auto Scaling group "demo", image ami-old to ami-new.
# gce: regional managed instance group "demo" (kOps labels), image img-old
#      to img-new through a new instance template.
set -euo pipefail
# hack/demo.sh gke: the GKE path, GKE's own upgrade of a node pool.
if [ "${1:-}" = gke ]; then exec "$(dirname "$0")/demo-gke.sh"; fi
cd "$(dirname "$0")/.."
cloud=${1:-aws}
case $cloud in
aws | gce) ;;
*) echo "usage: hack/demo.sh [aws|gce|gke]" >&2; exit 2 ;;
esac
# shellcheck source=hack/demo-lib.sh
. hack/demo-lib.sh
demo_start "the simulated cluster, the local $cloud endpoint and the demo node group" "--$cloud-demo"

case $cloud in
aws)
  export AWS_ENDPOINT_URL=$(sed -n 's/.* aws-endpoint=\([^ ]*\).*/\1/p' <<<"$ready")
  export AWS_ACCESS_KEY_ID=demo
  export AWS_SECRET_ACCESS_KEY=demo
  export AWS_REGION=us-east-1
  export AWS_EC2_METADATA_DISABLED=true
  echo "KUBECONFIG=$KUBECONFIG AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL (launches and terminations: $work/simcluster.log)"
  labels=eks.amazonaws.com/nodegroup,eks.amazonaws.com/nodegroup-image,eks.amazonaws.com/sourceLaunchTemplateVersion,topology.kubernetes.io/zone
  target="--ami ami-new"
  ;;
gce)
  export NODEUPGRADE_GCE_ENDPOINT=$(sed -n 's/.* gce-endpoint=\([^ ]*\).*/\1/p' <<<"$ready")
  export NODEUPGRADE_GCE_NO_AUTH=true
  echo "KUBECONFIG=$KUBECONFIG NODEUPGRADE_GCE_ENDPOINT=$NODEUPGRADE_GCE_ENDPOINT (creations and deletions: $work/simcluster.log)"
  labels=kops.k8s.io/instancegroup,topology.kubernetes.io/zone
  target="--image img-new"
  ;;
esac

echo
kubectl get nodes -L "$labels"

echo
echo "== kubectl nodeupgrade plan demo $target --max-unavailable 2 --seed 1"
kubectl nodeupgrade plan demo $target --max-unavailable 2 --seed 1

echo
echo "== kubectl nodeupgrade run demo $target --max-unavailable 2 --seed 1 --post-drain-wait 5s --yes"
kubectl nodeupgrade run demo $target --max-unavailable 2 --seed 1 --post-drain-wait 5s --yes

echo
echo "== kubectl nodeupgrade status demo"
kubectl nodeupgrade status demo

echo
kubectl get nodes -L "$labels"
kubectl get deployments,pdb -n demo
