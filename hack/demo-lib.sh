# Sourced by the demo scripts: demo_start WHAT FLAGS... builds the plugin
# and simcluster into $work/bin (demo_build), starts (saying "starting WHAT")
# "simcluster up --dir $work/cluster FLAGS..." in the background (stopped when the script exits) and waits
# for its "ready ..." line, which it leaves in $ready, with KUBECONFIG set.
work=${DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/nodeupgrade-demo.XXXXXX")}

demo_start() {
  mkdir -p "$work/bin"
  demo_build
  export PATH="$work/bin:$PATH"
  echo "== starting $1 in $work"
  shift
  "$work/bin/simcluster" up --dir "$work/cluster" "$@" >"$work/simcluster.out" 2>"$work/simcluster.log" &
  sim_pid=$!
  trap 'kill $sim_pid 2>/dev/null; wait $sim_pid 2>/dev/null || true' EXIT
  # The cluster, the instances and the apps: allow 5 minutes.
  for _ in $(seq 1 1500); do
    grep -q '^ready ' "$work/simcluster.out" 2>/dev/null && break
    kill -0 $sim_pid 2>/dev/null || { cat "$work/simcluster.out" "$work/simcluster.log"; exit 1; }
    sleep 0.2
  done
  ready=$(grep '^ready ' "$work/simcluster.out") || { echo "simcluster did not come up; see $work/simcluster.log"; exit 1; }
  KUBECONFIG=$(sed -n 's/^ready kubeconfig=\([^ ]*\).*/\1/p' <<<"$ready")
  export KUBECONFIG
}

# demo_aws_env points the plugin at the local AWS endpoint of $ready, with
# dummy credentials.
demo_aws_env() {
  AWS_ENDPOINT_URL=$(sed -n 's/.* aws-endpoint=\([^ ]*\).*/\1/p' <<<"$ready")
  export AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID=demo AWS_SECRET_ACCESS_KEY=demo AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
  echo "KUBECONFIG=$KUBECONFIG AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL (the endpoint's launches and terminations: $work/simcluster.log)"
}

# demo_build puts the plugin and simcluster into $work/bin. They are kept
# per machine under ${XDG_CACHE_HOME:-~/.cache}/kubectl-nodeupgrade/demo-bin,
# by the checkout's commit, its changes and new files and the Go version: a
# demo run again on the same sources (another path, say) copies them
# instead of linking simcluster again. NODEUPGRADE_DEMO_REBUILD=1 builds
# them anyway.
demo_build() {
  local key="" cache=""
  if key=$({ go version; git rev-parse HEAD; git status --porcelain; git diff HEAD; git ls-files -z -o --exclude-standard | xargs -0 cat; } 2>/dev/null | git hash-object --stdin | cut -c1-16) &&
    git rev-parse HEAD >/dev/null 2>&1; then
    cache=${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-nodeupgrade/demo-bin/$key
  fi
  if [ -n "$cache" ] && [ -z "${NODEUPGRADE_DEMO_REBUILD:-}" ] && [ -x "$cache/simcluster" ] && [ -x "$cache/kubectl-nodeupgrade" ]; then
    echo "== the plugin and the simulated cluster of these sources, built before ($cache)"
    cp "$cache/kubectl-nodeupgrade" "$cache/simcluster" "$work/bin/"
    return
  fi
  echo "== building (the simulated cluster's first build takes a while: see the README)"
  go build -o "$work/bin/kubectl-nodeupgrade" ./cmd/kubectl-nodeupgrade
  (cd sim && go build -o "$work/bin/simcluster" ./cmd/simcluster)
  if [ -n "$cache" ]; then
    rm -rf "$(dirname "$cache")" # the binaries of other sources
    mkdir -p "$cache" && cp "$work/bin/kubectl-nodeupgrade" "$work/bin/simcluster" "$cache/" || true
  fi
}

# demo_kubelet registers node system-0 (node group "system", outside the
# demo's) and starts its stand-in kubelet ("simcluster kubelet", stopped
# when the script exits), which runs the pods scheduled to it as local
# processes of the plugin: kwok's nodes run no containers. The processes
# get the script's environment (the cloud's endpoint) but KUBECONFIG:
# they reach the cluster as a pod does, with the pod's own token.
demo_kubelet() {
  echo "== starting node system-0 (node group system), whose pods run as local processes of the plugin"
  "$work/bin/simcluster" kubelet --kubeconfig "$KUBECONFIG" --node system-0 --labels "$1=system" \
    --binary "$work/bin/kubectl-nodeupgrade" >"$work/kubelet.out" 2>&1 &
  kubelet_pid=$!
  trap 'kill $kubelet_pid $sim_pid 2>/dev/null; wait $kubelet_pid $sim_pid 2>/dev/null || true' EXIT
  for _ in $(seq 1 600); do
    grep -q '^ready ' "$work/kubelet.out" 2>/dev/null && return
    kill -0 $kubelet_pid 2>/dev/null || break
    sleep 0.2
  done
  echo "the stand-in kubelet did not come up:"
  cat "$work/kubelet.out"
  exit 1
}

# demo_in_cluster runs the upgrade of $group ($target $opts) from a Job
# whose pod runs on system-0 (demo_kubelet), deletes the Job's pod in
# batch 2's post-drain wait (not mid-eviction: an eviction cut short may
# leave its PDB counting the pod as disrupted for 2 minutes), follows the
# run to its end as the next pod resumes it, then shows its report.
demo_in_cluster() {
  local flags="--in-cluster --image-ref kubectl-nodeupgrade:demo --job-node-selector $1=system"
  echo
  echo "== kubectl apply -f deploy/rbac.yaml -f deploy/in-cluster.yaml"
  kubectl apply -f deploy/rbac.yaml -f deploy/in-cluster.yaml
  echo
  echo "== kubectl nodeupgrade run $group $target $opts $flags --yes"
  start=$(date +%s)
  kubectl nodeupgrade run $group $target $opts $flags --yes >"$work/run.out" 2>&1 &
  local run_pid=$!
  tail -f "$work/run.out" --pid $run_pid &
  until grep -q 'phase Cordon, batch 2/' "$work/run.out"; do
    kill -0 $run_pid 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 $run_pid 2>/dev/null; then
    echo
    echo "== kubectl -n kube-system delete pod -l job-name=nodeupgrade-$group --wait=false (the run goes on in the Job's next pod)"
    kubectl -n kube-system delete pod -l "job-name=nodeupgrade-$group" --wait=false
  fi
  local code=0
  wait $run_pid || code=$?
  sleep 0.5 # tail's last lines
  echo "(the run took $(($(date +%s) - start)) s, exit $code; the pods' output: $work/kubelet.out)"
  echo
  echo "== kubectl nodeupgrade report $group"
  kubectl nodeupgrade report $group
  echo
  kubectl get nodes -L "$labels"
  kubectl -n kube-system get jobs,pods -l "job-name=nodeupgrade-$group"
  return $code
}
