package cloud

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

type throttleErr struct{ transient bool }

func (e throttleErr) Error() string   { return "throttled" }
func (e throttleErr) Transient() bool { return e.transient }

func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{name: "marked transient", err: throttleErr{true}, want: true},
		{name: "wrapped", err: fmt.Errorf("look: %w", throttleErr{true}), want: true},
		{name: "marked not transient", err: throttleErr{false}},
		{name: "unmarked", err: errors.New("access denied")},
		{name: "nil", err: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Transient(tc.err); got != tc.want {
				t.Errorf("Transient(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		base time.Duration
		n    int
		want time.Duration
	}{
		{time.Second, 1, time.Second},
		{time.Second, 2, 2 * time.Second},
		{time.Second, 4, 8 * time.Second},
		{time.Second, 6, 30 * time.Second},
		{time.Second, 100, 30 * time.Second},
		{time.Minute, 1, 30 * time.Second},
	} {
		t.Run(fmt.Sprintf("%s×%d", tc.base, tc.n), func(t *testing.T) {
			if got := Backoff(tc.base, tc.n); got != tc.want {
				t.Errorf("Backoff(%s, %d) = %s, want %s", tc.base, tc.n, got, tc.want)
			}
		})
	}
}
