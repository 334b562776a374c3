package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/upgrade"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// executeBare runs the root command with exactly args, in an environment
// with no kubeconfig unless args or kubeconfig give one.
func executeBare(t *testing.T, kubeconfig string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if kubeconfig == "" {
		kubeconfig = filepath.Join(home, "absent")
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	var in, out, errOut bytes.Buffer
	cmd := NewCmdNodeUpgrade(genericiooptions.IOStreams{In: &in, Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	code = PrintError(&errOut, err)
	return out.String(), errOut.String(), code
}

// closedPort is a local address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// countingServer answers every request with status and body, counting them.
func countingServer(t *testing.T, status int, body string) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

const forbidden = `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"configmaps is forbidden: User \"x\" cannot list resource \"configmaps\"","reason":"Forbidden","code":403}`

func TestExitCodesOfEveryPath(t *testing.T) {
	refused := "https://" + closedPort(t)
	untrusted := httptest.NewUnstartedServer(http.NotFoundHandler())
	untrusted.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	untrusted.StartTLS()
	t.Cleanup(untrusted.Close)
	denying, _ := countingServer(t, http.StatusForbidden, forbidden)
	tgt := "--target-label=a=b"

	tests := []struct {
		name     string
		args     []string
		code     int
		want     string
		dontWant string
	}{
		{"unknown subcommand", []string{"upgrade", "ng"}, ExitUsage, `unknown command "upgrade" for "kubectl nodeupgrade"`, ""},
		{"misspelt subcommand suggests", []string{"stauts"}, ExitUsage, `did you mean "status"?`, ""},
		{"no kubeconfig: status", []string{"status"}, ExitUsage, "no kubeconfig", "interrupted"},
		{"no kubeconfig: plan", []string{"plan", "ng", tgt}, ExitUsage, "no kubeconfig", "interrupted"},
		{"no kubeconfig: cancel", []string{"cancel", "ng"}, ExitUsage, "no kubeconfig", "interrupted"},
		{"kubeconfig file missing", []string{"status", "--kubeconfig", "/nonexistent/kubeconfig"}, ExitUsage, "cannot load kubeconfig", ""},
		{"server refuses: status", []string{"status", "--server", refused}, ExitUnreachable, "cannot reach the API server " + refused, "interrupted"},
		{"server refuses: plan", []string{"plan", "ng", tgt, "--server", refused}, ExitUnreachable, "connection refused", "interrupted"},
		{"server refuses: check", []string{"check", "ng", tgt, "--server", refused}, ExitUnreachable, "cannot reach the API server", ""},
		{"server refuses: resume", []string{"resume", "ng", "--server", refused}, ExitUnreachable, "cannot reach the API server", ""},
		{"untrusted certificate", []string{"status", "--server", untrusted.URL}, ExitUnreachable, "certificate", ""},
		// An answer, even a refusal, is not an unreachable server.
		{"server answers 403", []string{"status", "--server", denying.URL}, ExitFailure, "forbidden", "cannot reach"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := executeBare(t, "", tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not say %q", stderr, tc.want)
			}
			if tc.dontWant != "" && strings.Contains(stderr, tc.dontWant) {
				t.Errorf("stderr %q says %q", stderr, tc.dontWant)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "error: ") {
				t.Errorf("want exactly one error line, got %q", stderr)
			}
			if stdout != "" {
				t.Errorf("stdout should be empty, got %q", stdout)
			}
		})
	}
}

func TestNoArgumentsPrintsHelp(t *testing.T) {
	stdout, stderr, code := executeBare(t, "")
	if code != ExitOK || stderr != "" || !strings.Contains(stdout, "Usage:\n  kubectl nodeupgrade [flags]") {
		t.Fatalf("exit %d, stderr %q, stdout %q", code, stderr, stdout)
	}
}

func TestCheckRefusesBeforeListing(t *testing.T) {
	srv, requests := countingServer(t, http.StatusOK, `{"kind":"NodeList","apiVersion":"v1","items":[]}`)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no flags", []string{"check", "ng"}, "no target given"},
		{"selector, no target", []string{"check", "-l", "pool=a"}, "no target given"},
		{"provider aws, no version", []string{"check", "ng", "--provider", "aws", "--asg", "g"}, "no target given"},
		{"provider none, no target", []string{"check", "ng", "--provider", "none"}, "--target-label"},
		// Bad flags are refused before the cluster is read too.
		{"bad order", []string{"check", "ng", "--target-label=a=b", "--order", "alphabetical"}, "--order"},
		{"bad output", []string{"check", "ng", "--target-label=a=b", "-o", "wide"}, "wide"},
		{"bad target label", []string{"check", "ng", "--target-label=a"}, "--target-label"},
		{"bad max-unavailable", []string{"check", "ng", "--target-label=a=b", "--max-unavailable", "0"}, "--max-unavailable"},
		{"bad taint", []string{"check", "ng", "--target-label=a=b", "--taint", "k=v:Sometimes"}, "--taint"},
		{"node group and selector", []string{"check", "ng", "-l", "pool=a", "--target-label=a=b"}, "--selector"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requests.Store(0)
			_, stderr, code := executeBare(t, "", append(tc.args, "--server", srv.URL)...)
			if code != ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d saying %q", code, stderr, ExitUsage, tc.want)
			}
			if n := requests.Load(); n != 0 {
				t.Fatalf("%d requests reached the API server before the refusal", n)
			}
		})
	}
}

