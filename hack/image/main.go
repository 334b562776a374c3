// Command image builds the plugin's container image, the one
// "run --in-cluster" runs, as an OCI image layout, offline and
// reproducibly: the same source tree and Go toolchain give the same
// digest. Each platform's image is one layer on an empty base: the static
// plugin (CGO_ENABLED=0, -trimpath), the Mozilla root certificates of a
// pinned golang.org/x/crypto/x509roots/fallback (the cloud APIs are
// reached over TLS), and a passwd entry for the non-root user it runs as;
// every file and the image carry one fixed time. No Docker daemon.
//
//	go run . -root ../.. -version v1.2.3 -out ../../dist/image
//
// hack/image.sh is how the release runs it.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

const (
	module = "github.com/nodeupgrade/kubectl-nodeupgrade"
	// binary is where the plugin lives in the image (the Job's command).
	binary = "kubectl-nodeupgrade"
	// uid is the user the image runs as: not root, as the Job's
	// securityContext asks.
	uid = 65532
)

// epoch is every file's and the image's time: 2000-01-01, not 1970, which
// some tools show as "no time".
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func main() {
	root := flag.String("root", "../..", "The repository to build")
	version := flag.String("version", "", "The release version, such as v1.2.3 (the plugin's version and the layout's ref name)")
	out := flag.String("out", "", "The directory of the OCI image layout to write (replaced)")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "Comma-separated os/arch to build")
	flag.Parse()
	if *version == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "image: -version and -out are required")
		os.Exit(2)
	}
	digest, err := build(*root, *version, *out, strings.Split(*platforms, ","))
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(digest)
}

// build writes the layout of the image index for platforms and returns
// the index's digest.
func build(root, version, out string, platforms []string) (v1.Hash, error) {
	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		osName, arch, ok := strings.Cut(p, "/")
		if !ok {
			return v1.Hash{}, fmt.Errorf("platform %q: want os/arch", p)
		}
		img, err := platformImage(root, version, osName, arch)
		if err != nil {
			return v1.Hash{}, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: osName, Architecture: arch},
		}})
	}
	if err := os.RemoveAll(out); err != nil {
		return v1.Hash{}, err
	}
	lp, err := layout.Write(out, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": version})); err != nil {
		return v1.Hash{}, err
	}
	return idx.Digest()
}

// platformImage is the image of one platform: its one layer, and a
// config that runs the plugin as uid.
func platformImage(root, version, osName, arch string) (v1.Image, error) {
	bin, err := compile(root, version, osName, arch)
	if err != nil {
		return nil, err
	}
	license, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		return nil, err
	}
	tarball, err := layerTar(bin, license)
	if err != nil {
		return nil, err
	}
	layer, err := layerOf(tarball)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = osName, arch
	cfg.Config.Entrypoint = []string{"/" + binary}
	cfg.Config.User = fmt.Sprintf("%d:%d", uid, uid)
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.source":  "https://" + module,
		"org.opencontainers.image.version": version,
		"org.opencontainers.image.title":   "kubectl-nodeupgrade",
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: epoch})
}

// compile builds the static plugin for one platform, as the release's
// archives are built (hack/release.sh).
func compile(root, version, osName, arch string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "nodeupgrade-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, binary)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X "+module+"/pkg/plugin.Version="+version, "-o", bin, "./cmd/kubectl-nodeupgrade")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+osName, "GOARCH="+arch, "GOFLAGS=-buildvcs=false", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the plugin for %s/%s: %v\n%s", osName, arch, err, out)
	}
	return os.ReadFile(bin)
}

// file is one entry of the layer.
type file struct {
	name string
	mode int64
	data []byte // nil for a directory
}

// layerTar is the layer's tar: the files in a fixed order, owned by root,
// at epoch.
func layerTar(bin, license []byte) ([]byte, error) {
	files := []file{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", uid)},
		{name: "etc/passwd", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", uid, uid)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: caBundle()},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o755},
		{name: binary, mode: 0o755, data: bin},
		{name: "licenses/", mode: 0o755},
		{name: "licenses/kubectl-nodeupgrade", mode: 0o644, data: license},
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: epoch, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(f.data))}
		if f.data == nil {
			h.Typeflag = tar.TypeDir
		}
		if f.name == "home/nonroot/" {
			h.Uid, h.Gid = uid, uid
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), tw.Close()
}

// caBundle is the pinned module's roots as PEM, where Go on Linux looks
// for them. Roots with constraints PEM cannot carry (distrusted after a
// date) are left out.
func caBundle() []byte {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return b.Bytes()
}

// layerOf is the gzipped layer of a tar, compressed once here with no
// name or time in the gzip header, so its digest depends on its bytes only.
func layerOf(tarBytes []byte) (v1.Layer, error) {
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(tarBytes); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	compressed := gz.Bytes()
	if len(compressed) == 0 {
		return nil, errors.New("empty layer")
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
