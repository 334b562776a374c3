#!/usr/bin/env bash
# Builds the release archives of kubectl-nodeupgrade and renders its krew
# manifest.
#
#   hack/release.sh VERSION [OUTDIR]
#       Cross-builds kubectl-nodeupgrade for linux, darwin and windows on
#       amd64 and arm64, packs each binary with LICENSE (and, on linux and
#       darwin, the shell completion script kubectl_complete-nodeupgrade from
#       completion/) into a deterministic archive in OUTDIR (default: dist/
#       in the repository), writes
#       OUTDIR/sha256sums.txt, the plugin's image as an OCI layout in
#       OUTDIR/image (hack/image.sh; its digest in OUTDIR/image-digest.txt),
#       and renders krew.yaml for VERSION with those
#       sha256s into plugins.yaml at the repository root (and a copy in
#       OUTDIR/nodeupgrade.yaml).
#       Set PLUGINS_YAML=path to write the manifest elsewhere (e.g. /dev/null).
#
#   hack/release.sh --render-manifest VERSION SHA256SUMS
#       Only renders krew.yaml to stdout, the way krew-release-bot does for
#       tag VERSION, taking each archive's sha256 from SHA256SUMS (lines of
#       "<sha256>  <archive file name>", as written by sha256sum).
#       hack/validate-krew.sh uses this to check plugins.yaml against krew.yaml.
#
# The archives are byte-for-byte reproducible for a given source tree, Go
# toolchain, gzip and zip: the binaries are built with -trimpath and without
# VCS stamping, and the archives carry fixed owners, modes and times.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODULE=github.com/nodeupgrade/kubectl-nodeupgrade
NAME=kubectl-nodeupgrade
# kubectl runs kubectl_complete-<plugin> from PATH for the plugin's completion.
COMPLETION=kubectl_complete-nodeupgrade
PLATFORMS=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64)

die() { echo "release.sh: $*" >&2; exit 1; }

usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
}

check_version() {
	[[ $1 =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]] ||
		die "VERSION must be a semantic version with a leading v, such as v0.1.0 (got '$1')"
}

# render_manifest VERSION SHA256SUMS: krew.yaml with {{ .TagName }} replaced by
# VERSION and each {{addURIAndSha "URL" .TagName }} by "uri: URL" and, on the
# next line with the bot's fixed 4-space indent, "sha256: <sha of URL's file>".
render_manifest() {
	local version=$1 sums=$2
	[[ -f $sums ]] || die "no sha256 list: $sums"
	awk -v version="$version" '
		function subst_tag(s,    out, i) {
			out = ""
			while ((i = index(s, "{{ .TagName }}")) > 0) {
				out = out substr(s, 1, i - 1) version
				s = substr(s, i + 14)
			}
			return out s
		}
		FNR == NR {
			if (NF != 2 || $1 !~ /^[0-9a-f]+$/ || length($1) != 64) {
				printf "release.sh: bad line %d in sha256 list: %s\n", FNR, $0 > "/dev/stderr"; bad = 1; exit 1
			}
			f = $2; sub(/^\*/, "", f); sha[f] = $1; next
		}
		{
			line = $0
			if (match(line, /\{\{ *addURIAndSha "[^"]*" *\.TagName *\}\}/)) {
				call = substr(line, RSTART, RLENGTH)
				pre = substr(line, 1, RSTART - 1); post = substr(line, RSTART + RLENGTH)
				q1 = index(call, "\""); rest = substr(call, q1 + 1); url = substr(rest, 1, index(rest, "\"") - 1)
				url = subst_tag(url)
				file = url; sub(/.*\//, "", file)
				if (!(file in sha)) {
					printf "release.sh: krew.yaml line %d: no sha256 for %s\n", FNR, file > "/dev/stderr"; bad = 1; exit 1
				}
				line = pre "uri: " url "\n    sha256: " sha[file] post
			}
			line = subst_tag(line)
			if (index(line, "{{") || index(line, "}}")) {
				printf "release.sh: krew.yaml line %d: unsupported template syntax: %s\n", FNR, $0 > "/dev/stderr"; bad = 1; exit 1
			}
			print line
		}
		END { if (bad) exit 1 }
	' "$sums" "$ROOT/krew.yaml"
}

if [[ ${1:-} == --render-manifest ]]; then
	[[ $# -eq 3 ]] || usage
	check_version "$2"
	render_manifest "$2" "$3"
	exit
fi
[[ $# -ge 1 && $# -le 2 && ${1:-} != -* ]] || usage

VERSION=$1
check_version "$VERSION"
OUTDIR=${2:-$ROOT/dist}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
PLUGINS_YAML=${PLUGINS_YAML:-$ROOT/plugins.yaml}

if ! command -v zip >/dev/null; then
	echo "release.sh: zip not found, installing it with apt-get" >&2
	if [[ $(id -u) -eq 0 ]]; then SUDO=(); else SUDO=(sudo); fi
	"${SUDO[@]}" apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq zip >/dev/null
fi

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT

cd "$ROOT"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOWORK=off TZ=UTC LC_ALL=C
ARCHIVES=()
for platform in "${PLATFORMS[@]}"; do
	os=${platform%/*} arch=${platform#*/}
	bin=$NAME
	[[ $os == windows ]] && bin=$NAME.exe
	dir=$STAGE/${os}_$arch
	mkdir -p "$dir"
	echo "building $os/$arch" >&2
	GOOS=$os GOARCH=$arch go build -trimpath \
		-ldflags "-s -w -X $MODULE/pkg/plugin.Version=$VERSION" \
		-o "$dir/$bin" ./cmd/kubectl-nodeupgrade
	cp LICENSE "$dir/LICENSE"
	chmod 0755 "$dir/$bin"
	chmod 0644 "$dir/LICENSE"
	files=(LICENSE "$bin")
	if [[ $os != windows ]]; then
		cp "completion/$COMPLETION" "$dir/$COMPLETION"
		chmod 0755 "$dir/$COMPLETION"
		files+=("$COMPLETION")
	fi
	if [[ $os == windows ]]; then
		archive=${NAME}_${os}_$arch.zip
		# zip stores DOS times, which start in 1980; -X leaves out uid/gid and
		# extra timestamps.
		touch -d '1980-01-01 00:00:00' "${files[@]/#/$dir/}"
		rm -f "$OUTDIR/$archive"
		(cd "$dir" && zip -q -X -9 "$OUTDIR/$archive" "${files[@]}")
	else
		archive=${NAME}_${os}_$arch.tar.gz
		tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=gnu \
			-C "$dir" -cf - "${files[@]}" | gzip -n -9 >"$OUTDIR/$archive"
	fi
	ARCHIVES+=("$archive")
done

(cd "$OUTDIR" && sha256sum "${ARCHIVES[@]}") >"$OUTDIR/sha256sums.txt"
render_manifest "$VERSION" "$OUTDIR/sha256sums.txt" >"$OUTDIR/nodeupgrade.yaml"
if [[ $PLUGINS_YAML != /dev/null ]]; then
	cp "$OUTDIR/nodeupgrade.yaml" "$PLUGINS_YAML"
fi

# The image "run --in-cluster" runs by default, as an OCI layout beside
# the archives (hack/image.sh; push it with crane or skopeo).
"$ROOT/hack/image.sh" "$VERSION" "$OUTDIR" >"$OUTDIR/image-digest.txt"

cat "$OUTDIR/sha256sums.txt"
echo "release.sh: archives in $OUTDIR, manifest for $VERSION written to $PLUGINS_YAML" >&2
