// Package gatetest runs the real Prometheus and Alertmanager for tests
// (Debian's prometheus and prometheus-alertmanager packages, which .ci/run
// installs), and an exporter whose series the test sets.
package gatetest

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Exporter serves /metrics in Prometheus's text format: gauges the test
// sets.
type Exporter struct {
	URL  string // host:port, as a scrape target
	mu   sync.Mutex
	vals map[string]float64
}

// NewExporter starts an exporter, stopped when the test ends.
func NewExporter(t testing.TB) *Exporter {
	e := &Exporter{vals: map[string]float64{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		names := make([]string, 0, len(e.vals))
		for n := range e.vals {
			names = append(names, n)
		}
		sort.Strings(names)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		for _, n := range names {
			fmt.Fprintf(w, "%s %g\n", n, e.vals[n])
		}
	}))
	t.Cleanup(srv.Close)
	e.URL = strings.TrimPrefix(srv.URL, "http://")
	return e
}

// Set sets a series, e.g. `errors_ratio{service="web"}`.
func (e *Exporter) Set(series string, v float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.vals[series] = v
}

// RequiredEnv, set to "required", makes a test whose server is not
// installed fail rather than skip: ./hack/test.sh sets it, so the README's
// test command never passes without the gate tests.
const RequiredEnv = "NODEUPGRADE_GATE_SERVERS"

// Binary finds a server's binary on PATH. Without it the test is skipped
// saying what it needs and how to install it, or fails where RequiredEnv
// says the servers must be there.
func Binary(t testing.TB, name string) string {
	path, err := exec.LookPath(name)
	if err != nil {
		msg := fmt.Sprintf("%s is not installed: this test runs the real Prometheus and Alertmanager; install them with \"apt-get install -y prometheus prometheus-alertmanager\" (.ci/run does, before ./hack/test.sh)", name)
		if os.Getenv(RequiredEnv) == "required" {
			t.Fatalf("%s; %s=required", msg, RequiredEnv)
			return ""
		}
		t.Skip(msg)
	}
	return path
}

// Alertmanager starts the real Alertmanager (clustering off) and returns
// its URL.
func Alertmanager(t testing.TB) string {
	dir := t.TempDir()
	cfg := "route:\n  receiver: blackhole\n  group_wait: 0s\n  group_interval: 1s\nreceivers:\n- name: blackhole\n"
	write(t, filepath.Join(dir, "alertmanager.yml"), cfg)
	addr := freeAddr(t)
	start(t, Binary(t, "prometheus-alertmanager"), dir,
		"--config.file="+filepath.Join(dir, "alertmanager.yml"),
		"--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--cluster.listen-address=",
	)
	url := "http://" + addr
	waitReady(t, url+"/-/ready")
	return url
}

// Prometheus starts the real Prometheus scraping targets every second,
// evaluating rules (a rule file's YAML, "" for none) every second and
// sending alerts to alertmanager ("" for none); it returns its URL.
func Prometheus(t testing.TB, targets []string, rules, alertmanager string) string {
	dir := t.TempDir()
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n")
	cfg.WriteString("scrape_configs:\n- job_name: test\n  static_configs:\n  - targets: [" + strings.Join(quote(targets), ", ") + "]\n")
	if rules != "" {
		write(t, filepath.Join(dir, "rules.yml"), rules)
		cfg.WriteString("rule_files: [" + filepath.Join(dir, "rules.yml") + "]\n")
	}
	if alertmanager != "" {
		cfg.WriteString("alerting:\n  alertmanagers:\n  - static_configs:\n    - targets: [\"" + strings.TrimPrefix(alertmanager, "http://") + "\"]\n")
	}
	write(t, filepath.Join(dir, "prometheus.yml"), cfg.String())
	addr := freeAddr(t)
	start(t, Binary(t, "prometheus"), dir,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
	)
	url := "http://" + addr
	waitReady(t, url+"/-/ready")
	return url
}

func quote(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = `"` + s + `"`
	}
	return out
}

func write(t testing.TB, path, content string) {
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// freeAddr is a loopback address no one listens on now.
func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// start runs a server until the test ends; its log is shown on failure.
func start(t testing.TB, bin, dir string, args ...string) {
	log, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = log, log, dir
	if err := cmd.Start(); err != nil {
		t.Fatalf("error when starting %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
		if t.Failed() {
			out, _ := os.ReadFile(log.Name())
			t.Logf("%s log (last 2000 bytes): %s", filepath.Base(bin), tail(out, 2000))
		}
	})
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func waitReady(t testing.TB, url string) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if res, err := http.Get(url); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not answer within 60s", url)
}
