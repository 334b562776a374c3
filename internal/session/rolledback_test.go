package session

import (
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// TestRolledBackNamesWhatTurnedItAround: a run that rolled back ends in
// a RolledBackError naming the failed gate from the record; one a
// rollback control turned around ends without an error (exit 0).
func TestRolledBackNamesWhatTurnedItAround(t *testing.T) {
	at := time.Now()
	bad := gate.Verdict{Gate: "prometheus:q<0.01", Kind: gate.Prometheus, What: "q", Threshold: "< 0.01", Value: "0.5", At: &at, Reason: gate.ReasonThreshold}
	for _, tt := range []struct {
		name  string
		gates []state.WaveGate
		want  string
	}{
		{"a failed gate", []state.WaveGate{{Wave: 2, Evaluated: &at, Verdicts: []gate.Verdict{bad}}}, `node group "g" rolled back (--on-gate-fail rollback) before wave 2: ` + bad.String()},
		{"a passed gate, then a rollback control", []state.WaveGate{{Wave: 2, Evaluated: &at, Pass: true}}, ""},
		{"no gate", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := rolledBack(&state.Record{Gates: tt.gates}, "g")
			if tt.want == "" {
				if err != nil {
					t.Errorf("error %q after a rollback control, want none", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one starting %q", tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) || !strings.Contains(err.Error(), "not upgraded") {
				t.Errorf("error %q, want it to start %q and say not upgraded", err, tt.want)
			}
		})
	}
}
