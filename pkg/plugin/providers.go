package plugin

// The cloud providers --provider can name: each registers itself.
import (
	_ "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aks"
	_ "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aws"
	_ "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
	_ "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gke"
	_ "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/karpenter"
	_ "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/vmss"
)
