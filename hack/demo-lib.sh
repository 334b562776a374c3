# Sourced by the demo scripts: demo_start WHAT FLAGS... builds the plugin
# and simcluster into $work/bin, starts (saying "starting WHAT")
# "simcluster up --dir $work/cluster FLAGS..." in the background (stopped when the script exits) and waits
# for its "ready ..." line, which it leaves in $ready, with KUBECONFIG set.
work=${DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/nodeupgrade-demo.XXXXXX")}

demo_start() {
  mkdir -p "$work/bin"
  echo "== building (the simulated cluster's first build takes a few minutes)"
  go build -o "$work/bin/kubectl-nodeupgrade" ./cmd/kubectl-nodeupgrade
  (cd sim && go build -o "$work/bin/simcluster" ./cmd/simcluster)
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
