// Package faultproxy is an HTTPS proxy in front of kube-apiserver that
// fails a seeded share of the requests it forwards the way a flaky
// control plane does: 500 and 503 answers, 429 with or without
// Retry-After, a request reset before it reaches the server or after the
// server carried it out, a connection closed under a request (every
// stream on it cut), and watches cut off. Routes give chosen requests (the
// evictions, a node's pod list) rates of their own. The plugin under test talks
// to it; the controllers, scheduler and test code talk to the API server
// directly.
package faultproxy

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
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
	// ConnClosed closes the connection the request came on before it is
	// forwarded: every request and watch on it is cut, as when a load
	// balancer or an API server going away drops it. It is drawn only where
	// rates name it, not by Every or Mix.
	ConnClosed Kind = "conn-closed"
)

// Kinds are the kinds of fault Every and Mix share a rate among.
var Kinds = []Kind{Status500, Status503, Throttled, Throttled0, ResetBefore, ResetAfter, WatchCut}

// drawn are the kinds a draw meets, in its order.
var drawn = append(slices.Clone(Kinds), ConnClosed)

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
	// Routes give the requests they match rates of their own, in place of
	// Rates: the first route a request matches decides.
	Routes []Route
}

// Route is a share of the requests with fault rates of its own.
type Route struct {
	Name  string // as RouteCounts names it
	Match func(r *http.Request) bool
	Rates map[Kind]float64
	// First are the faults of the route's first requests, one each, in
	// order, before any is drawn: a test that wants every kind met is
	// never left to the draws (and the order requests race in).
	First []Kind
}

// Evictions matches the pods' evictions (POST .../pods/NAME/eviction).
func Evictions(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/eviction")
}

// NodePodLists matches lists of the pods of one node (the field selector
// spec.nodeName, as a drain selects the pods to evict), not watches.
func NodePodLists(r *http.Request) bool {
	q := r.URL.Query()
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pods") && !isWatch(r) &&
		strings.Contains(q.Get("fieldSelector"), "spec.nodeName=")
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
	srv    *httptest.Server
	rp     *httputil.ReverseProxy
	rates  map[Kind]float64
	routes []Route

	mu       sync.Mutex
	rng      *rand.Rand
	requests int
	faults   map[Kind]int
	byRoute  map[string]*routeCounts
}

type routeCounts struct {
	requests int
	faults   map[Kind]int
}

type connKey struct{}

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
	p := &Proxy{rates: opts.Rates, routes: opts.Routes, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		faults: map[Kind]int{}, byRoute: map[string]*routeCounts{}}
	for _, r := range opts.Routes {
		p.byRoute[r.Name] = &routeCounts{faults: map[Kind]int{}}
	}
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
	// the connection of each request, for ConnClosed to close
	p.srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
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

// RouteCounts returns the requests the route named name matched and the
// faults made on them, by kind.
func (p *Proxy) RouteCounts(name string) (requests int, faults map[Kind]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rc := p.byRoute[name]
	if rc == nil {
		return 0, nil
	}
	return rc.requests, maps.Clone(rc.faults)
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
func (p *Proxy) draw(r *http.Request) (Kind, time.Duration) {
	watch := isWatch(r)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests++
	rates, route, first := p.rates, (*routeCounts)(nil), []Kind(nil)
	for _, rt := range p.routes {
		if rt.Match(r) {
			rates, route, first = rt.Rates, p.byRoute[rt.Name], rt.First
			route.requests++
			break
		}
	}
	x := p.rng.Float64()
	cut := time.Second + time.Duration(p.rng.Int64N(int64(4*time.Second)))
	if route != nil && route.requests <= len(first) {
		k := first[route.requests-1]
		p.faults[k]++
		route.faults[k]++
		return k, cut
	}
	for _, k := range drawn {
		if (k == WatchCut && !watch) || (k == ResetAfter && watch) {
			continue
		}
		if x -= rates[k]; x < 0 {
			p.faults[k]++
			if route != nil {
				route.faults[k]++
			}
			return k, cut
		}
	}
	return "", 0
}

func isWatch(r *http.Request) bool {
	return r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1"
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind, cut := p.draw(r)
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
	case ConnClosed:
		if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
			_ = c.Close()
		}
		panic(http.ErrAbortHandler)
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
