// Package transport holds what the plugin changes in how client-go talks to
// the API server.
package transport

import (
	"bufio"
	"io"
	"net/http"
	"strings"

	"github.com/klauspost/compress/gzip"
	"k8s.io/client-go/rest"
)

// GunzipFaster has responses gunzipped by klauspost/compress instead of Go's
// transport (compress/gzip): the API server gzips every response over 128
// KiB, and a plan's lists of 150,000 pods are 1.3 GB unzipped (50 MB as
// sent, by the replay of hack/bench.sh), which compress/gzip inflates at
// about 1.5 GB/s of the client's CPU and klauspost/compress at about 2 GB/s
// on the same pages. What the server is asked and sends is unchanged.
// --disable-compression (kubectl's flag) still asks for no compression at
// all.
func GunzipFaster(cfg *rest.Config) {
	if cfg.DisableCompression {
		return
	}
	// Go's transport adds Accept-Encoding and gunzips only where the
	// request had none, and client-go turns that off with
	// DisableCompression; the wrapper below asks instead.
	cfg.DisableCompression = true
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &gunzipTransport{next: rt} })
}

type gunzipTransport struct {
	next http.RoundTripper
}

func (t *gunzipTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Accept-Encoding") != "" || req.Header.Get("Range") != "" || req.Method == http.MethodHead {
		return t.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := t.next.RoundTrip(req)
	if err != nil || !strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		return resp, err
	}
	resp.Body = &gunzipBody{body: resp.Body}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	resp.Uncompressed = true
	return resp, nil
}

// gunzipBody starts gunzipping on the first Read, as Go's transport does,
// so that a caller that only closes the body does not wait for its header.
type gunzipBody struct {
	body io.ReadCloser
	zr   *gzip.Reader
	err  error // of reading the gzip header
}

// bodyReadSize is how much of a gzipped body is asked for at a time. The
// gunzipper alone reads 8 KiB at a time, and over HTTP/2 each read of 4 KiB
// or more makes Go's transport send the server a WINDOW_UPDATE frame, a
// write to the connection of its own: 6,000 of them for the 50 MB of a
// 150,000-pod list, and a sixth of the client's CPU with the goroutine
// switches they cost. Reads of what has arrived, up to this size, send a
// few hundred.
const bodyReadSize = 256 << 10

func (b *gunzipBody) Read(p []byte) (int, error) {
	if b.zr == nil && b.err == nil {
		b.zr, b.err = gzip.NewReader(bufio.NewReaderSize(b.body, bodyReadSize))
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.zr.Read(p)
}

func (b *gunzipBody) Close() error { return b.body.Close() }
