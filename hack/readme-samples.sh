#!/usr/bin/env bash
# Regenerates the README's samples from a real run: starts the AWS demo
# (hack/demo.sh's), runs the README's commands with the demo's flags and
# puts their output into the README's ```text blocks that follow the
# markers "<!-- sample: plan -->", "<!-- sample: run -->" and
# "<!-- sample: status -->". The run is shortened to its first and last
# lines, with "..." between.
#
#   hack/readme-samples.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/demo-lib.sh
. hack/demo-lib.sh
demo_start "the simulated cluster, the local AWS endpoint and Auto Scaling group demo" --aws-demo
demo_aws_env

# The demo's flags, the same for the plan and the run (hack/demo.sh).
target="demo --ami ami-new --max-unavailable 2 --seed 1 --post-drain-wait 5s"
kubectl nodeupgrade plan $target >"$work/plan.txt"
kubectl nodeupgrade run $target --yes >"$work/run.out"
kubectl nodeupgrade status demo >"$work/status.txt"
# The run prints the plan first: the sample starts at its first event.
grep -E '^[0-9]{2}:[0-9]{2}:[0-9]{2} ' "$work/run.out" >"$work/events.txt"
{ head -n 16 "$work/events.txt"; echo "..."; tail -n 8 "$work/events.txt"; } >"$work/run.txt"

# replace_sample NAME FILE: the ```text block after NAME's marker gets FILE.
replace_sample() {
  awk -v marker="<!-- sample: $1 -->" -v file="$2" '
    $0 == marker { print; found = 1; next }
    found == 1 && $0 == "```text" { print; while ((getline line < file) > 0) print line; skip = 1; found = 2; next }
    skip && $0 == "```" { skip = 0 }
    !skip { print }
    END { if (found != 2) { print "no sample " marker > "/dev/stderr"; exit 1 } }
  ' README.md >"$work/README.md"
  mv "$work/README.md" README.md
}
replace_sample plan "$work/plan.txt"
replace_sample run "$work/run.txt"
replace_sample status "$work/status.txt"
echo "README.md: samples regenerated from $work"
