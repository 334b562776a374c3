#!/usr/bin/env bash
# The demo of a fleet (hack/demo.sh fleet): three simulated clusters, each
# a simcluster process of its own: the none demo (context canary), the AWS
# demo (context aws) and the GKE demo (context gke), with one kubeconfig
# naming the three. A fleet of three stages rolls the upgrade out over
# them: the canary cluster, whose approval holds the rest, then the Auto
# Scaling group, then GKE's node pool (docs/fleet.md).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/demo-lib.sh
. hack/demo-lib.sh
mkdir -p "$work/bin"
demo_build
export PATH="$work/bin:$PATH"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null || true' EXIT

# start NAME FLAGS...: "simcluster up" in $work/NAME, its ready line in $work/NAME.out.
start() {
  local name=$1
  shift
  "$work/bin/simcluster" up --dir "$work/$name" "$@" >"$work/$name.out" 2>"$work/$name.log" &
  pids+=($!)
}
# ready NAME: waits (5 minutes at most) for its ready line and prints it.
ready() {
  for _ in $(seq 1 1500); do
    grep -q '^ready ' "$work/$1.out" 2>/dev/null && break
    sleep 0.2
  done
  grep '^ready ' "$work/$1.out" || { echo "simcluster $1 did not come up; see $work/$1.log" >&2; exit 1; }
}
# field KEY LINE: the value of KEY= in a ready line.
field() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" <<<" $2"; }

echo "== starting three simulated clusters in $work: the none demo (canary), the AWS demo (aws), the GKE demo (gke)"
start canary --none-demo
start aws --aws-demo
start gke --gke-demo
declare -A line
for name in canary aws gke; do line[$name]=$(ready $name); done

# Each cluster's kubeconfig names its context "sim": renamed after the
# cluster, then merged into one.
merge=""
for name in canary aws gke; do
  sed -e "s/^  name: sim\$/  name: $name/" -e "s/^    cluster: sim\$/    cluster: $name/" \
    -e "s/^current-context: sim\$/current-context: $name/" \
    -e "s/^- name: kubernetes-admin\$/- name: $name-admin/" -e "s/^    user: kubernetes-admin\$/    user: $name-admin/" \
    "$(field kubeconfig "${line[$name]}")" >"$work/$name.kubeconfig"
  merge="$merge${merge:+:}$work/$name.kubeconfig"
done
KUBECONFIG=$merge kubectl config view --flatten >"$work/fleet-kubeconfig"
export KUBECONFIG=$work/fleet-kubeconfig
export AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID=demo AWS_SECRET_ACCESS_KEY=demo AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
AWS_ENDPOINT_URL=$(field aws-endpoint "${line[aws]}")
export NODEUPGRADE_GKE_ENDPOINT NODEUPGRADE_GCE_ENDPOINT NODEUPGRADE_GKE_NO_AUTH=true NODEUPGRADE_GCE_NO_AUTH=true
NODEUPGRADE_GKE_ENDPOINT=$(field gke-endpoint "${line[gke]}")
NODEUPGRADE_GCE_ENDPOINT=$(field compute-endpoint "${line[gke]}")
echo "KUBECONFIG=$KUBECONFIG (contexts canary, aws, gke)"

cat >"$work/fleet.yaml" <<'YAML'
apiVersion: nodeupgrade.dev/v1alpha1
kind: FleetPlan
metadata: {name: rollout}
stages:
- name: canary
  targets:
  - {context: canary, nodeGroup: demo, run: {provider: none, target-label: "eks.amazonaws.com/nodegroup-image=ami-new", max-unavailable: 3, post-drain-wait: 0s}}
  afterStage: {approval: true}
- name: aws
  targets:
  - {context: aws, nodeGroup: demo, run: {ami: ami-new, max-unavailable: 3, post-drain-wait: 5s}}
- name: gke
  targets:
  - {context: gke, nodeGroup: default-pool, run: {node-version: "1.31", strategy: surge, max-surge: 1}}
YAML
echo "== $work/fleet.yaml"
cat "$work/fleet.yaml"
echo
echo "== kubectl nodeupgrade fleet plan -f fleet.yaml"
kubectl nodeupgrade fleet plan -f "$work/fleet.yaml"
echo
echo "== kubectl nodeupgrade fleet run -f fleet.yaml --yes (in the background, into $work/fleet-run.out)"
kubectl nodeupgrade fleet run -f "$work/fleet.yaml" --yes >"$work/fleet-run.out" 2>&1 &
run_pid=$!
until grep -q "waiting for approval" "$work/fleet-run.out"; do
  kill -0 $run_pid 2>/dev/null || { cat "$work/fleet-run.out"; exit 1; }
  sleep 1
done
cat "$work/fleet-run.out"
echo
echo "== kubectl nodeupgrade fleet status -f fleet.yaml"
kubectl nodeupgrade fleet status -f "$work/fleet.yaml"
echo
echo "== kubectl nodeupgrade fleet approve rollout canary"
kubectl nodeupgrade fleet approve rollout canary
wait $run_pid
tail -n +"$(($(grep -n "waiting for approval" "$work/fleet-run.out" | cut -d: -f1) + 1))" "$work/fleet-run.out"
echo
echo "== kubectl nodeupgrade fleet status -f fleet.yaml"
kubectl nodeupgrade fleet status -f "$work/fleet.yaml"
