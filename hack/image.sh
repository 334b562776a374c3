#!/usr/bin/env bash
# Builds the plugin's container image, the one "run --in-cluster" runs, as
# an OCI image layout, with no Docker daemon and no network once the Go
# modules are in the module cache.
#
#   hack/image.sh VERSION [OUTDIR]
#       Writes OUTDIR/image (default: dist/image in the repository), an
#       OCI image layout holding the image index of VERSION for linux/amd64
#       and linux/arm64, and prints the index's digest. The image is the
#       static plugin built as the release's archives are (CGO_ENABLED=0,
#       -trimpath, VERSION stamped), root certificates and a non-root user
#       on an empty base, every time fixed: the same source tree and Go
#       toolchain give the same digest (hack/image/main_test.go builds it
#       twice). Set PLATFORMS=linux/amd64 to build fewer.
#
# Publish the layout with any OCI tool, for example
#   crane push dist/image ghcr.io/nodeupgrade/kubectl-nodeupgrade:VERSION
#   skopeo copy --all oci:dist/image docker://ghcr.io/nodeupgrade/kubectl-nodeupgrade:VERSION
# the reference "run --in-cluster" uses by default (--image-ref).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() { echo "image.sh: $*" >&2; exit 1; }

[[ $# -ge 1 && $# -le 2 && ${1:-} != -* ]] || { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2; exit 2; }
VERSION=$1
[[ $VERSION =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]] ||
	die "VERSION must be a semantic version with a leading v, such as v0.1.0 (got '$VERSION')"
OUTDIR=${2:-$ROOT/dist}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)

cd "$ROOT/hack/image"
export GOWORK=off GOFLAGS=-buildvcs=false TZ=UTC LC_ALL=C
go run . -root "$ROOT" -version "$VERSION" -out "$OUTDIR/image" -platforms "${PLATFORMS:-linux/amd64,linux/arm64}"
echo "image.sh: OCI image layout of $VERSION in $OUTDIR/image" >&2
