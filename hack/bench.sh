#!/usr/bin/env bash
# Benchmark of "kubectl nodeupgrade run" on the simulated cluster (not a test).
#
#   hack/bench.sh           the scenario of issue 11: 24 outdated + 6 current
#                           nodes over 3 zones, 24 Deployments x 20 replicas
#                           with PDB maxUnavailable 2, pods Ready 1 s after
#                           start and gone 1 s after their 1 s grace period
#                           (2 s after eviction). Times a
#                           sequential "kubectl drain" + "kubectl delete node"
#                           loop on one copy and "kubectl nodeupgrade run
#                           --provider none --max-unavailable 3
#                           --post-drain-wait 0s" on an identical second copy,
#                           and compares both with the scenario's lower bound.
#   hack/bench.sh --scale   200 nodes (150 outdated), 100 Deployments x 40
#                           replicas with PDBs, --max-unavailable 10: total
#                           time, the plugin's peak RSS, its API requests by
#                           verb and resource (from its -v=6 request log) and
#                           any client-side throttling wait it logged.
#   hack/bench.sh --plan-scale [NODES]
#                           "plan" and "check" on a read-only cluster of NODES
#                           nodes (default 5000) no kubelet manages, 30 pods
#                           per node bound by nodeName (PODS_PER_NODE), from
#                           Deployments of 100 replicas with PDBs: wall time,
#                           client CPU (user+sys), peak RSS and API requests
#                           of each, next to "kubectl get pods -A -o json" and
#                           "kubectl get nodes -o json" timed the same way,
#                           and to the floor under plan's CPU: the pods'
#                           list alone, asked for as the plugin asks and
#                           gunzipped, undecoded (simcluster list-pods).
#                           BENCH_KUBECONFIG measures a cluster already built
#                           (simcluster up --no-node-lifecycle, then
#                           simcluster scenario plan-scale; its --name in
#                           BENCH_GROUP, default plan-scale).
#   hack/bench.sh --plan-replay [NODES]
#                           the table of --plan-scale for the same cluster
#                           (NODES default 5000, PODS_PER_NODE 30) served by
#                           "simcluster replay plan-scale" instead of
#                           kube-apiserver: the objects scenario plan-scale
#                           would make, as kube-apiserver would list them,
#                           built in memory in a minute or two (the simulated
#                           control plane cannot hold 150,000 pods) and served
#                           read-only, each page encoded once (an unmeasured
#                           run of each command first fills that cache), over
#                           https and HTTP/2 as kube-apiserver (--tls: over
#                           plain http client-go would ask for gzip even with
#                           --disable-compression).
#   hack/bench.sh --make-room
#                           the same group (2 outdated + 2 current nodes, a
#                           Deployment of 1 replica, one of 3 with
#                           minAvailable 2, one an HPA scales at 2, and a
#                           StatefulSet) upgraded twice, on two identical
#                           copies: a plain run and a run --make-room; prints
#                           both times and the difference (the e2e test
#                           TestMakeRoomBench, on its own cluster).
#
# BENCH_CONTROLLER_QPS=N raises the simulated controller manager's client
# rate limit from upstream's 20 requests a second (burst 30) to N (burst
# 2N): at 20 the ReplicaSet controller replaces about 10 evicted pods a
# second, which paces both contenders of the first benchmark.
# BENCH_POD_READY=N makes pods Ready N s after they start, not 1 s (the
# lower bounds follow): readiness probes and minReadySeconds are often
# tens of seconds, and a batch's recovery waits for them.
# BENCH_RUNS=N times each command of the --plan-scale and --plan-replay
# tables N times, not 5, and prints the median and the range.
# BENCH_DIR keeps the work directory (binaries, cluster, logs); default a
# new temporary one. Needs kubectl, jq and GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."

scale=false
plan_scale=
plan_replay=
case "${1:-}" in
  "") ;;
  --scale) scale=true ;;
  --plan-scale) plan_scale=${2:-5000} ;;
  --plan-replay) plan_replay=${2:-5000} ;;
  --make-room)
    cd sim && MAKEROOM_BENCH=1 go test -count=1 -run 'TestMakeRoomBench$' ./e2e/ -v | grep 'bench:'
    exit "${PIPESTATUS[0]}" ;;
  *) echo "usage: hack/bench.sh [--scale | --plan-scale [NODES] | --plan-replay [NODES] | --make-room]" >&2; exit 2 ;;
