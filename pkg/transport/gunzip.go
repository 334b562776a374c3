// Package transport holds what the plugin changes in how client-go talks to
// the API server.
package transport

import (
	"bufio"
	"io"
	"net/http"
	"strings"

	"github.com/klauspost/compress/gzhttp"
	"k8s.io/client-go/rest"
)

// GunzipFaster has responses gunzipped by klauspost/compress (its
// gzhttp.Transport) instead of Go's transport (compress/gzip): the API
// server gzips every response over 128 KiB, and a plan's lists of 150,000
// pods are 1.3 GB unzipped (50 MB as sent, by the replay of hack/bench.sh),
// which compress/gzip inflates at about 1.5 GB/s of the client's CPU and
// klauspost/compress at about 2 GB/s on the same pages. What the server is
// asked and sends is unchanged: gzip only, as Go's transport asks (gzhttp
// would offer zstd too). --disable-compression (kubectl's flag) still asks
// for no compression at all.
func GunzipFaster(cfg *rest.Config) {
	if cfg.DisableCompression {
		return
	}
	// Go's transport adds Accept-Encoding and gunzips only where the
	// request had none, and client-go turns that off with
	// DisableCompression; gzhttp asks instead.
	cfg.DisableCompression = true
	cfg.Wrap(gunzipping)
}

// gunzipping is gzhttp's transport over rt, given a copy of each request
// and reading gzipped bodies in large chunks.
func gunzipping(rt http.RoundTripper) http.RoundTripper {
	return copyRequest{gzhttp.Transport(chunkedBodies{rt}, gzhttp.TransportEnableZstd(false))}
}

// copyRequest hands the next transport a copy of the request. gzhttp sets
// Accept-Encoding on the request it is given, which a RoundTripper must not
// change: a request sent again as it is (by a retrying transport; client-go
// gives its tries one header map) would go out already asking for gzip, and
// gzhttp, which gunzips only what it asked for, would pass the gzipped body
// on to the decoder (TestRetriedRequestIsGunzippedToo).
type copyRequest struct{ next http.RoundTripper }

func (t copyRequest) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.next.RoundTrip(req.Clone(req.Context()))
}

// bodyReadSize is how much of a gzipped body is asked for at a time. The
// gunzipper alone reads 8 KiB at a time, and over HTTP/2 each read of 4 KiB
// or more makes Go's transport send the server a WINDOW_UPDATE frame, a
// write to the connection of its own: 6,000 of them for the 50 MB of a
// 150,000-pod list, and a sixth of the client's CPU with the goroutine
// switches they cost. Reads of what has arrived, up to this size, send a
// few hundred.
const bodyReadSize = 256 << 10

// chunkedBodies buffers gzipped bodies bodyReadSize at a time. The buffer
// is an io.ByteReader, which the gunzipper reads as it is instead of
// wrapping it in its own small one.
type chunkedBodies struct{ next http.RoundTripper }

func (t chunkedBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil && strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		resp.Body = bufferedBody{bufio.NewReaderSize(resp.Body, bodyReadSize), resp.Body}
	}
	return resp, err
}

type bufferedBody struct {
	*bufio.Reader
	io.Closer
}
