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
