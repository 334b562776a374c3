package transport

import (
	"context"
	"time"
)

// Sleep waits d, or less if ctx ends first: then it returns ctx's error.
// The one wait between polls and retries of the plugin's loops.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