esac
runs=${BENCH_RUNS:-5}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: BENCH_RUNS takes a number of runs from 1 on, not \"$runs\"" >&2; exit 2; }
for tool in kubectl jq /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "bench.sh needs $tool" >&2; exit 2; }
done

work=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/nodeupgrade-bench.XXXXXX")}
mkdir -p "$work/bin"
# simcluster up starts again the cluster its --dir holds: one an earlier run
# left in BENCH_DIR would come back with that run's nodes and pods
rm -rf "$work/cluster"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
load() { uptime | sed 's/.*load average: /load /'; }
log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

# measure LABEL CMD...: runs CMD (output discarded) $runs times under GNU
# time, then once more at -v=6 to count its API requests (client-go logs
# each response: 'verb="GET" url=' from the plugin, 'GET https://' from
# kubectl); prints one line of the table: the median wall and CPU time of
# the runs, the range of their CPU time (a 2-core machine shared with the
# API server varies by a quarter from run to run), the largest peak RSS.
# With measure_warm set, CMD runs once unmeasured first (the replay
# encodes each page at its first request).
measure() {
  local label=$1; shift
  local start end i rc=0 samples=
  [[ -z ${measure_warm:-} ]] || "$@" >/dev/null 2>&1 || true
  for ((i = 0; i < runs; i++)); do
    start=$(now)
    # check exits non-zero when it finds a blocker: the exit code is printed
    rc=0
    /usr/bin/time -v -o "$work/measure.time" "$@" >/dev/null 2>"$work/measure.err" || rc=$?
    end=$(now)
    grep -q 'Maximum resident set size' "$work/measure.time" || { log "$* failed:"; tail -5 "$work/measure.err" >&2; exit 1; }
    samples+=$(awk -F': ' -v wall="$(secs "$start" "$end")" '
      /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident set size/ { rss = $2 / 1024 }
      END { printf "%s %.2f %.0f\n", wall, u + s, rss }' "$work/measure.time")$'\n'
  done
  "$@" -v=6 >/dev/null 2>"$work/measure-v6.err" || true
  printf '%s' "$samples" | awk -v label="$label" -v rc="$rc" \
    -v reqs="$(grep -cE 'verb="[A-Z]+" url=|\] (GET|POST|PUT|PATCH|DELETE) https?://' "$work/measure-v6.err")" '
    { wall[NR] = $1; cpu[NR] = $2; if ($3 > rss) rss = $3 }
    function median(a, n,   i, j, t) {
      for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
      return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
    }
    END {
      w = median(wall, NR); c = median(cpu, NR)
      printf "%-44s %7.1f s %7.2f s  %4.2f-%4.2f s %8.0f MiB %6d   exit %d\n", label, w, c, cpu[1], cpu[NR], rss, reqs, rc
    }'
}

# count RESOURCE: how many objects of RESOURCE the cluster holds, from a
# list of one (listing them all, kubectl would hold them all).
count() {
  kubectl get --raw "/api/v1/$1?limit=1" | jq '(.items | length) + (.metadata.remainingItemCount // 0)'
}

# plan_table SERVER: the table of --plan-scale and --plan-replay, of the
# cluster $KUBECONFIG points at, whose API server SERVER describes.
plan_table() {
  local nodes pods free_kib group=${BENCH_GROUP:-plan-scale}
  local flags=(--provider none --target-label eks.amazonaws.com/nodegroup-image=ami-new)
  nodes=$(count nodes) pods=$(count pods)
  cat <<EOF

== plan at scale: $nodes nodes, $pods pods, served by $1 ($(load))
(median of $runs runs each; BENCH_RUNS=N for another number)
                                             wall        CPU   CPU range     peak RSS  requests
EOF
  measure "kubectl nodeupgrade plan -o json" kubectl-nodeupgrade plan "$group" "${flags[@]}" -o json
  # kubectl's own flag: the client skips gunzipping, but decrypting and
  # reading the 12 times larger bodies costs it as much CPU, on loopback too
  measure "  ... --disable-compression" kubectl-nodeupgrade plan "$group" "${flags[@]}" -o json --disable-compression
  # the floor under plan's CPU: the same pods asked for as the plugin asks
  # (protobuf, gzip), in one list, gunzipped and thrown away undecoded
  measure "  the pods' list alone (list-pods)" simcluster list-pods
  measure "kubectl nodeupgrade check" kubectl-nodeupgrade check "$group" "${flags[@]}"
  # kubectl holds about 0.3 MiB a pod it lists (6,000 pods: 1.7 GiB peak
  # RSS): past half the free memory its row is left out, lest the OOM
  # killer pick a process
  free_kib=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
  if (( pods * 300 < free_kib / 2 )); then
    measure "kubectl get pods -A -o json" kubectl get pods -A -o json
  else
    printf "%-44s left out: it would hold about %d GiB, %d GiB are free\n" "kubectl get pods -A -o json" $((pods * 300 / 1048576)) $((free_kib / 1048576))
  fi
  measure "kubectl get nodes -o json" kubectl get nodes -o json
  echo "(CPU: user+sys of the client; targets for plan at 5,000 nodes / 150,000 pods: < 2 s CPU, < 600 MiB;"
  echo " what plan spends beyond the pods' list alone is its own: decoding, planning, printing)"
  kubectl-nodeupgrade plan "$group" "${flags[@]}" -o json --cpuprofile "$work/plan-cpu.pprof" --memprofile "$work/plan-heap.pprof" >/dev/null
  echo "profiles of one more plan: $work/plan-cpu.pprof, $work/plan-heap.pprof (go tool pprof -top $work/bin/kubectl-nodeupgrade FILE)"
}

if [[ -n $plan_scale || -n $plan_replay ]]; then
  mode=--plan-scale want=$plan_scale
  [[ -z $plan_replay ]] || mode=--plan-replay want=$plan_replay
  [[ $want =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: $mode takes a number of nodes, not \"$want\"" >&2; exit 2; }
  per_node=${PODS_PER_NODE:-30}
  log "building the plugin and simcluster in $work"
  go build -o "$work/bin/kubectl-nodeupgrade" ./cmd/kubectl-nodeupgrade
  (cd sim && go build -o "$work/bin/simcluster" ./cmd/simcluster)
  export PATH="$work/bin:$PATH"
fi

# start_until_ready PREFIX CMD...: runs CMD in the background (stdout in
# PREFIX.out, stderr in PREFIX.log) until the script exits, and waits for
# its "ready" line.
start_until_ready() {
  local prefix=$1; shift
  "$@" >"$prefix.out" 2>"$prefix.log" &
  local pid=$!
  trap "kill $pid 2>/dev/null || true; wait 2>/dev/null || true" EXIT
  until grep -q '^ready ' "$prefix.out" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || { cat "$prefix.log" >&2; exit 1; }
    sleep 0.2
  done
}

if [[ -n $plan_replay ]]; then
  log "building the replay of $plan_replay nodes and $((plan_replay * per_node)) pods in memory (a minute or two at 5,000 nodes), then serving it"
  start_until_ready "$work/replay" simcluster replay plan-scale --name plan-scale --nodes "$plan_replay" --pods-per-node "$per_node" --tls \
    --kubeconfig-out "$work/replay.kubeconfig"
  grep '^simcluster: replaying' "$work/replay.log" >&2
  export KUBECONFIG=$work/replay.kubeconfig
  measure_warm=1 BENCH_GROUP=plan-scale plan_table "the replay, not kube-apiserver (simcluster replay plan-scale --tls: read-only, from memory; requests in $work/replay.log)"
  exit 0
fi

if [[ -n $plan_scale ]]; then
  if [[ -n ${BENCH_KUBECONFIG:-} ]]; then
    export KUBECONFIG=$BENCH_KUBECONFIG
  else
    log "starting the simulated cluster without the node lifecycle controller (nothing heartbeats the nodes)"
    start_until_ready "$work/simcluster" simcluster up --dir "$work/cluster" --no-node-lifecycle
    export KUBECONFIG=$work/cluster/kubeconfig
    log "building $plan_scale nodes and $((plan_scale * per_node)) pods (minutes: two writes per object)"
    simcluster scenario plan-scale --kubeconfig "$KUBECONFIG" --name plan-scale --nodes "$plan_scale" --pods-per-node "$per_node" >&2
  fi
  plan_table "kube-apiserver (simcluster up)"
  exit 0
fi

log "building the plugin and the simulated cluster in $work (the cluster's first build takes minutes)"
go build -o "$work/bin/kubectl-nodeupgrade" ./cmd/kubectl-nodeupgrade
(cd sim && go build -o "$work/bin/simcluster" ./cmd/simcluster)
export PATH="$work/bin:$PATH"

ready_delay=${BENCH_POD_READY:-1}
[[ $ready_delay =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: BENCH_POD_READY takes a whole number of seconds from 1 on, not \"$ready_delay\"" >&2; exit 2; }
controller_qps=${BENCH_CONTROLLER_QPS:-0}
[[ $controller_qps =~ ^[0-9]+$ ]] || { echo "bench.sh: BENCH_CONTROLLER_QPS takes a number of requests per second, not \"$controller_qps\"" >&2; exit 2; }
qps_label=$controller_qps; [[ $controller_qps != 0 ]] || qps_label="20, upstream's default"
log "starting the simulated cluster (pods Ready $ready_delay s after start, gone 1 s after eviction; controller manager QPS $qps_label)"
simcluster up --dir "$work/cluster" --pod-ready-delay "${ready_delay}s" --controller-qps "$controller_qps" >"$work/simcluster.out" 2>"$work/simcluster.log" &
sim_pid=$!
watchers=()
cleanup() {
  for p in "${watchers[@]}"; do kill "$p" 2>/dev/null || true; done
  kill "$sim_pid" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT
until grep -q '^ready ' "$work/simcluster.out" 2>/dev/null; do
  kill -0 "$sim_pid" 2>/dev/null || { cat "$work/simcluster.log" >&2; exit 1; }
  sleep 0.2
done
export KUBECONFIG=$work/cluster/kubeconfig
group_key=eks.amazonaws.com/nodegroup
target=eks.amazonaws.com/nodegroup-image=ami-new

# watch NS: records the PDB violations of namespace NS until stopped.
watch() {
  simcluster watch-pdbs --kubeconfig "$KUBECONFIG" --namespace "$1" >"$work/pdbs-$1.out" 2>&1 &
  watchers+=($!)
  until grep -q '^watching' "$work/pdbs-$1.out"; do sleep 0.1; done
}
violations() { sed -n 's/^pdb violations: //p' "$work/pdbs-$1.out"; }

# lower_bound PLAN_JSON MAX_UNAVAILABLE_PER_PDB: the seconds the PDBs and
# the pod delays force on the plan's batches, with API, controller,
# scheduling and PDB status latency counted as zero: the earliest schedule
# of this model, played out batch by batch. A batch starts when the one
# before it is drained. Each app may have MAX_UNAVAILABLE_PER_PDB pods
# down at once, and an evicted pod is down until its replacement is
# Ready, $ready_delay s after the eviction; its pod is gone 2 s after
# the eviction (the pods' 1 s grace period sets deletionTimestamp, which
# the simulated kubelet honours 1 s later), and a batch is drained when
# its last evicted pod is gone. Each pod is evicted as soon as its batch
# has started and its app has a pod to spare: no eviction can come
# sooner, and none coming sooner makes a later one come later, so no
# schedule ends earlier. The run ends when the last replacement is
# Ready. With pods Ready more than 2 s after they start, an app's last
# evictions in a batch are still down when the next batch starts, and
# hold up that batch's evictions of the same app: summing each batch on
# its own would miss that.
lower_bound() {
  jq --argjson mu "$2" --argjson ready "$ready_delay" '
    reduce (.batches[] | [.nodes[].pods[] | sub("^[^/]*/"; "") | sub("-[^-]+-[^-]+$"; "")]
        | group_by(.) | map({app: .[0], pods: length})) as $batch
      ({drained: 0, spare: {}};
       .drained as $start
       | reduce $batch[] as $app (.;
           reduce range($app.pods) as $_ (.;
             ((.spare[$app.app] // [range($mu) | 0]) | sort) as $slots
             | ([$start, $slots[0]] | max) as $evicted
             | .spare[$app.app] = ($slots[1:] + [$evicted + $ready])
             | .drained = ([.drained, $evicted + 2] | max))))
    | [.drained, .spare[][]] | max' "$1"
}

# run_plugin NAME ARGS...: times "kubectl nodeupgrade run NAME ARGS" under GNU
# time; output in $work/run-NAME.{out,err,time}.
run_plugin() {
  local name=$1; shift
  local start end
  start=$(now)
  if ! /usr/bin/time -v -o "$work/run-$name.time" kubectl-nodeupgrade run "$name" --provider none \
    --target-label "$target" --post-drain-wait 0s --seed 1 --yes "$@" >"$work/run-$name.out" 2>"$work/run-$name.err"; then
    log "kubectl nodeupgrade run $name failed:"; tail -20 "$work/run-$name.out" "$work/run-$name.err" >&2; exit 1
  fi
  end=$(now)
  run_secs=$(secs "$start" "$end")
  run_rss=$(awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$work/run-$name.time")
}

if ! $scale; then
  log "building two identical copies of the scenario: bench-loop and bench-run"
  for name in bench-loop bench-run; do
    simcluster scenario bench --kubeconfig "$KUBECONFIG" --name "$name" --outdated 24 --current 6 --apps 24 --replicas 20 --max-unavailable 2 >&2
  done
  watch bench-loop
  watch bench-run

  log "drain loop on bench-loop"
  loop_load=$(load)
  start=$(now)
  for node in $(kubectl get nodes -l "$group_key=bench-loop,eks.amazonaws.com/nodegroup-image=ami-old" -o jsonpath='{.items[*].metadata.name}'); do
    kubectl drain "$node" --ignore-daemonsets --delete-emptydir-data >>"$work/drain-loop.log" 2>&1
    kubectl delete node "$node" >>"$work/drain-loop.log" 2>&1
  done
  loop_secs=$(secs "$start" "$(now)")

  log "kubectl nodeupgrade run on bench-run"
  kubectl-nodeupgrade plan bench-run --provider none --target-label "$target" --max-unavailable 3 --seed 1 -o json >"$work/plan-bench-run.json"
  batches=$(jq '.batches | length' "$work/plan-bench-run.json")
  bound=$(lower_bound "$work/plan-bench-run.json" 2)
  # No tool replaces pods faster than the ReplicaSet controller makes
  # them: upstream's controller manager client sends 20 requests a second
  # after a burst of 30 (BENCH_CONTROLLER_QPS=N: N after 2N).
  evicted=$(jq '[.batches[].nodes[].pods | length] | add' "$work/plan-bench-run.json")
  controller_rate=20; controller_burst=30
  [[ $controller_qps == 0 ]] || { controller_rate=$controller_qps; controller_burst=$((2 * controller_qps)); }
  paced=$(awk -v p="$evicted" -v r="$controller_rate" -v b="$controller_burst" 'BEGIN { x = (2 * p - b) / r; printf "%.0f", (x > 0 ? x : 0) }')
  bound_paced=$(( paced > bound ? paced : bound ))
  run_load=$(load)
  run_plugin bench-run --max-unavailable 3
  kill "${watchers[@]}"; wait "${watchers[@]}" 2>/dev/null || true; watchers=()

  cat <<EOF

== scenario: 24 outdated + 6 current nodes over 3 zones, 24 Deployments x 20 replicas, PDB maxUnavailable 2,
   pods Ready $ready_delay s after start and gone 1 s after their 1 s grace period (two identical copies, one per contender),
   controller manager QPS $qps_label
kubectl drain + kubectl delete node, node by node:                    $loop_secs s   ($loop_load)
kubectl nodeupgrade run --max-unavailable 3 --post-drain-wait 0s:     $run_secs s   ($run_load), peak RSS $run_rss MiB
speed-up over the drain loop:                                         $(awk -v a="$loop_secs" -v b="$run_secs" 'BEGIN { printf "%.2f", a / b }')x   (target >= 3x)
lower bound:                                                          $bound s
  = the earliest schedule of the plan's $batches batches: each starts once the one before is drained,
    each app has at most 2 pods down at once (its PDB), an evicted pod is down until its replacement
    is Ready $ready_delay s later and gone 2 s after eviction (1 s grace period, then 1 s), every pod is
    evicted as soon as both allow, and the run ends when the last replacement is Ready; API,
    controller, scheduling and PDB status latency count as zero
nodeupgrade / lower bound:                                            $(awk -v a="$run_secs" -v b="$bound" 'BEGIN { printf "%.2f", a / b }')x   (target <= 1.3x)
the ReplicaSet controller's pace:                                     $paced s
  = (2 requests x $evicted replacements - its burst of $controller_burst) / its $controller_rate requests a second:
    each replacement costs the controller manager's client its create and its Event
lower bound with the controller's pace:                               $bound_paced s
nodeupgrade / that bound:                                             $(awk -v a="$run_secs" -v b="$bound_paced" 'BEGIN { printf "%.2f", a / b }')x
PDB violations seen (drain loop / nodeupgrade):                       $(violations bench-loop) / $(violations bench-run)
EOF
  exit 0
fi

log "building the scale scenario: 150 outdated + 50 current nodes, 100 Deployments x 40 replicas (PDB maxUnavailable 2)"
simcluster scenario bench --kubeconfig "$KUBECONFIG" --name scale --timeout 40m --outdated 150 --current 50 --apps 100 --replicas 40 --max-unavailable 2 >&2
watch scale
kubectl-nodeupgrade plan scale --provider none --target-label "$target" --max-unavailable 10 --seed 1 -o json >"$work/plan-scale.json"
batches=$(jq '.batches | length' "$work/plan-scale.json")
bound=$(lower_bound "$work/plan-scale.json" 2)
log "kubectl nodeupgrade run on scale, -v=6 (every request logged)"
run_load=$(load)
run_plugin scale --max-unavailable 10 -v=6
kill "${watchers[@]}"; wait "${watchers[@]}" 2>/dev/null || true; watchers=()

# client-go logs each response at -v=6 as verb="GET" url="https://...".
requests=$work/requests-scale.txt
sed -n 's/.*verb="\([A-Z]*\)" url="\([^"]*\)".*/\1 \2/p' "$work/run-scale.err" | awk '
  {
    verb = $1; url = $2; q = ""
    i = index(url, "?"); if (i) { q = substr(url, i + 1); url = substr(url, 1, i - 1) }
    sub(/^https?:\/\/[^\/]*/, "", url)
    n = split(url, p, "/")
    # /api/v1/... or /apis/GROUP/VERSION/...; skip namespaces/NS
    j = (p[2] == "api") ? 4 : 5
    if (p[j] == "namespaces" && n > j + 1) j += 2
    res = p[j]; if (n >= j + 2) res = res "/" p[j + 2]
    if (verb == "GET" && q ~ /(^|&)watch=true/) verb = "WATCH"
    else if (verb == "GET" && n == j) verb = "LIST"
    print verb, res
  }' | sort | uniq -c | sort -rn >"$requests"
total=$(awk '{ s += $1 } END { print s + 0 }' "$requests")
throttled=$(grep -c 'client-side throttling' "$work/run-scale.err" || true)

cat <<EOF

== scale: 150 outdated + 50 current nodes over 3 zones, 100 Deployments x 40 replicas (4,000 pods), PDB maxUnavailable 2
kubectl nodeupgrade run --max-unavailable 10 --post-drain-wait 0s -v=6:  $run_secs s  ($run_load), $batches batches
lower bound (as for the small scenario):                                 $bound s
peak RSS of the plugin:                                                  $run_rss MiB   (target < 300 MiB)
client-side throttling waits logged (over 50 ms):                        $throttled
PDB violations seen:                                                     $(violations scale)
API requests of the plugin: $total in all, $(awk -v t="$total" -v b="$batches" 'BEGIN { printf "%.1f", t / b }') per batch; by verb and resource (all, per batch):
$(awk -v b="$batches" '{ printf "  %7d %8.1f  %s %s\n", $1, $1 / b, $2, $3 }' "$requests")
EOF
