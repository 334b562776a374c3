#!/usr/bin/env bash
# The demo: starts the embedded simulated cluster (real apiserver, controllers
# and scheduler, kwok nodes), creates a node group of 6 outdated and 3 current
# nodes over 3 zones with a few Deployments and PDBs, prints the plan and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=${DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/nodeupgrade-demo.XXXXXX")}
mkdir -p "$work/bin"

echo "== building (the simulated cluster's first build takes a few minutes)"
go build -o "$work/bin/kubectl-nodeupgrade" ./cmd/kubectl-nodeupgrade
(cd sim && go build -o "$work/bin/simcluster" ./cmd/simcluster)
export PATH="$work/bin:$PATH"

echo "== starting the simulated cluster in $work"
"$work/bin/simcluster" up --dir "$work/cluster" >"$work/simcluster.out" 2>&1 &
sim_pid=$!
trap 'kill $sim_pid 2>/dev/null; wait $sim_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  grep -q '^ready ' "$work/simcluster.out" 2>/dev/null && break
  kill -0 $sim_pid 2>/dev/null || { cat "$work/simcluster.out"; exit 1; }
  sleep 0.2
done
kubeconfig=$(sed -n 's/^ready kubeconfig=//p' "$work/simcluster.out")
export KUBECONFIG=$kubeconfig

echo "== creating the demo node group and workloads"
"$work/bin/simcluster" scenario demo --kubeconfig "$kubeconfig"
kubectl get nodes -L eks.amazonaws.com/nodegroup,eks.amazonaws.com/nodegroup-image,topology.kubernetes.io/zone

target=eks.amazonaws.com/nodegroup-image=ami-new
echo
echo "== kubectl nodeupgrade plan demo --target-label $target --max-unavailable 2 --seed 1"
kubectl nodeupgrade plan demo --target-label "$target" --max-unavailable 2 --seed 1

echo
echo "== kubectl nodeupgrade run demo --target-label $target --max-unavailable 2 --seed 1 --post-drain-wait 5s --yes"
kubectl nodeupgrade run demo --target-label "$target" --max-unavailable 2 --seed 1 --post-drain-wait 5s --yes

echo
kubectl get nodes -L eks.amazonaws.com/nodegroup,eks.amazonaws.com/nodegroup-image,topology.kubernetes.io/zone
kubectl get deployments,pdb -n demo
