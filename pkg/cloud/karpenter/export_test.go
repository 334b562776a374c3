package karpenter

import (
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// UseDynamic makes the provider read and write Karpenter's objects
// through dc, and look again every 20ms, until the test ends: for the
// tests of package karpenter_test (the conformance suite imports the
// plugin, which imports this package).
func UseDynamic(t *testing.T, dc dynamic.Interface) {
	t.Helper()
	prevFor, prevPoll := dynamicFor, pollEvery
	dynamicFor = func(kubernetes.Interface) (dynamic.Interface, error) { return dc, nil }
	pollEvery = 20 * time.Millisecond
	t.Cleanup(func() { dynamicFor, pollEvery = prevFor, prevPoll })
}

// NodePools and NodeClaims are Karpenter's resources.
var NodePools, NodeClaims = nodePools, nodeClaims

// The NodePool's template hash annotations.
const HashAnnotation, HashVersionAnnotation = hashAnnotation, hashVersionAnnot
