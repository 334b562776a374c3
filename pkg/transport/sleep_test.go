package transport

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want error
	}{
		{name: "waits d", ctx: context.Background(), d: time.Millisecond},
		{name: "an ended context ends the wait", ctx: canceled, d: time.Hour, want: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			err := Sleep(tt.ctx, tt.d)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Sleep = %v, want %v", err, tt.want)
			}
			if tt.want == nil && time.Since(start) < tt.d {
				t.Fatalf("Sleep returned after %s, before %s", time.Since(start), tt.d)
			}
		})
	}
}
