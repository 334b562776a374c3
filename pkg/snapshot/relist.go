package snapshot

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// relists bounds how many times a list cut off while it streamed in is
// read again.
const relists = 5

// relistWait is the wait before the first list read again; tests shorten
// it.
var relistWait = time.Second

// relisting calls list until it succeeds, fails otherwise than by a lost
// connection, or was called relists times. The transport retries a page's
// request up to its answer, but a page decoded as it streams in cannot be
// sent again from where it broke: the list is read again from its first
// page, after restart empties what the broken one read and a wait (1 s,
// then 2 s and so on) told to the context's retry report. Each list reads
// the state of its own moment: the items are consistent either way.
func relisting(ctx context.Context, resource string, list func() error, restart func()) error {
	for attempt := 1; ; attempt++ {
		err := list()
		if err == nil || attempt >= relists || ctx.Err() != nil || !cutOff(err) {
			return err
		}
		wait := time.Duration(attempt) * relistWait
		transport.Tell(ctx, transport.RetryNotice{Verb: "GET", Target: resource, Reason: "the API server's answer was cut off, listing again", Wait: wait, Attempt: attempt})
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		restart()
	}
}

// cutOff says a list failed while its answer streamed in: a connection
// lost then, not a request that failed before its answer (a *url.Error,
// retried by the transport already or not to be retried: a refused
// connection to a server that never answered).
func cutOff(err error) bool {
	var uerr *url.Error
	return !errors.As(err, &uerr) && transport.LostConnection(err)
}
