package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// TestConnectionFailureKeepsWhatWasBeingDone: the message of a lost
// connection names the server, keeps the whole error (what was being done,
// and what the clean-up after it did) without the request's URL, and tells
// to check the kubeconfig only when the server never answered; an answer
// that outlasted the retries is not a lost connection.
func TestConnectionFailureKeepsWhatWasBeingDone(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/api/v1/nodes?limit=500", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	lost := &url.Error{Op: "Put", URL: "https://10.0.0.1:6443/api/v1/nodes/old-a1", Err: &transport.RetriesExhausted{
		Verb: "PUT", Target: "nodes/old-a1", Reason: "connection to the API server lost", Attempts: 9, For: 3 * time.Minute, Timeout: 3 * time.Minute}}
	tainting := fmt.Errorf("%w; and error when taking the upgrade's taint off the outdated nodes: %v (abort takes it off)",
		fmt.Errorf("error when tainting node %q: %w", "old-a1", lost), errors.New("timed out"))
	unavailable := fmt.Errorf("error when tainting node %q: %w", "old-a1", apierrors.NewServiceUnavailable("etcdserver: leader changed"))
	server := "https://10.0.0.1:6443"
	configFlags := genericclioptions.NewConfigFlags(false)
	configFlags.APIServer = &server
	tests := []struct {
		name     string
		err      error
		answered bool
		code     int
		want     string
	}{
		{"the first request refused", fmt.Errorf("error when listing nodes: %w", refused), false, ExitUnreachable,
			`error: cannot reach the API server https://10.0.0.1:6443: error when listing nodes: dial tcp: connect: connection refused; check --context, --server and the kubeconfig, or run again once the server answers`},
		{"lost after answers, with the clean-up's error", tainting, true, ExitUnreachable,
			`error: lost the API server https://10.0.0.1:6443: error when tainting node "old-a1": PUT nodes/old-a1: connection to the API server lost, 9 attempts in 3m0s (--request-retry-timeout 3m0s); and error when taking the upgrade's taint off the outdated nodes: timed out (abort takes it off); run the same command again once it answers`},
		{"refused after answers", refused, true, ExitUnreachable,
			`error: lost the API server https://10.0.0.1:6443: dial tcp: connect: connection refused; run the same command again once it answers`},
		{"503 until the retries ran out", unavailable, true, ExitFailure,
			`error: error when tainting node "old-a1": etcdserver: leader changed`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			code := PrintError(&out, explainConnection(tc.err, configFlags, tc.answered))
			if got := strings.TrimSuffix(out.String(), "\n"); got != tc.want || code != tc.code {
				t.Errorf("exit %d, printed\n%s\nwant exit %d and\n%s", code, got, tc.code, tc.want)
			}
		})
	}
}
