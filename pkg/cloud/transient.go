package cloud

import (
	"errors"
	"time"
)

// Transient reports whether err passes with time: the cloud throttled the
// call, and its SDK's own retries ran out. A wait that polls the cloud
// backs off and looks again (see Backoff) until its own timeout, rather
// than ending the run. A provider marks such errors with a Transient
// method.
func Transient(err error) bool {
	var t interface{ Transient() bool }
	return errors.As(err, &t) && t.Transient()
}

// maxBackoff bounds Backoff: throttling is per account and region, so
// waiting longer than this between looks only delays the run.
const maxBackoff = 30 * time.Second

// Backoff is the pause before looking again after the nth transient error
// in a row (n from 1): doubling from base, at most 30s.
func Backoff(base time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}
