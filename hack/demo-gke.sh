#!/usr/bin/env bash
# The demo, on the GKE path (hack/demo.sh gke): starts the embedded
# simulated cluster with a fake GKE endpoint over a fake Compute Engine one
# (sim/gkefake), whose cluster "demo" has node pool "default-pool": 3 nodes
# over 3 zones on 1.30, control plane 1.31, with two Deployments and their
# PDBs on them; then plans GKE's surge and blue/green upgrades to 1.31 and
# runs the blue/green one through GKE's API, ending its soak with complete.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/demo-lib.sh
demo_start "the simulated cluster, the fake GKE and Compute Engine endpoints and node pool default-pool" --gke-demo
# The plugin's hooks for local endpoints, in place of Application Default
# Credentials and Google's.
export NODEUPGRADE_GKE_ENDPOINT=$(sed -n 's/.* gke-endpoint=\([^ ]*\).*/\1/p' <<<"$ready")
export NODEUPGRADE_GCE_ENDPOINT=$(sed -n 's/.* compute-endpoint=\([^ ]*\).*/\1/p' <<<"$ready")
export NODEUPGRADE_GKE_NO_AUTH=true NODEUPGRADE_GCE_NO_AUTH=true
echo "KUBECONFIG=$KUBECONFIG NODEUPGRADE_GKE_ENDPOINT=$NODEUPGRADE_GKE_ENDPOINT (GKE's launches, drains and deletions: $work/simcluster.log)"

labels=cloud.google.com/gke-nodepool,topology.kubernetes.io/zone
echo
kubectl get nodes -L "$labels"

for cmd in \
  "plan default-pool --node-version 1.31 --strategy surge --max-surge 2" \
  "plan default-pool --node-version 1.31 --strategy blue-green --batch-node-count 1 --node-pool-soak 1h"; do
  echo
  echo "== kubectl nodeupgrade $cmd"
  kubectl nodeupgrade $cmd
done

echo
echo "== kubectl nodeupgrade run default-pool --node-version 1.31 --strategy blue-green --batch-node-count 1 --node-pool-soak 1h --yes"
kubectl nodeupgrade run default-pool --node-version 1.31 --strategy blue-green --batch-node-count 1 --node-pool-soak 1h --yes \
  | tee "$work/run.out" &
run_pid=$!
for _ in $(seq 1 1500); do
  grep -q NODE_POOL_SOAKING "$work/run.out" 2>/dev/null && break
  sleep 0.2
done
echo
echo "== kubectl nodeupgrade complete default-pool"
kubectl nodeupgrade complete default-pool
wait $run_pid

echo
echo "== kubectl nodeupgrade status default-pool"
kubectl nodeupgrade status default-pool
echo
kubectl get nodes -L "$labels"
kubectl get deployments,pdb -n gke-demo
