#!/usr/bin/env bash
# The demo, on the AKS path (hack/demo.sh aks): starts the embedded
# simulated cluster with a local Azure Resource Manager endpoint
# (sim/azurefake), whose AKS cluster "demo" (resource group demo-rg) has
# agent pool "demopool": 3 nodes over 3 zones on Kubernetes 1.31.5 and an
# older node image, control plane 1.32.2, with two Deployments and their
# PDBs on them; then plans AKS's node image and Kubernetes version upgrades
# and runs the Kubernetes version one through AKS's API: AKS surges,
# drains (PDBs honoured) and reimages, the plugin starts and follows it.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/demo-lib.sh
demo_start "the simulated cluster, the local Azure endpoint and agent pool demopool" --aks-demo
# The plugin's hooks for a local endpoint, in place of the Azure credential
# chain and Azure Resource Manager.
export NODEUPGRADE_AKS_ENDPOINT=$(sed -n 's/.* aks-endpoint=\([^ ]*\).*/\1/p' <<<"$ready")
export NODEUPGRADE_AKS_NO_AUTH=true
echo "KUBECONFIG=$KUBECONFIG NODEUPGRADE_AKS_ENDPOINT=$NODEUPGRADE_AKS_ENDPOINT (AKS's surges, drains and reimages: $work/simcluster.log)"

labels=kubernetes.azure.com/agentpool,kubernetes.azure.com/node-image-version,topology.kubernetes.io/zone
echo
kubectl get nodes -L "$labels"

echo
echo "== kubectl nodeupgrade plan demopool --node-image latest"
kubectl nodeupgrade plan demopool --node-image latest

run="demopool --orchestrator-version 1.32"
echo
echo "== kubectl nodeupgrade plan $run"
kubectl nodeupgrade plan $run

echo
echo "== kubectl nodeupgrade run $run --yes"
start=$(date +%s)
kubectl nodeupgrade run $run --yes
echo "(the run took $(($(date +%s) - start)) s)"

# AKS ends the upgrade once the last node is reimaged: its pods are
# starting again elsewhere.
kubectl wait -n aks-demo --for=condition=Available deployment --all --timeout=60s >/dev/null ||
  kubectl get pods -n aks-demo -o wide

echo
echo "== kubectl nodeupgrade status demopool"
kubectl nodeupgrade status demopool
echo
kubectl get nodes -L "$labels"
kubectl get deployments,pdb -n aks-demo
