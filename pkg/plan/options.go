package plan

// Options are the options of a run, beyond the nodes and batches, that
// decide what it checks before it starts and what it does around each
// batch. A saved plan carries them (Plan.Options) and `run --plan-file`
// takes them from it, so that the reviewed plan is checked and executed
// as a run given the same flags is: the gates evaluated before anything
// changes, the Deployments surged that the plan's lowered blockers count
// on, the drain's force and emptyDir settings the audit assumed.
//
// This is the one list: an option a plan's run depends on belongs here,
// with its flags in OptionFlags.
type Options struct {
	Force              bool           `json:"force,omitempty"`
	DeleteEmptyDirData bool           `json:"deleteEmptyDirData,omitempty"`
	MakeRoom           bool           `json:"makeRoom,omitempty"`
	BlueGreen          BlueGreenInput `json:"blueGreen"`
	Waves              Waves          `json:"waves"`
}

// OptionFlags are the flags that set Options: with --plan-file the plan's
// values hold, so these are given to "plan" instead.
var OptionFlags = []string{
	"force", "delete-emptydir-data", "make-room",
	"batch-node-count", "batch-percent", "batch-soak", "node-pool-soak", "green-selector", "wait-period",
	"waves", "wave-soak", "gate", "prometheus-url", "alertmanager-url", "on-gate-fail",
}

// OptionsOf are r's options.
func OptionsOf(r Request) *Options {
	return &Options{Force: r.Force, DeleteEmptyDirData: r.DeleteEmptyDirData, MakeRoom: r.MakeRoom, BlueGreen: r.BlueGreen, Waves: r.Waves}
}

// Apply sets o in r.
func (o Options) Apply(r *Request) {
	r.Force, r.DeleteEmptyDirData, r.MakeRoom, r.BlueGreen, r.Waves = o.Force, o.DeleteEmptyDirData, o.MakeRoom, o.BlueGreen, o.Waves
}