// TestPlanRefusesOnTheNodesBeforeThePods: what the nodes alone decide is
// refused as soon as they are listed. The server answers the nodes list
// and holds every other list until the client gives up on it; without the
// early refusal, the plan would wait for the pods (held a minute, then
// answered with an error) and not exit with ExitUsage.
func TestPlanRefusesOnTheNodesBeforeThePods(t *testing.T) {
	const nodes = `{"kind":"NodeList","apiVersion":"v1","items":[{"metadata":{"name":"n1","labels":{"eks.amazonaws.com/nodegroup":"ng"}}}]}`
	var answered atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/nodes" {
			_, _ = io.WriteString(w, nodes)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/kube-system/configmaps/") {
			// A node group not found may be the green of a run that
			// deleted blue: its record is read, and there is none.
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
			return
		}
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
			answered.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no target, nodes of no cloud", []string{"plan", "ng"}, "no target given"},
		{"no such node group", []string{"plan", "other", "--target-label=a=b"}, `node group "other" not found`},
		{"no node matches the selector", []string{"check", "-l", "pool=a", "--target-label=a=b"}, `no node matches --selector "pool=a"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := executeBare(t, "", append(tc.args, "--server", srv.URL)...)
			if code != ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d saying %q", code, stderr, ExitUsage, tc.want)
			}
			if n := answered.Load(); n != 0 {
				t.Fatalf("%d lists besides the nodes were answered before the refusal", n)
			}
		})
	}
}

func TestInterruptionStaysAnInterruption(t *testing.T) {
	// Ctrl-C during a request: client-go returns the url.Error of a
	// cancelled context, which must not read as an unreachable server.
	err := explainConnection(&url.Error{Op: "Get", URL: "https://x", Err: context.Canceled}, nil, false)
	var stderr bytes.Buffer
	if code := PrintError(&stderr, err); code != ExitFailure || !strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("exit %d, %q", code, stderr.String())
	}
}

func TestVersionOutput(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"version"}, ExitOK, "kubectl-nodeupgrade "},
		{[]string{"version", "-o", "json"}, ExitOK, `"goVersion": "go`},
		{[]string{"version", "-o", "yaml"}, ExitOK, "platform: "},
		{[]string{"version", "-o", "wide"}, ExitUsage, ""},
		{[]string{"version", "-o", "name"}, ExitUsage, ""},
		{[]string{"version", "-o", "jsonpath={.version}"}, ExitOK, "dev"},
		{[]string{"version", "-o", "go-template={{.platform}}"}, ExitOK, "/"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout, stderr, code := executeBare(t, "", tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.want) {
				t.Fatalf("exit %d (want %d), stdout %q, stderr %q", code, tc.code, stdout, stderr)
			}
		})
	}
}

func TestExitCodeOfWatchedRun(t *testing.T) {
	tests := []struct {
		status string
		want   int
	}{
		{StatusFinished, ExitOK},
		{StatusRolledBack, ExitOK},
		{StatusPaused, ExitPaused},
		{StatusSoaking, ExitPaused},
		{StatusQuarantined, ExitPaused},
		{StatusFailed, ExitFailure},
		{StatusInterrupted, ExitFailure},
		{StatusAborted, ExitOK},
	}
	for _, tc := range tests {
		t.Run(tc.status, func(t *testing.T) {
			s := describeRun(recordFor("ng"), false, "", testNow)
			s.Status = tc.status
			if got := ExitCode(watchEnd(s)); got != tc.want {
				t.Errorf("exit %d, want %d", got, tc.want)
			}
		})
	}
	if got := ExitCode(errors.Join(errors.New("x"), &unreachableError{err: os.ErrDeadlineExceeded})); got != ExitUnreachable {
		t.Errorf("unreachable: exit %d", got)
	}
}

