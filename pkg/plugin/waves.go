package plugin

import (
	"github.com/spf13/pflag"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// addWaveFlags binds the waves and their gates (package gate, and
// plan.Waves) of run and plan.
func addWaveFlags(f *pflag.FlagSet, r *plan.Request) {
	w := &r.Waves
	f.StringSliceVar(&w.Sizes, "waves", nil, `Replace the outdated nodes in waves, each drained in batches of --max-unavailable, the first the canary: a count is the nodes a wave takes (1), a share how far the run has got by its end (10%), e.g. "1,10%,50%,100%"; before each wave after the first the run soaks (--wave-soak), then evaluates the gates (--gate)`)
	durationVar(f, &w.Soak, "wave-soak", 0, "How long the run waits after a wave's last batch has recovered before it evaluates the gates over that time and starts the next wave")
	f.StringArrayVar(&w.Gates, "gate", nil, `A health check the next wave waits for (repeatable): "prometheus:QUERY<THRESHOLD" (also <=, >, >=; every sample over the soak must pass), "alertmanager:LABEL=VALUE[,...]" (no matching alert firing) or "exec:COMMAND" (exit 0 passes). A gate that cannot be evaluated fails. Without --waves, each batch is a wave`)
	f.StringVar(&w.PrometheusURL, "prometheus-url", "", "The Prometheus (or compatible HTTP API) the prometheus: gates query, e.g. http://prometheus.monitoring:9090")
	f.StringVar(&w.AlertmanagerURL, "alertmanager-url", "", "The Alertmanager the alertmanager: gates ask, e.g. http://alertmanager.monitoring:9093")
	f.StringVar(&w.OnFail, "on-gate-fail", plan.OnGateFailPause, `What a failed gate does: "pause" stops the run as cancel does (exit 8; resume evaluates the gate again), "rollback" turns a blue/green run around (blue back in service); other strategies pause`)
}
