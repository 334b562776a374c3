package gatetest

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that notes a skip or a failure instead of
// ending the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Skip(args ...any)                  { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// TestBinaryMissingSaysWhatItNeeds: a server that is not installed skips
// the test naming it and how to install it, unless RequiredEnv says the
// servers must be there (./hack/test.sh): then it fails.
func TestBinaryMissingSaysWhatItNeeds(t *testing.T) {
	for _, tc := range []struct {
		env                string
		wantSkip, wantFail bool
	}{
		{"", true, false},
		{"required", false, true},
	} {
		t.Run("env="+tc.env, func(t *testing.T) {
			t.Setenv(RequiredEnv, tc.env)
			r := &recorder{TB: t}
			Binary(r, "no-such-prometheus")
			said := r.skipped + r.failed
			if (r.skipped != "") != tc.wantSkip || (r.failed != "") != tc.wantFail {
				t.Fatalf("skipped %q, failed %q; want skip %v, fail %v", r.skipped, r.failed, tc.wantSkip, tc.wantFail)
			}
			for _, want := range []string{"no-such-prometheus is not installed", "apt-get install -y prometheus prometheus-alertmanager", ".ci/run"} {
				if !strings.Contains(said, want) {
					t.Errorf("%q does not say %q", said, want)
				}
			}
		})
	}
}