// TestBadFlagValuesBeforeTheCluster runs every command with a bad flag
// value and a kubeconfig that leads nowhere (none at all, or a server that
// refuses): the flag is named, exit 2, before the cluster is asked.
func TestBadFlagValuesBeforeTheCluster(t *testing.T) {
	refused := "https://" + closedPort(t)
	tests := []struct {
		command string
		args    []string
		flag    string
	}{
		{"plan", []string{"plan", "demo", "--max-unavailable", "abc"}, "--max-unavailable"},
		{"run", []string{"run", "demo", "--target-label=a=b", "--max-unavailable", "abc", "--yes"}, "--max-unavailable"},
		{"check", []string{"check", "demo", "--target-label=a=b", "--order", "alphabetical"}, "--order"},
		{"status", []string{"status", "-o", "bogus"}, "output"},
		{"report", []string{"report", "demo", "--runs", "-1"}, "--runs"},
		{"abort", []string{"abort", "demo", "--taint", "a=b:Sometimes"}, "taint"},
		{"cancel", []string{"cancel", "demo", "--state-namespace", "Not_A_Namespace"}, "--state-namespace"},
		{"resume", []string{"resume", "demo", "--image-ref", "example.com/p:1"}, "--image-ref"},
		{"rollback", []string{"rollback", "demo", "--service-account", "x", "--yes"}, "--service-account"},
		{"complete", []string{"complete", "demo", "--state-namespace", "-ns"}, "--state-namespace"},
		{"fleet", []string{"fleet", "plan", "-f", "/nonexistent/fleet.yaml"}, "-f"},
		{"prices", []string{"prices", "fetch", "--cloud", "ibm", "--region", "us-east-1"}, "--cloud"},
	}
	covered := map[string]bool{"version": true} // version takes no flag value and no cluster
	for _, tc := range tests {
		covered[tc.command] = true
		for where, extra := range map[string][]string{"no kubeconfig": nil, "server refuses": {"--server", refused}} {
			t.Run(tc.command+", "+where, func(t *testing.T) {
				_, stderr, code := executeBare(t, "", append(slices.Clone(tc.args), extra...)...)
				if code != ExitUsage || !strings.Contains(stderr, tc.flag) || strings.Contains(stderr, "kubeconfig") || strings.Contains(stderr, "API server") {
					t.Errorf("exit %d, stderr %q: want exit %d naming %s, and no word of the cluster", code, stderr, ExitUsage, tc.flag)
				}
			})
		}
	}
	root := NewCmdNodeUpgrade(genericiooptions.NewTestIOStreamsDiscard())
	for _, c := range root.Commands() {
		if !covered[c.Name()] && c.Runnable() && !c.Hidden {
			t.Errorf("command %q has no case here: give it a bad flag value", c.Name())
		}
	}
}

// TestStateNamespaceRefusedBeforeTheCluster wants a --state-namespace no
// namespace can have refused by every command that takes it.
func TestStateNamespaceRefusedBeforeTheCluster(t *testing.T) {
	root := NewCmdNodeUpgrade(genericiooptions.NewTestIOStreamsDiscard())
	for _, c := range root.Commands() {
		if c.Flags().Lookup("state-namespace") == nil {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			args := []string{c.Name(), "demo", "--state-namespace", "Kube_System"}
			if c.Flags().Lookup("target-label") != nil {
				args = append(args, "--target-label=a=b")
			}
			_, stderr, code := executeBare(t, "", args...)
			if code != ExitUsage || !strings.Contains(stderr, `invalid --state-namespace "Kube_System"`) {
				t.Errorf("exit %d, stderr %q", code, stderr)
			}
		})
	}
}

// TestInterruptedExitsFour: a command interrupted while it plans (the
// cancel wrapped in a usage or input error on its way up) exits 4 as
// docs/scripting.md says, not 2; a stop on purpose keeps its own code.
func TestInterruptedExitsFour(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"planning, wrapped in a usage error", session.Usagef("cannot resume: error when reading node group %q: %w", "ng", context.Canceled), ExitFailure},
		{"running", fmt.Errorf("batch 1/3: %w", context.Canceled), ExitFailure},
		{"paused by cancel", &upgrade.PausedError{Phase: plan.PhaseCordon}, ExitPaused},
		{"nodes quarantined", fmt.Errorf("run: %w", &upgrade.QuarantinedError{Nodes: []state.Quarantined{{Node: "n1"}}}), ExitPaused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if got := PrintError(&out, tc.err); got != tc.want {
				t.Errorf("exit %d, want %d (%s)", got, tc.want, out.String())
			}
		})
	}
}

// TestBadPriceFile wants a --price-file that does not hold prices refused
// by plan and run alike, in one line naming the flag and the problem,
// before the cluster is asked.
func TestBadPriceFile(t *testing.T) {
	dir := t.TempDir()
	undated := filepath.Join(dir, "undated.yaml")
	if err := os.WriteFile(undated, []byte("prices:\n  m5.large:\n    us-east-1: 0.096\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"undated": undated, "missing": filepath.Join(dir, "absent.yaml")}
	for _, command := range [][]string{{"plan", "demo"}, {"run", "demo", "--target-label=a=b", "--yes"}} {
		for name, file := range files {
			t.Run(command[0]+", "+name, func(t *testing.T) {
				args := append(slices.Clone(command), "--price-file", file, "--server", "https://"+closedPort(t))
				_, stderr, code := executeBare(t, "", args...)
				if code != ExitUsage || !strings.Contains(stderr, "--price-file") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || strings.Contains(stderr, "API server") {
					t.Errorf("exit %d, stderr %q: want exit %d, one line naming --price-file", code, stderr, ExitUsage)
				}
			})
		}
	}
}
