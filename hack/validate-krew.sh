#!/usr/bin/env bash
# Validates the krew plugin manifest plugins.yaml.
#
#   hack/validate-krew.sh [--archives DIR]
#
# 1. krew's own validator (sigs.k8s.io/krew/cmd/validate-krew-manifest, built
#    from the Go module proxy) checks plugins.yaml as the krew-index CI does,
#    with -skip-install: its install check downloads the release archives.
# 2. Checks the validator leaves out: the manifest decodes strictly (no
#    unknown or misspelt fields), it is named nodeupgrade, has exactly the six
#    platforms linux, darwin, windows x amd64, arm64 with the release URIs of
#    its version, well-formed distinct sha256s, the right bin, and files that
#    install the binary and LICENSE (and on linux and darwin the shell
#    completion script kubectl_complete-<plugin>).
# 3. krew.yaml, the krew-release-bot template, rendered for the manifest's
#    version with the manifest's sha256s (hack/release.sh --render-manifest),
#    must equal plugins.yaml, so that the two cannot drift apart.
# 4. With --archives DIR (the OUTDIR of hack/release.sh), also checks each
#    archive in DIR against the manifest: its sha256, that it holds exactly
#    the binary, built for its platform, LICENSE and (but on windows) the
#    executable completion script, and that krew itself
#    installs it offline (krew install --manifest --archive, per platform).
#
# Needs only Go and the Go module proxy. Exits non-zero on any problem.
set -euo pipefail

KREW_VERSION=v0.4.4 # v0.4.5 is not served by the module proxy
PLUGIN=nodeupgrade
REPO_URL=https://github.com/nodeupgrade/kubectl-nodeupgrade

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ARCHIVES=
while [[ $# -gt 0 ]]; do
	case $1 in
	--archives) [[ $# -ge 2 ]] || { echo "validate-krew.sh: --archives needs a directory" >&2; exit 2; }
		ARCHIVES=$(cd "$2" && pwd); shift 2 ;;
	--archives=*) ARCHIVES=$(cd "${1#*=}" && pwd); shift ;;
	-h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
	*) echo "validate-krew.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done

MANIFEST=$ROOT/plugins.yaml
TEMPLATE=$ROOT/krew.yaml
for f in "$MANIFEST" "$TEMPLATE" "$ROOT/LICENSE" "$ROOT/hack/release.sh"; do
	[[ -f $f ]] || { echo "validate-krew.sh: missing $f" >&2; exit 1; }
done

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }

# --- build krew's validator (and krew, for --archives) and our checker ------
mkdir -p "$TMP/tools/check" "$TMP/bin"
cat >"$TMP/tools/go.mod" <<EOF
module nodeupgrade.invalid/krewcheck

go 1.22

require sigs.k8s.io/krew $KREW_VERSION
EOF
{
	echo '//go:build tools'
	echo
	echo 'package tools'
	echo
	echo 'import _ "sigs.k8s.io/krew/cmd/validate-krew-manifest"'
	[[ -z $ARCHIVES ]] || echo 'import _ "sigs.k8s.io/krew/cmd/krew"'
} >"$TMP/tools/tools.go"
cat >"$TMP/tools/check/main.go" <<'EOF'
// check holds the manifest checks that validate-krew-manifest leaves out.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/krew/pkg/index"
	"sigs.k8s.io/yaml"
)

var (
	manifest = flag.String("manifest", "", "plugin manifest")
	name     = flag.String("name", "", "expected plugin name")
	repo     = flag.String("repo", "", "expected homepage, and prefix of the release URIs")
	license  = flag.String("license", "", "LICENSE file the archives must hold")
	archives = flag.String("archives", "", "directory with the release archives to check (optional)")
	sumsOut  = flag.String("sums-out", "", "write '<sha256>  <archive>' lines here")
	verOut   = flag.String("version-out", "", "write the manifest's version here")

	errs []string
)

func fail(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }

var (
	semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)
	sha    = regexp.MustCompile(`^[a-f0-9]{64}$`)
	// The platforms every release must cover, with their executable format.
	want = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"}
)

func main() {
	flag.Parse()
	b, err := os.ReadFile(*manifest)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var p index.Plugin
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %s does not decode strictly as a krew Plugin: %v\n", *manifest, err)
		os.Exit(1)
	}
	check(p)
	if len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintln(os.Stderr, "FAIL: "+e)
		}
		os.Exit(1)
	}
}

