package state

import (
	"fmt"
	"time"
)

// MaxHistory is how many finished runs a record keeps in History: enough
// to go back past a bad run and the rollback of it, small enough that the
// ConfigMap stays far below its size limit.
const MaxHistory = 10

// DefaultRollbackWindow is how long after a run finished rollback takes
// the group back to the version before it (--rollback-window): EKS
// rolls a cluster version back within 7 days.
const DefaultRollbackWindow = 7 * 24 * time.Hour

// Version is what a group launched, in its provider's words, as a run
// read it: the template and its version (a launch template version, an
// instance template), the image, the service's version (an EKS release,
// a GKE node version), or with provider none the node labels that mark
// the target. Empty fields were not known.
type Version struct {
	Provider     string            `json:"provider,omitempty"`
	Group        string            `json:"group,omitempty"`
	GroupKind    string            `json:"groupKind,omitempty"`
	Template     string            `json:"template,omitempty"`
	TemplateKind string            `json:"templateKind,omitempty"`
	Version      string            `json:"version,omitempty"`
	Image        string            `json:"image,omitempty"`
	Service      string            `json:"service,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	// InPlace: a run points a service's group back at this version
	// itself (the provider said so); BackBy, where it cannot, says why
	// and what goes back instead.
	InPlace bool   `json:"inPlace,omitempty"`
	BackBy  string `json:"backBy,omitempty"`
}

// Known reports whether v names anything a run could go back to.
func (v Version) Known() bool {
	return v.Template != "" || v.Version != "" || v.Image != "" || v.Service != "" || len(v.Labels) > 0
}

// String is v in a status line: `launch template "lt" version 3`.
func (v Version) String() string {
	switch {
	case v.Version != "" && v.Version == v.Template:
		return fmt.Sprintf("%s %s", or(v.TemplateKind, "template"), v.Template)
	case v.Version != "" && v.Template != "":
		return fmt.Sprintf("%s %q version %s", or(v.TemplateKind, "template"), v.Template, v.Version)
	case v.Version != "":
		return "version " + v.Version
	case v.Image != "":
		return fmt.Sprintf("image %q", v.Image)
	case v.Service != "":
		return v.Service
	case v.Template != "":
		return fmt.Sprintf("%s %q", or(v.TemplateKind, "template"), v.Template)
	case len(v.Labels) > 0:
		return fmt.Sprintf("nodes labelled %v", v.Labels)
	}
	return "an unrecorded version"
}

func or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// Change is one finished run of the group: what the group ran before it
// and after it, so a rollback after the run finished knows where to go
// back to without the operator reconstructing it.
type Change struct {
	Strategy   string    `json:"strategy"`
	Before     Version   `json:"before"`
	After      Version   `json:"after"`
	FinishedAt time.Time `json:"finishedAt"`
	// RollbackOf is set on a change that was itself a rollback: the
	// FinishedAt of the change it undid.
	RollbackOf *time.Time `json:"rollbackOf,omitempty"`
	// KeptBlue is, for blue/green with --keep-blue, the blue group kept
	// after the run, until KeptUntil: a rollback scales it back up.
	KeptBlue  string     `json:"keptBlue,omitempty"`
	KeptUntil *time.Time `json:"keptUntil,omitempty"`
	// KeptEnd is what became of KeptBlue: scaled back up by a rollback,
	// or deleted by a run after its time or after a later run.
	KeptEnd KeptEnd `json:"keptEnd,omitempty"`
}

// KeptEnd is what became of a kept blue group.
type KeptEnd string

// What became of a kept blue.
const (
	KeptRestored KeptEnd = "restored" // a rollback scaled it back up: it serves
	KeptDeleted  KeptEnd = "deleted"
)

// BlueKeptAt reports whether c's blue is kept at 0 nodes at now, for a
// rollback to scale back up.
func (c Change) BlueKeptAt(now time.Time) bool {
	return c.KeptBlue != "" && c.KeptEnd == "" && c.KeptUntil != nil && now.Before(*c.KeptUntil)
}

// RollbackUntil is when the window to roll c back closes.
func (c Change) RollbackUntil(window time.Duration) time.Time {
	return c.FinishedAt.Add(window)
}

// AddChange records c as the group's latest finished run, keeping the
// MaxHistory latest.
func (r *Record) AddChange(c Change) {
	r.History = append(r.History, c)
	if over := len(r.History) - MaxHistory; over > 0 {
		r.History = append([]Change(nil), r.History[over:]...)
	}
}

// LastChange is the group's latest finished run; false when none was
// recorded.
func (r *Record) LastChange() (Change, bool) {
	if r == nil || len(r.History) == 0 {
		return Change{}, false
	}
	return r.History[len(r.History)-1], true
}

// RollbackTarget is the version a rollback at now takes the group back
// to: the one before its latest finished run. It refuses when no run
// finished, when the version before it was not recorded, and past
// window, naming the window and the flag that changes it.
func (r *Record) RollbackTarget(now time.Time, window time.Duration) (Change, error) {
	c, ok := r.LastChange()
	switch {
	case !ok:
		return Change{}, fmt.Errorf("cannot roll back: no finished run of the group is recorded")
	case !c.Before.Known():
		return Change{}, fmt.Errorf("cannot roll back: the run finished at %s did not record the version before it", c.FinishedAt.Format(time.RFC3339))
	case now.After(c.RollbackUntil(window)):
		return Change{}, fmt.Errorf("cannot roll back: the run finished at %s, more than the rollback window of %s ago (--rollback-window)", c.FinishedAt.Format(time.RFC3339), window)
	}
	return c, nil
}
