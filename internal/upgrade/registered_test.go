package upgrade

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// The fake groups' provider, registered with a flag naming an existing
// version as a cloud has, so messages that name the provider's flags can
// be checked (a real cloud's flag would be another cloud's word).
func init() { cloud.Register(fakeCloud{}) }

const fakeVersionFlag = "fake-template-version"

type fakeCloud struct{}

func (fakeCloud) Name() string                    { return "fake" }
func (fakeCloud) Owns(string) bool                { return false }
func (fakeCloud) Validate(plan.CloudTarget) error { return nil }

func (fakeCloud) Open(context.Context, kubernetes.Interface, []corev1.Node, plan.CloudTarget) (*plan.CloudGroup, cloud.Provider, error) {
	return nil, nil, errors.New("the fake cloud is opened by the tests themselves")
}

func (fakeCloud) BindFlags(f *cloud.Flags) {
	f.String(&f.Target().Version, fakeVersionFlag, "the fake group's template version")
}
