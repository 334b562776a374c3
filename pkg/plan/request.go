package plan

import (
	"encoding/json"
	"strconv"
	"time"
)

// Request is what the user asked for, typed: the planning flags and the
// run's. A run records it, so resume and rollback repeat the run from it
// rather than from command-line text. Defaults are resolved before it is
// recorded (the seed drawn, the strategy's timeouts filled in).
type Request struct {
	NodeGroup      string `json:"nodeGroup,omitempty"`
	NodeGroupLabel string `json:"nodeGroupLabel,omitempty"`
	Selector       string `json:"selector,omitempty"`
	// TargetLabels are key=value as --target-label takes them.
	TargetLabels   []string       `json:"targetLabels,omitempty"`
	Strategy       string         `json:"strategy"`
	MaxUnavailable string         `json:"maxUnavailable"`
	MaxSurge       int            `json:"maxSurge,omitempty"`
	BlueGreen      BlueGreenInput `json:"blueGreen"`
	Taint          string         `json:"taint,omitempty"`
	Seed           int64          `json:"seed"`
	Order          string         `json:"order,omitempty"`
	// Provider is --provider as given; empty detects it from the nodes.
	Provider           string      `json:"provider,omitempty"`
	Cloud              CloudTarget `json:"cloud"`
	Force              bool        `json:"force,omitempty"`
	DeleteEmptyDirData bool        `json:"deleteEmptyDirData,omitempty"`
	// MakeRoom surges the Deployments a batch would take below their
	// Ready count or past their budgets before it drains (package makeroom).
	MakeRoom bool `json:"makeRoom,omitempty"`
	// PriceFile is --price-file, Prices what it holds (read before the
	// cluster is touched; the plan's Cost prices the added nodes by it).
	PriceFile string     `json:"priceFile,omitempty"`
	Prices    *PriceFile `json:"-"`

	// What a run does beyond the plan.
	DrainTimeout time.Duration `json:"drainTimeout,omitempty"`
	// Undrainable (--undrainable) is "cordon" to quarantine a node whose
	// drain a pod still holds at --drain-timeout and go on; "" or "fail"
	// stops the run there. MaxBlockedNodes (--max-blocked-nodes) stops
	// it once that many are quarantined; 0 never does.
	Undrainable      string        `json:"undrainable,omitempty"`
	MaxBlockedNodes  int           `json:"maxBlockedNodes,omitempty"`
	PostDrainWait    time.Duration `json:"postDrainWait"`
	NodeReadyTimeout time.Duration `json:"nodeReadyTimeout,omitempty"`
	// TerminateTimeout bounds the wait for a removed machine to be gone.
	TerminateTimeout time.Duration `json:"terminateTimeout,omitempty"`
	DeleteNode       bool          `json:"deleteNode"`
	// LeaveMachinesRunning lets provider none delete the Node objects of
	// nodes whose machines a cloud group may own (see GroupCloud).
	LeaveMachinesRunning bool          `json:"leaveMachinesRunning,omitempty"`
	IgnoreChecks         []string      `json:"ignoreChecks,omitempty"`
	MaxAge               time.Duration `json:"maxAge,omitempty"`
	// Hooks are run around each node; the record repeats them on resume.
	Hooks Hooks `json:"hooks"`
	// DeregistrationTimeout bounds the wait for the cloud's load balancers
	// to let go of a drained node; 0 (a record from before the flag) is
	// DefaultDeregistrationTimeout.
	DeregistrationTimeout time.Duration `json:"deregistrationTimeout,omitempty"`
	// Windows, NotBefore and NotAfter are when batches and the steps that
	// take capacity away may start (--window, --not-before, --not-after,
	// as given; see package window).
	Windows   []string `json:"windows,omitempty"`
	NotBefore string   `json:"notBefore,omitempty"`
	NotAfter  string   `json:"notAfter,omitempty"`
	// Waves are --waves, --wave-soak and the gates (waves.go).
	Waves Waves `json:"waves"`
	// PlanFile is a plan saved with "plan -o json" that the run executes.
	PlanFile string `json:"planFile,omitempty"`
	// Dir is the directory the run was started in, where its exec: gates
	// run on every attempt (resume may be typed anywhere); "" until the
	// run starts.
	Dir string `json:"dir,omitempty"`
}

// DefaultDeregistrationTimeout is --deregistration-timeout's default: a
// minute above AWS's default deregistration delay of 300 s.
const DefaultDeregistrationTimeout = 6 * time.Minute

// CloudTarget is what the cloud flags ask for, in every cloud's terms.
type CloudTarget struct {
	// Group names the node group's cloud group (--asg); empty finds it
	// from the nodes.
	Group string `json:"group,omitempty"`
	// Image makes a new template version from the current one with only
	// the image changed (--ami); Version selects an existing version
	// (--launch-template-version); both empty keeps the group's current
	// configuration as the target.
	Image   string `json:"image,omitempty"`
	Version string `json:"version,omitempty"`
	// Options are settings only one provider has, by the name of its flag
	// (see cloud.Flags.Option): aws's region, profile and
	// keep-default-version among them.
	Options map[string]string `json:"options,omitempty"`
	// Strategy is the run's --strategy: a group whose service runs one
	// strategy itself and whose others the run carries out (an EKS
	// managed node group: its own update for eks, green groups for
	// blue/green) is opened for the one asked.
	Strategy StrategyName `json:"-"`
	// Exclude are groups whose machines are not the node group's (a
	// blue/green run's given green group, whose nodes carry the same
	// labels).
	Exclude []string `json:"-"`
}

// Given reports whether the target names anything, so that only a cloud
// provider can serve it.
func (t CloudTarget) Given() bool {
	return t.Group != "" || t.Image != "" || t.Version != "" || len(t.Options) > 0
}

// NothingToDo reports whether a run of the plan would change nothing: no
// node to drain, no interrupted scale-up to finish, no group to point at a
// target.
func (p *Plan) NothingToDo() bool {
	return len(p.Batches) == 0 && !(p.Cloud != nil && (p.Cloud.Resumed || p.Cloud.BlueDeleted != "" || p.Cloud.InterruptedGreen != "")) && !p.Traits().LeavesRunning
}

// UnmarshalJSON reads a target as recorded by versions before aws's
// region, profile and keep-default-version moved into Options, so that a
// run recorded by one of them resumes.
func (t *CloudTarget) UnmarshalJSON(b []byte) error {
	type target CloudTarget // without this method
	var legacy struct {
		target
		Region      string `json:"region"`
		Profile     string `json:"profile"`
		KeepDefault bool   `json:"keepDefault"`
	}
	if err := json.Unmarshal(b, &legacy); err != nil {
		return err
	}
	*t = CloudTarget(legacy.target)
	for name, v := range map[string]string{"region": legacy.Region, "profile": legacy.Profile, "keep-default-version": strconv.FormatBool(legacy.KeepDefault)} {
		if v == "" || v == "false" || t.Options[name] != "" {
			continue
		}
		if t.Options == nil {
			t.Options = map[string]string{}
		}
		t.Options[name] = v
	}
	return nil
}
