package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	awsprovider "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aws"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
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

// TestCloudUnreachableIsNotTheAPIServer: a cloud's API that does not
// answer (AWS, Google: their endpoint at a closed port, as
// AWS_ENDPOINT_URL or NODEUPGRADE_GCE_ENDPOINT would point it) exits 11
// with a message naming its endpoint and the settings that lead there,
// never "the API server" (exit 9); a failure of the Kubernetes API server,
// Karpenter's NodePools (read through it) among its requests, stays exit 9.
// The errors are the clients' own, made by calls to the closed port.
func TestCloudUnreachableIsNotTheAPIServer(t *testing.T) {
	closed := closedAddr(t)
	ctx := context.Background()
	awsp := awsprovider.NewFromConfig(sdkaws.Config{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		BaseEndpoint: sdkaws.String("http://" + closed), Retryer: func() sdkaws.Retryer { return sdkaws.NopRetryer{} },
	}, awsprovider.Options{})
	_, awsErr := awsp.FindGroup(ctx, []string{"i-1"})
	t.Setenv(gce.EndpointEnv, "http://"+closed+"/compute/v1/")
	t.Setenv(gce.NoAuthEnv, "true")
	gcep, err := gce.New(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	_, gceErr := gcep.ResolveTarget(ctx, "", "", "tmpl-v2")
	dyn, err := dynamic.NewForConfig(&rest.Config{Host: "http://" + closed})
	if err != nil {
		t.Fatal(err)
	}
	_, kubeErr := dyn.Resource(schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}).Get(ctx, "np", metav1.GetOptions{})
	server := "http://" + closed
	configFlags := genericclioptions.NewConfigFlags(false)
	configFlags.APIServer = &server
	for _, tc := range []struct {
		name string
		err  error
		code int
		want []string // in the printed error
		not  string
	}{
		{"AWS Auto Scaling", fmt.Errorf("error when opening the cloud group: %w", awsErr), ExitCloudUnreachable,
			[]string{"error: cannot reach the AWS API at " + closed + `: error when opening the cloud group: cannot find the Auto Scaling group of instances "i-1": `, "connection refused", "; check --region, AWS_ENDPOINT_URL"}, "API server"},
		{"Google Compute Engine", gceErr, ExitCloudUnreachable,
			[]string{"error: cannot reach the Google Cloud API at " + closed + `: cannot get instance template "tmpl-v2": dial tcp ` + closed, "; check NODEUPGRADE_GCE_ENDPOINT"}, "API server"},
		{"Karpenter's NodePool, from the API server", fmt.Errorf("cannot read NodePool %q: %w", "np", kubeErr), ExitUnreachable,
			[]string{"error: lost the API server http://" + closed + `: cannot read NodePool "np": dial tcp ` + closed}, "cannot reach the"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("the call succeeded")
			}
			var out bytes.Buffer
			code := PrintError(&out, explainConnection(tc.err, configFlags, true))
			got := out.String()
			if code != tc.code || strings.Contains(got, tc.not) {
				t.Errorf("exit %d, printed %s; want exit %d, without %q", code, got, tc.code, tc.not)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("printed %s; want %q in it", got, w)
				}
			}
			// The cloud's, left as it is (an in-cluster pod's), exits the
			// same; the API server's is told by explainConnection alone.
			if c := ExitCode(tc.err); tc.code == ExitCloudUnreachable && c != tc.code {
				t.Errorf("ExitCode of the bare error: %d, want %d", c, tc.code)
			}
			t.Log(got)
		})
	}
}

// closedAddr is a local address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