func check(p index.Plugin) {
	if p.Name != *name {
		fail("metadata.name is %q, want %q", p.Name, *name)
	}
	if !semver.MatchString(p.Spec.Version) {
		fail("spec.version %q is not a version such as v0.1.0", p.Spec.Version)
	}
	if p.Spec.Homepage != *repo {
		fail("spec.homepage is %q, want %q", p.Spec.Homepage, *repo)
	}
	if strings.TrimSpace(p.Spec.ShortDescription) == "" || strings.TrimSpace(p.Spec.Description) == "" {
		fail("spec.shortDescription and spec.description must be set")
	}
	if len(p.Spec.ShortDescription) > 50 {
		fail("spec.shortDescription is %d characters long: krew-index asks for at most 50", len(p.Spec.ShortDescription))
	}
	seen := map[string]int{}
	shas := map[string]string{}
	var sums []string
	for i, pl := range p.Spec.Platforms {
		where := fmt.Sprintf("spec.platforms[%d]", i)
		if pl.Selector == nil || len(pl.Selector.MatchExpressions) != 0 || len(pl.Selector.MatchLabels) != 2 ||
			pl.Selector.MatchLabels["os"] == "" || pl.Selector.MatchLabels["arch"] == "" {
			fail("%s: selector must be exactly matchLabels {os, arch}", where)
			continue
		}
		goos, goarch := pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]
		plat := goos + "/" + goarch
		where += " (" + plat + ")"
		if j, dup := seen[plat]; dup {
			fail("%s: same platform as spec.platforms[%d]", where, j)
		}
		seen[plat] = i
		bin, ext := "kubectl-"+*name, ".tar.gz"
		if goos == "windows" {
			bin, ext = bin+".exe", ".zip"
		}
		archive := fmt.Sprintf("kubectl-%s_%s_%s%s", *name, goos, goarch, ext)
		if uri := fmt.Sprintf("%s/releases/download/%s/%s", *repo, p.Spec.Version, archive); pl.URI != uri {
			fail("%s: uri is %q, want %q", where, pl.URI, uri)
		}
		if !sha.MatchString(pl.Sha256) {
			fail("%s: sha256 %q is not 64 lower-case hex digits", where, pl.Sha256)
		} else if other, dup := shas[pl.Sha256]; dup {
			fail("%s: same sha256 as %s", where, other)
		}
		shas[pl.Sha256] = plat
		sums = append(sums, pl.Sha256+"  "+path.Base(pl.URI))
		if pl.Bin != bin {
			fail("%s: bin is %q, want %q", where, pl.Bin, bin)
		}
		files := map[string]string{}
		for _, f := range pl.Files {
			files[f.From] = f.To
		}
		completion := ""
		if goos != "windows" {
			completion = "kubectl_complete-" + *name
		}
		if want := len(archiveFiles(bin, completion)); len(pl.Files) != want || files[bin] != "." || files["LICENSE"] != "." || completion != "" && files[completion] != "." {
			fail("%s: files must be exactly {from: X, to: .} for each of %v", where, archiveFiles(bin, completion))
		}
		if *archives != "" {
			checkArchive(where, filepath.Join(*archives, archive), pl.Sha256, goos, goarch, bin, completion)
		}
	}
	var missing []string
	for _, w := range want {
		if _, ok := seen[w]; !ok {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		fail("no spec.platforms entry for %s", strings.Join(missing, ", "))
	}
	if len(seen) != len(want) {
		fail("%d platforms, want exactly %d: %v", len(p.Spec.Platforms), len(want), want)
	}
	sort.Strings(sums)
	if *sumsOut != "" {
		if err := os.WriteFile(*sumsOut, []byte(strings.Join(sums, "\n")+"\n"), 0o644); err != nil {
			fail("%v", err)
		}
	}
	if *verOut != "" {
		if err := os.WriteFile(*verOut, []byte(p.Spec.Version), 0o644); err != nil {
			fail("%v", err)
		}
	}
}

