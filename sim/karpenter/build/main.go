// Command build builds the Karpenter the simulated cluster runs, once per
// machine (karpenter.Build), so that hack/test.sh can build it beside the
// unit tests instead of inside the end-to-end tests' time limit.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/karpenter"
)

func main() {
	path, took, err := karpenter.Build(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("karpenter %s: %s (built in %s)\n", karpenter.Version, path, took.Round(1e9))
}
