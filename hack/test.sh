#!/usr/bin/env bash
# Runs every check and test: static checks, the plugin's unit tests with the
# race detector, and the end-to-end tests on the simulated cluster.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

# Karpenter (sim/karpenter) builds once per machine, in its own module
# graph, for minutes on a fresh one: beside the static checks and unit
# tests rather than inside the end-to-end tests' time limit.
karpenter_log=$(mktemp)
(cd sim && go run ./karpenter/build) >"$karpenter_log" 2>&1 &
karpenter_build=$!

step "gofmt"
unformatted=$(gofmt -l cmd internal pkg sim hack 2>/dev/null || true)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "go mod tidy is clean (plugin and sim modules)"
go mod tidy -diff
(cd sim && go mod tidy -diff)

step "go vet"
go vet ./...
(cd sim && go vet ./...)

step "staticcheck (default checks; both modules)"
# Pinned, and fetched through the module proxy like any dependency.
staticcheck=(go run honnef.co/go/tools/cmd/staticcheck@v0.8.2)
"${staticcheck[@]}" ./...
(cd sim && "${staticcheck[@]}" ./...)

step "unit tests (race detector)"
# The gate tests run the real Prometheus and Alertmanager: here they fail
# without them (.ci/run installs them), where a bare go test skips them.
export NODEUPGRADE_GATE_SERVERS=required
go test -race -count=1 ./...

step "the image builder (hack/image, its own module): two builds, one digest"
(cd hack/image && go mod tidy -diff && go vet ./... && GOWORK=off go test -count=1 ./...)

step "Karpenter for the simulated cluster"
wait "$karpenter_build" || { cat "$karpenter_log"; exit 1; }
cat "$karpenter_log"

step "end-to-end tests on the simulated cluster"
# The sim module embeds kube-apiserver and friends; its first build takes minutes.
# The e2e tests wait far more than they compute: each has its own node group,
# namespace and AWS endpoint, so four run at a time on the shared cluster.
(cd sim && go test -count=1 -timeout 60m -parallel 4 ./... "$@")

if [ -x hack/validate-krew.sh ] || [ -f hack/validate-krew.sh ]; then
  step "krew manifest"
  bash hack/validate-krew.sh
fi
echo
echo "all checks passed"
