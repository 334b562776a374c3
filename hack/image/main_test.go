package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestTwoBuildsGiveTheSameDigest builds the image twice from the
// repository, into two layouts: the digests and the layouts' index.json
// are the same, and the image holds the plugin, the roots and the user.
func TestTwoBuildsGiveTheSameDigest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin twice")
	}
	var digests []string
	var indexes [][]byte
	var outs []string
	for _, dir := range []string{t.TempDir(), t.TempDir()} {
		out := filepath.Join(dir, "image")
		outs = append(outs, out)
		d, err := build(filepath.Join("..", ".."), "v0.0.0-test", out, []string{"linux/amd64"})
		if err != nil {
			t.Fatal(err)
		}
		idx, err := os.ReadFile(filepath.Join(out, "index.json"))
		if err != nil {
			t.Fatal(err)
		}
		digests, indexes = append(digests, d.String()), append(indexes, idx)
	}
	if digests[0] != digests[1] || !bytes.Equal(indexes[0], indexes[1]) {
		t.Fatalf("two builds differ: %s and %s\n%s\n%s", digests[0], digests[1], indexes[0], indexes[1])
	}
	t.Logf("both builds: %s", digests[0])
	// The layout reads back: an index of one linux/amd64 image.
	lp, err := layout.FromPath(outs[0])
	if err != nil {
		t.Fatal(err)
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	top, err := idx.IndexManifest()
	if err != nil || len(top.Manifests) != 1 {
		t.Fatalf("layout index: %v %+v", err, top)
	}
	inner, err := idx.ImageIndex(top.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := inner.IndexManifest()
	if err != nil || len(m.Manifests) != 1 || m.Manifests[0].Platform.OS != "linux" || m.Manifests[0].Platform.Architecture != "amd64" {
		t.Fatalf("image index: %v %+v", err, m)
	}
	img, err := inner.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil || cfg.Config.Entrypoint[0] != "/"+binary || cfg.Config.User != "65532:65532" || !cfg.Created.Equal(epoch) {
		t.Errorf("config: %v %+v", err, cfg)
	}
}

// TestTheLayerHoldsThePluginTheRootsAndTheUser reads the layer back.
func TestTheLayerHoldsThePluginTheRootsAndTheUser(t *testing.T) {
	data, err := layerTar([]byte("binary"), []byte("license"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h
	}
	for name, mode := range map[string]int64{binary: 0o755, "etc/ssl/certs/ca-certificates.crt": 0o644, "etc/passwd": 0o644} {
		h, ok := got[name]
		switch {
		case !ok:
			t.Errorf("no %s in the layer", name)
		case h.Mode != mode || !h.ModTime.Equal(epoch) || h.Uid != 0:
			t.Errorf("%s: mode %o, time %s, uid %d; want %o, %s, 0", name, h.Mode, h.ModTime, h.Uid, mode, epoch)
		}
	}
	if h := got["etc/ssl/certs/ca-certificates.crt"]; h != nil && h.Size < 100_000 {
		t.Errorf("the roots are %d bytes: too few", h.Size)
	}
}
