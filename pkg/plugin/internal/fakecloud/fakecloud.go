// Package fakecloud is a cloud provider that lives in memory, for tests: a
// new cloud as the plugin sees one. Like pkg/cloud/aws it is a package of
// its own that registers itself (init, below) and owns its surface: its
// flags, what makes a node outdated, and what a run may do with its
// groups, which follows from the interfaces each kind of group implements
// (kinds.go, service.go). Only tests import it; the import is the one line
// that adds it, as pkg/plugin/providers.go's are for the real ones.
package fakecloud

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// Name is what --provider takes.
const Name = "fakecloud"

// The node labels the cloud puts on its nodes: the node group (see
// NodeGroupLabel) and the image, whose disagreement with the target
// makes a node outdated whatever its machine says.
const (
	NodeGroupLabel = "fakecloud.example/pool"
	ImageLabel     = "fakecloud.example/image"
)

// The provider's flags: three fill the neutral target under the cloud's
// own names, one the request's green group; two are settings only it has
// (kept in CloudTarget.Options), one of which names a target.
const (
	flagGroup   = "fake-group"
	flagImage   = "fake-image"
	flagVersion = "fake-version"
	// FlagGreen names an existing group as blue/green's green.
	FlagGreen = "fake-green"
	// optRelease names the target by itself, as a service's release
	// does: the image, like --fake-image.
	optRelease = "fake-release"
	// optSoak is the managed service's soak after its update
	// (UpdateSettings.Other["soak"]).
	optSoak = "fake-soak"
)

// The one registration line.
func init() { cloud.Register(Cloud{}) }

// Cloud is the provider as planning sees it.
type Cloud struct{}

// Name implements cloud.Cloud.
func (Cloud) Name() string { return Name }

// providerPrefix begins the provider ID of every machine of the cloud.
const providerPrefix = Name + ":///"

// Owns implements cloud.Cloud.
func (Cloud) Owns(providerID string) bool { return strings.HasPrefix(providerID, providerPrefix) }

// NodeGroupLabels implements cloud.NodeGroupLabeler: NODEGROUP is found by
// the cloud's own label.
func (Cloud) NodeGroupLabels() []string { return []string{NodeGroupLabel} }

// Help implements cloud.Helper.
func (Cloud) Help() string { return "terminate the fake machine; its group launches the target" }

// BindFlags implements cloud.FlagBinder.
func (Cloud) BindFlags(f *cloud.Flags) {
	t := f.Target()
	f.String(&t.Group, flagGroup, "fakecloud: the group of the nodes (default: found from the nodes)")
	f.String(&t.Image, flagImage, "fakecloud: the image the nodes must run, img-<name> (default: what the group launches now)")
	f.String(&t.Version, flagVersion, "fakecloud: the template version the nodes must run")
	f.GreenGroup(FlagGreen, "fakecloud: with --strategy blue-green, use this existing group as green")
	f.TargetOption(optRelease, "fakecloud: the release the nodes must run, an image img-<name>")
	f.Option(optSoak, "fakecloud: how long the service soaks after its update, for the run (a duration)")
}

// FlagValues implements cloud.FlagValues.
func (Cloud) FlagValues(flag string) []string {
	if flag == flagImage {
		return []string{imageA, imageB}
	}
	return nil
}

var imagePattern = regexp.MustCompile(`^img-[a-z0-9]+$`)

// inputError is an error the user fixes by changing a flag: its Input
// method is how the plugin tells it from the cloud's (exit 2).
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }
func (e *inputError) Input() bool   { return true }

// Validate implements cloud.Cloud: the flags' values, without the cloud.
func (Cloud) Validate(t plan.CloudTarget) error {
	if t.Image != "" && !imagePattern.MatchString(t.Image) {
		return &inputError{fmt.Sprintf("invalid --%s %q: want img-<name>", flagImage, t.Image)}
	}
	if v := t.Options[optRelease]; v != "" && !imagePattern.MatchString(v) {
		return &inputError{fmt.Sprintf("invalid --%s %q: want img-<name>", optRelease, v)}
	}
	if v := t.Options[optSoak]; v != "" {
		if d, err := time.ParseDuration(v); err != nil || d < 0 {
			return &inputError{fmt.Sprintf("invalid --%s %q: want a duration such as 0s or 1h", optSoak, v)}
		}
	}
	return nil
}

// Open implements cloud.Cloud: the nodes' group and the target, read
// only, and the provider of the group's kind.
func (Cloud) Open(_ context.Context, client kubernetes.Interface, nodes []corev1.Node, t plan.CloudTarget) (*plan.CloudGroup, cloud.Provider, error) {
	w, ok := worlds.Load(client)
	if !ok {
		return nil, nil, fmt.Errorf("fakecloud: no cloud behind this cluster: %w", cloud.ErrNoGroup)
	}
	return w.(*World).open(nodes, t)
}
