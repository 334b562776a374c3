package aws

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// TestUnreachableEndpointIsMarked: a call that gets no answer from its
// endpoint (AWS_ENDPOINT_URL at a closed port, a certificate that does not
// verify) carries a cloud.UnreachableError naming the endpoint's host, and
// is still the SDK's connection error that its retryer retried; an
// endpoint that answers, even with an error, is not unreachable.
func TestUnreachableEndpointIsMarked(t *testing.T) {
	t.Parallel()
	closed := closedPort(t)
	untrusted := httptest.NewUnstartedServer(http.NotFoundHandler())
	untrusted.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes it refuses
	untrusted.StartTLS()
	t.Cleanup(untrusted.Close)
	answering := httptest.NewServer(&fakeAWS{replies: map[string]func(url.Values) reply{
		"DescribeAutoScalingInstances": func(url.Values) reply { return asgError("AccessDenied", "User is not authorized.") },
	}})
	t.Cleanup(answering.Close)
	for _, tc := range []struct {
		name, endpoint string
		marked         bool
		want           string // in the provider's message
	}{
		{name: "connection refused", endpoint: "http://" + closed, marked: true, want: "connection refused"},
		{name: "untrusted certificate", endpoint: untrusted.URL, marked: true, want: "certificate"},
		{name: "an answer", endpoint: answering.URL, want: "AccessDenied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			retries := 0
			shared := newRetryer(func(o *retry.StandardOptions) { o.Backoff = noWait{} })
			p := NewFromConfig(sdkaws.Config{
				Region:       "us-east-1",
				Credentials:  credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
				BaseEndpoint: sdkaws.String(tc.endpoint),
				Retryer:      func() sdkaws.Retryer { return countingRetryer{shared, &retries} },
			}, Options{})
			_, err := p.FindGroup(context.Background(), []string{"i-1"})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), `cannot find the Auto Scaling group of instances "i-1": `) {
				t.Fatalf("error %v, want the provider's with %q", err, tc.want)
			}
			var u *cloud.UnreachableError
			if errors.As(err, &u) != tc.marked {
				t.Fatalf("error %v marked unreachable: %v, want %v", err, !tc.marked, tc.marked)
			}
			if !tc.marked {
				return
			}
			host := strings.TrimPrefix(strings.TrimPrefix(tc.endpoint, "http://"), "https://")
			if u.Cloud != "AWS" || u.Endpoint != host || !strings.Contains(u.Settings, "AWS_ENDPOINT_URL") || !strings.Contains(u.Settings, "--region") {
				t.Errorf("marked %+v, want AWS at %q with its settings", u, host)
			}
			// refused: retried as the SDK's connection error, marked or not
			if tc.name == "connection refused" && retries != cloudAttempts-1 {
				t.Errorf("%d retries, want the retryer's %d", retries, cloudAttempts-1)
			}
		})
	}
}

// countingRetryer counts the retries the retryer lets happen.
type countingRetryer struct {
	sdkaws.Retryer
	n *int
}

func (r countingRetryer) GetRetryToken(ctx context.Context, opErr error) (func(error) error, error) {
	*r.n++
	return r.Retryer.GetRetryToken(ctx, opErr)
}

// closedPort is a local address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