// archiveFiles are the files of a platform's archive, sorted: the binary,
// LICENSE and, unless completion is "", the completion script.
func archiveFiles(bin, completion string) []string {
	files := []string{"LICENSE", bin}
	if completion != "" {
		files = append(files, completion)
	}
	sort.Strings(files)
	return files
}

// checkArchive checks one release archive: sha256, contents, binary format.
func checkArchive(where, file, wantSha, goos, goarch, bin, completion string) {
	data, err := os.ReadFile(file)
	if err != nil {
		fail("%s: %v", where, err)
		return
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != wantSha {
		fail("%s: %s has sha256 %s, the manifest says %s", where, filepath.Base(file), got, wantSha)
	}
	contents := map[string][]byte{}
	modes := map[string]int64{}
	if strings.HasSuffix(file, ".zip") {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			fail("%s: %s: %v", where, filepath.Base(file), err)
			return
		}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				fail("%s: %s: %v", where, f.Name, err)
				return
			}
			contents[f.Name], err = io.ReadAll(rc)
			rc.Close()
			if err != nil {
				fail("%s: %s: %v", where, f.Name, err)
				return
			}
			modes[f.Name] = int64(f.Mode().Perm())
		}
	} else {
		gz, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			fail("%s: %s: %v", where, filepath.Base(file), err)
			return
		}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				fail("%s: %s: %v", where, filepath.Base(file), err)
				return
			}
			if h.Typeflag != tar.TypeReg {
				fail("%s: %s: entry %q is not a regular file", where, filepath.Base(file), h.Name)
				continue
			}
			if contents[h.Name], err = io.ReadAll(tr); err != nil {
				fail("%s: %s: %v", where, h.Name, err)
				return
			}
			modes[h.Name] = h.Mode
		}
	}
	var names []string
	for n := range contents {
		names = append(names, n)
	}
	sort.Strings(names)
	if want := archiveFiles(bin, completion); strings.Join(names, " ") != strings.Join(want, " ") {
		fail("%s: %s holds %v, want exactly %v", where, filepath.Base(file), names, want)
		return
	}
	if completion != "" && (modes[completion]&0o111 == 0 || !bytes.HasPrefix(contents[completion], []byte("#!"))) {
		fail("%s: %s in %s is not an executable script (mode %o)", where, completion, filepath.Base(file), modes[completion])
	}
	lic, err := os.ReadFile(*license)
	if err != nil {
		fail("%v", err)
	} else if !bytes.Equal(contents["LICENSE"], lic) {
		fail("%s: LICENSE in %s differs from %s", where, filepath.Base(file), *license)
	}
	if goos != "windows" && modes[bin]&0o111 == 0 {
		fail("%s: %s is not executable in %s (mode %o)", where, bin, filepath.Base(file), modes[bin])
	}
	if got := binaryPlatform(contents[bin]); got != goos+"/"+goarch {
		fail("%s: %s in %s is a %s binary", where, bin, filepath.Base(file), got)
	}
}

func binaryPlatform(b []byte) string {
	r := bytes.NewReader(b)
	if f, err := elf.NewFile(r); err == nil {
		switch f.Machine {
		case elf.EM_X86_64:
			return "linux/amd64"
		case elf.EM_AARCH64:
			return "linux/arm64"
		}
		return "linux/" + f.Machine.String()
	}
	if f, err := macho.NewFile(r); err == nil {
		switch f.Cpu {
		case macho.CpuAmd64:
			return "darwin/amd64"
		case macho.CpuArm64:
			return "darwin/arm64"
		}
		return "darwin/" + f.Cpu.String()
	}
	if f, err := pe.NewFile(r); err == nil {
		switch f.Machine {
		case pe.IMAGE_FILE_MACHINE_AMD64:
			return "windows/amd64"
		case pe.IMAGE_FILE_MACHINE_ARM64:
			return "windows/arm64"
		}
		return fmt.Sprintf("windows/machine-%#x", f.Machine)
	}
	return "unknown"
}
EOF

start=$SECONDS
echo "building krew's validate-krew-manifest $KREW_VERSION from the Go module proxy" >&2
(
	cd "$TMP/tools"
	export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0
	go mod tidy >/dev/null 2>"$TMP/tidy.log" || { cat "$TMP/tidy.log" >&2; exit 1; }
	go build -o "$TMP/bin/validate-krew-manifest" sigs.k8s.io/krew/cmd/validate-krew-manifest
	go build -o "$TMP/bin/check" ./check
	[[ -z $ARCHIVES ]] || go build -o "$TMP/bin/krew" sigs.k8s.io/krew/cmd/krew
) || { echo "validate-krew.sh: could not build the krew tools" >&2; exit 1; }
echo "built in $((SECONDS - start))s" >&2

