package gcpclient

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/gcperr"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// API is the Google API a client talks to, which decides what of its calls
// may be sent again.
type API int

const (
	// Compute is Compute Engine: a call of a method that takes a requestId
	// carries one, which makes it safe to send again ("If you make a
	// request with the same request ID, the server ignores the request if
	// it has already been completed", compute-api.json, requestId); most
	// changes take one, some do not (setIamPolicy, setLabels,
	// applyUpdatesToInstances, ...: see computeMethodsTable).
	Compute API = iota
	// Container is GKE: its changes carry no request ID, so only reads are
	// sent again, and any call GKE refused before doing it (429).
	Container
	// ResourceManager's testIamPermissions is a read sent as a POST.
	ResourceManager
)

// maxAttempts is how often a call is sent at most.
const maxAttempts = 5

// FirstBackoff is the pause before a call's second attempt, doubling
// after (cloud.Backoff); tests of the providers shorten it.
var FirstBackoff = 500 * time.Millisecond

// WithRetries are opts with an HTTP client that sends a call again after
// an answer Google documents as transient (see gcperr.TransientCode),
// where the call may be repeated: reads always, Compute's changes with a
// requestId the transport adds once per call, any call refused for its
// rate (429, Compute's 403 rateLimitExceeded) since it was not done.
// A Compute change whose method takes no requestId is sent again only
// after such a refusal.
func WithRetries(ctx context.Context, api API, opts []option.ClientOption) ([]option.ClientOption, error) {
	hc, _, err := htransport.NewClient(ctx, opts...)
	if err != nil {
		return nil, gcperr.Wrap(err, true, "make an HTTP client for Google Cloud")
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	rt := &Transport{Base: base, API: api, Attempts: maxAttempts, Backoff: FirstBackoff}
	return append(slices.Clip(opts), option.WithHTTPClient(&http.Client{Transport: rt})), nil
}

// Transport sends a call again after a transient answer, with backoff
// (cloud.Backoff), Attempts times at most.
type Transport struct {
	Base     http.RoundTripper
	API      API
	Attempts int
	Backoff  time.Duration
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = t.withRequestID(req)
	repeatable := t.repeatable(req)
	for n := 1; ; n++ {
		r := req
		if n > 1 {
			var err error
			if r, err = rewind(req); err != nil {
				return nil, err
			}
		}
		resp, err := t.Base.RoundTrip(r)
		again := false
		if err != nil {
			again = repeatable && req.Context().Err() == nil
		} else {
			resp, again = transient(resp, repeatable)
		}
		if !again || n >= t.Attempts || !rewindable(req) {
			return resp, unreachable(req, err)
		}
		pause := cloud.Backoff(t.Backoff, n)
		if resp != nil {
			pause = max(pause, retryAfter(resp))
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		if err := transport.Sleep(req.Context(), pause); err != nil {
			return nil, err
		}
	}
}

// endpointSettings are what point a Google client at its endpoint and let
// it through (docs/providers/gce.md, gke.md).
const endpointSettings = "NODEUPGRADE_GCE_ENDPOINT and NODEUPGRADE_GKE_ENDPOINT where set, the credentials (GOOGLE_APPLICATION_CREDENTIALS; their token is fetched on the way), a proxy (HTTPS_PROXY) and the network to Google Cloud"

// unreachable marks err, a call's failure to get an answer (the token's
// fetch included), as a cloud.UnreachableError naming the endpoint; nil
// and an interruption stay as they are.
func unreachable(req *http.Request, err error) error {
	if err == nil || req.Context().Err() != nil {
		return err
	}
	return &cloud.UnreachableError{Cloud: "Google Cloud", Endpoint: req.URL.Host, Settings: endpointSettings, Err: err}
}

// retryAfter is the pause an answer asks for (Retry-After in seconds), at
// most a minute.
func retryAfter(resp *http.Response) time.Duration {
	s, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || s <= 0 {
		return 0
	}
	return min(time.Duration(s)*time.Second, time.Minute)
}

// read reports whether a call only reads: a GET; a Compute method sent
// as POST that takes no requestId and whose name says it reads (wait,
// list*, get*, testIamPermissions: globalOperations.wait,
// instanceGroupManagers.listManagedInstances, ...; compute-api.json);
// Resource Manager's testIamPermissions.
func (t *Transport) read(req *http.Request) bool {
	if req.Method == http.MethodGet {
		return true
	}
	last := req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:]
	switch t.API {
	case Compute:
		r, ok := findComputeRoute(req)
		return ok && !r.requestID && req.Method == http.MethodPost &&
			(last == "wait" || last == "testIamPermissions" || strings.HasPrefix(last, "list") || strings.HasPrefix(last, "get"))
	case ResourceManager:
		return strings.HasSuffix(last, ":testIamPermissions")
	}
	return false
}

// repeatable reports whether sending the call again cannot do it twice:
// a read, or a Compute change with a requestId. A Compute change whose
// method takes none (setIamPolicy, applyUpdatesToInstances, ...) may have
// been done when its answer is lost or a 5xx, so it is not.
func (t *Transport) repeatable(req *http.Request) bool {
	return t.read(req) || t.API == Compute && req.URL.Query().Get("requestId") != ""
}

// withRequestID gives a Compute call whose method takes a requestId
// (compute-api.json, by computeMethodsTable) one of its own, kept across
// its retries, unless the caller set one. Other methods get none: Compute
// refuses a parameter its method does not have.
func (t *Transport) withRequestID(req *http.Request) *http.Request {
	if t.API != Compute || req.URL.Query().Get("requestId") != "" {
		return req
	}
	if r, ok := findComputeRoute(req); !ok || !r.requestID {
		return req
	}
	out := req.Clone(req.Context())
	q := out.URL.Query()
	q.Set("requestId", newUUID())
	out.URL.RawQuery = q.Encode()
	return out
}

// newUUID is a random (version 4) UUID, as requestId takes ("must be a
// valid UUID with the exception that zero UUID is not supported").
// crypto/rand.Read never fails (it crashes the program instead).
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// rewindable reports whether the request's body can be sent again; one
// that cannot is not, and its answer (or error) is the caller's.
func rewindable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// rewind is the request again, its body from the start (see rewindable).
func rewind(req *http.Request) (*http.Request, error) {
	out := req.Clone(req.Context())
	if req.Body == nil || req.Body == http.NoBody {
		return out, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	out.Body = body
	return out, nil
}

// transient reports whether the answer asks for the call again: the
// answer, its body kept readable, and whether to send the call again.
func transient(resp *http.Response, repeatable bool) (*http.Response, bool) {
	if resp.StatusCode < 400 {
		return resp, false
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return resp, false
	}
	var ge *googleapi.Error
	if !errors.As(googleapi.CheckResponseWithBody(resp, body), &ge) {
		return resp, false
	}
	switch {
	case gcperr.Throttled(ge):
		return resp, true // refused for its rate: not done
	case gcperr.TransientCode(ge):
		return resp, repeatable
	}
	return resp, false
}
