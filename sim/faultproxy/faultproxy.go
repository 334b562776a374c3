// Package faultproxy is an HTTPS proxy in front of kube-apiserver that
// fails a seeded share of the requests it forwards the way a flaky
// control plane does: 500 and 503 answers, 429 with or without
// Retry-After, a request reset before it reaches the server or after the
// server carried it out, and watches cut off. The plugin under test talks
// to it; the controllers, scheduler and test code talk to the API server
// directly.
package faultproxy

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kind is a kind of fault.
type Kind string

// The faults, in the order a request's draw meets them.
const (
	Status500   Kind = "500"
	Status503   Kind = "503"
	Throttled   Kind = "429+Retry-After" // 429 with Retry-After: 1, as API Priority and Fairness answers
	Throttled0  Kind = "429"             // 429 without Retry-After
	ResetBefore Kind = "reset-before"    // the request's stream reset before it is forwarded
	ResetAfter  Kind = "reset-after"     // forwarded and carried out; the stream reset instead of the answer
	WatchCut    Kind = "watch-cut"       // a watch reset 1 to 5 s after it began
)

// Kinds are every kind of fault.
var Kinds = []Kind{Status500, Status503, Throttled, Throttled0, ResetBefore, ResetAfter, WatchCut}

// Options configure a proxy.
type Options struct {
	// Upstream reaches the API server; the proxy forwards every request
	// with its credentials.
	Upstream *rest.Config
	// Rates is the chance of each kind of fault for a request (a watch for
	// WatchCut, any request but a watch for ResetAfter): one draw per
	// request, so the chances add up.
	Rates map[Kind]float64
	// Seed seeds the draws.
	Seed uint64
}

// Every gives each kind of fault the chance rate.
func Every(rate float64) map[Kind]float64 {
	m := map[Kind]float64{}
	for _, k := range Kinds {
		m[k] = rate
	}
	return m
}

// Mix shares the chance rate among every kind of fault alike.
func Mix(rate float64) map[Kind]float64 { return Every(rate / float64(len(Kinds))) }

// Proxy is a running proxy.
type Proxy struct {
	srv   *httptest.Server
	rp    *httputil.ReverseProxy
	rates map[Kind]float64

	mu       sync.Mutex
	rng      *rand.Rand
	requests int
	faults   map[Kind]int
}

// Start starts a proxy on a local port.
func Start(opts Options) (*Proxy, error) {
	upstream, err := url.Parse(opts.Upstream.Host)
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(opts.Upstream)
	if err != nil {
		return nil, err
	}
	p := &Proxy{rates: opts.Rates, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)), faults: map[Kind]int{}}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.Host = upstream.Host
		},
		Transport:     rt,
		FlushInterval: -1, // watches stream
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	p.srv = httptest.NewUnstartedServer(p)
	p.srv.EnableHTTP2 = true
	p.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	p.srv.StartTLS()
	return p, nil
}

// URL is where the proxy listens.
func (p *Proxy) URL() string { return p.srv.URL }

// Close stops the proxy.
func (p *Proxy) Close() { p.srv.Close() }

// Counts returns the requests proxied and the faults made, by kind.
func (p *Proxy) Counts() (requests int, faults map[Kind]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	faults = make(map[Kind]int, len(p.faults))
	for k, n := range p.faults {
		faults[k] = n
	}
	return p.requests, faults
}

// WriteKubeconfig writes a kubeconfig that reaches the API server through
// the proxy (context "faulty"); the proxy holds the credentials.
func (p *Proxy) WriteKubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
	cfg.Clusters["faulty"] = &clientcmdapi.Cluster{Server: p.srv.URL, CertificateAuthorityData: ca}
	cfg.AuthInfos["faulty"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["faulty"] = &clientcmdapi.Context{Cluster: "faulty", AuthInfo: "faulty"}
	cfg.CurrentContext = "faulty"
	return clientcmd.WriteToFile(*cfg, path)
}

// draw picks the request's fault, or "", and how long a cut watch runs.
func (p *Proxy) draw(watch bool) (Kind, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests++
	x := p.rng.Float64()
	cut := time.Second + time.Duration(p.rng.Int64N(int64(4*time.Second)))
	for _, k := range Kinds {
		if (k == WatchCut && !watch) || (k == ResetAfter && watch) {
			continue
		}
		if x -= p.rates[k]; x < 0 {
			p.faults[k]++
			return k, cut
		}
	}
	return "", 0
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	watch := r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1"
	kind, cut := p.draw(watch)
	switch kind {
	case Status500:
		status(w, http.StatusInternalServerError, "InternalError", "etcdserver: leader changed", false)
	case Status503:
		status(w, http.StatusServiceUnavailable, "ServiceUnavailable", "the server is currently unable to handle the request", false)
	case Throttled:
		status(w, http.StatusTooManyRequests, "TooManyRequests", "too many requests, please try again later", true)
	case Throttled0:
		status(w, http.StatusTooManyRequests, "TooManyRequests", "too many requests, please try again later", false)
	case ResetBefore:
		panic(http.ErrAbortHandler) // resets the stream (HTTP/2) or closes the connection
	case ResetAfter:
		p.rp.ServeHTTP(discard{header: http.Header{}}, r)
		panic(http.ErrAbortHandler)
	case WatchCut:
		ctx, cancel := context.WithTimeout(r.Context(), cut)
		defer cancel()
		// the proxy aborts the stream when its copy fails
		p.rp.ServeHTTP(w, r.WithContext(ctx))
		panic(http.ErrAbortHandler)
	default:
		p.rp.ServeHTTP(w, r)
	}
}

// status answers as the API server does, with a Status object.
func status(w http.ResponseWriter, code int, reason, message string, retryAfter bool) {
	if retryAfter {
		w.Header().Set("Retry-After", "1")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%q,"reason":%q,"code":%d}`, message, reason, code)
}

// discard is an answer thrown away.
type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}
func (d discard) Flush()                      {}
