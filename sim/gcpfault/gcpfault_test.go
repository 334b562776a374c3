package gcpfault

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/api/googleapi"
)

// TestWriteIsWhatTheGoClientReads: each fault decodes, through the Go
// client's own CheckResponse, into its code, reason and message, and carries its status and domain.
func TestWriteIsWhatTheGoClientReads(t *testing.T) {
	for _, f := range Faults {
		t.Run(f.Status+"/"+f.Reason, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Write(rec, f)
			var raw struct {
				Error struct {
					Status string
					Errors []struct{ Domain string }
				}
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil || raw.Error.Status != f.Status || len(raw.Error.Errors) != 1 || raw.Error.Errors[0].Domain != f.Domain {
				t.Errorf("body %s (%v), want status %q and domain %q", rec.Body, err, f.Status, f.Domain)
			}
			err := googleapi.CheckResponse(rec.Result())
			var ge *googleapi.Error
			if !errors.As(err, &ge) {
				t.Fatalf("CheckResponse = %v, want a *googleapi.Error", err)
			}
			if ge.Code != f.Code || ge.Message != f.Message || len(ge.Errors) != 1 || ge.Errors[0].Reason != f.Reason {
				t.Errorf("decoded %+v, want %+v", ge, f)
			}
			if ge.Code < 500 && ge.Code != http.StatusTooManyRequests && ge.Errors[0].Reason != "rateLimitExceeded" && ge.Errors[0].Reason != "userRateLimitExceeded" {
				t.Errorf("%d %s is not a refusal Google documents as worth a retry", ge.Code, ge.Errors[0].Reason)
			}
		})
	}
}

// TestDice: the rate is kept, a seed repeats its sequence, and the zero
// Dice refuses nothing.
func TestDice(t *testing.T) {
	run := func(d *Dice, n int) []bool {
		out := make([]bool, n)
		for i := range out {
			out[i] = d.Inject(httptest.NewRecorder(), nil)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		rate     float64
		min, max int64 // of 2000 requests
	}{
		{name: "none", rate: 0, min: 0, max: 0},
		{name: "5%", rate: 0.05, min: 60, max: 140},
		{name: "all", rate: 1, min: 2000, max: 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Dice{Rate: tc.rate, Seed: 7}
			first := run(d, 2000)
			if n := d.Count(); n < tc.min || n > tc.max {
				t.Errorf("refused %d of 2000 at rate %v, want %d..%d", n, tc.rate, tc.min, tc.max)
			}
			again := run(&Dice{Rate: tc.rate, Seed: 7}, 2000)
			for i := range first {
				if first[i] != again[i] {
					t.Fatalf("request %d: refused %v, then %v with the same seed", i, first[i], again[i])
				}
			}
		})
	}
	var zero *Dice
	if zero.Inject(httptest.NewRecorder(), nil) || zero.Count() != 0 {
		t.Error("a nil Dice refused a request")
	}
}

// TestDicePicksEveryFault: over many refusals each shape is sent.
func TestDicePicksEveryFault(t *testing.T) {
	d := &Dice{Rate: 1, Seed: 1}
	seen := map[string]bool{}
	for range 500 {
		rec := httptest.NewRecorder()
		d.Inject(rec, nil)
		var ge *googleapi.Error
		if errors.As(googleapi.CheckResponse(rec.Result()), &ge) {
			seen[http.StatusText(ge.Code)+ge.Errors[0].Reason] = true
		}
	}
	if len(seen) != len(Faults) {
		t.Errorf("sent %d kinds of fault, want all %d: %v", len(seen), len(Faults), seen)
	}
}

// TestDiceFrom: a Dice of Late answers only DEADLINE_EXCEEDED, the fault
// that may come after the call was done.
func TestDiceFrom(t *testing.T) {
	d := &Dice{Rate: 1, From: Late}
	for range 20 {
		rec := httptest.NewRecorder()
		d.Inject(rec, nil)
		if rec.Code != http.StatusGatewayTimeout || !strings.Contains(rec.Body.String(), "DEADLINE_EXCEEDED") {
			t.Fatalf("answered %d %s, want 504 DEADLINE_EXCEEDED", rec.Code, rec.Body)
		}
	}
}
