package gce

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/gcpclient"
)

// TestUnreachableEndpointIsMarked: a Compute call that gets no answer (its
// endpoint a closed port) keeps, behind the provider's one-line error, a
// cloud.UnreachableError naming the endpoint, so that it reads as Google
// Cloud's and not as the Kubernetes API server's.
func TestUnreachableEndpointIsMarked(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	old := gcpclient.FirstBackoff
	gcpclient.FirstBackoff = time.Millisecond
	t.Cleanup(func() { gcpclient.FirstBackoff = old })
	t.Setenv(EndpointEnv, "http://"+closed+"/compute/v1/")
	t.Setenv(NoAuthEnv, "true")
	p, err := New(context.Background(), "p")
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.ResolveTarget(context.Background(), "", "", "tmpl-v2")
	var u *cloud.UnreachableError
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !errors.As(err, &u) {
		t.Fatalf("error %v, want one marked unreachable", err)
	}
	if u.Cloud != "Google Cloud" || u.Endpoint != closed || !strings.Contains(u.Settings, EndpointEnv) {
		t.Errorf("marked %+v, want Google Cloud at %q with its settings", u, closed)
	}
}