# --- 1. krew's validator ----------------------------------------------------
# It infers the plugin name from the file name, so it needs <name>.yaml.
mkdir -p "$TMP/manifest"
cp "$MANIFEST" "$TMP/manifest/$PLUGIN.yaml"
if "$TMP/bin/validate-krew-manifest" -manifest "$TMP/manifest/$PLUGIN.yaml" -skip-install >"$TMP/validate.log" 2>&1; then
	echo "ok   validate-krew-manifest $KREW_VERSION -skip-install: plugins.yaml" >&2
else
	sed 's/^/     /' "$TMP/validate.log" >&2
	fail "validate-krew-manifest rejects plugins.yaml"
fi

# --- 2. our checks (and 4. the archives, with --archives) -------------------
if "$TMP/bin/check" -manifest "$MANIFEST" -name "$PLUGIN" -repo "$REPO_URL" -license "$ROOT/LICENSE" \
	-archives "$ARCHIVES" -sums-out "$TMP/sha256sums.txt" -version-out "$TMP/version"; then
	echo "ok   plugins.yaml: strict decode, 6 platforms, uris, sha256s, bin, files${ARCHIVES:+, archives in $ARCHIVES}" >&2
else
	fail "plugins.yaml does not pass the project's checks"
fi

# --- 3. krew.yaml renders to plugins.yaml -----------------------------------
if [[ -s $TMP/version && -s $TMP/sha256sums.txt ]]; then
	version=$(cat "$TMP/version")
	if "$ROOT/hack/release.sh" --render-manifest "$version" "$TMP/sha256sums.txt" >"$TMP/rendered.yaml"; then
		if diff -u --label "plugins.yaml" --label "krew.yaml rendered for $version" "$MANIFEST" "$TMP/rendered.yaml" >"$TMP/drift.diff"; then
			echo "ok   krew.yaml rendered for $version with the manifest's sha256s equals plugins.yaml" >&2
		else
			cat "$TMP/drift.diff" >&2
			fail "krew.yaml and plugins.yaml have drifted apart (run hack/release.sh $version, or fix krew.yaml)"
		fi
	else
		fail "krew.yaml does not render"
	fi
else
	fail "cannot render krew.yaml: no version or sha256s read from plugins.yaml"
fi

# --- 4. krew installs each archive offline ------------------------------------
if [[ -n $ARCHIVES && $failed -eq 0 ]]; then
	while read -r _ archive; do
		plat=${archive#kubectl-"$PLUGIN"_}
		plat=${plat%%.*}
		os=${plat%_*} arch=${plat#*_}
		root=$TMP/krew-$os-$arch
		if env -i PATH="$PATH" HOME="$TMP" KREW_ROOT="$root" KREW_OS="$os" KREW_ARCH="$arch" KREW_NO_UPGRADE_CHECK=1 \
			"$TMP/bin/krew" install --manifest="$TMP/manifest/$PLUGIN.yaml" --archive="$ARCHIVES/$archive" \
			>"$TMP/install.log" 2>&1 &&
			[[ -f $root/store/$PLUGIN/$version/LICENSE ]] &&
			# The README copies the completion script from here into bin/.
			[[ $os == windows || -x $root/store/$PLUGIN/$version/kubectl_complete-$PLUGIN ]] &&
			compgen -G "$root/bin/kubectl-$PLUGIN*" >/dev/null; then
			echo "ok   krew install --archive $archive (KREW_OS=$os KREW_ARCH=$arch)" >&2
		else
			sed 's/^/     /' "$TMP/install.log" >&2
			fail "krew cannot install $archive for $os/$arch"
		fi
	done <"$TMP/sha256sums.txt"
fi

if [[ $failed -ne 0 ]]; then
	echo "validate-krew.sh: FAILED" >&2
	exit 1
fi
echo "validate-krew.sh: plugins.yaml is valid ($((SECONDS - start))s)" >&2
