package plan

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// syntheticSnapshot is a 5,000-node cluster with 30 pods per node, a PDB per
// app, half the nodes outdated. Each pod has a container with requests, the
// list shared by the pods of its app as in a snapshot (the interner).
func syntheticSnapshot(nodes, podsPerNode int) snapshot.Cluster {
	var s snapshot.Cluster
	zones := []string{"a", "b", "c"}
	for i := range nodes {
		image := "ami-old"
		if i%2 == 0 {
			image = "ami-new"
		}
		s.Nodes = append(s.Nodes, node(fmt.Sprintf("node-%05d", i), "ng", zones[i%3], image))
	}
	const apps = 500
	requests := make([]corev1.ResourceList, apps)
	for i := range requests {
		requests[i] = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(fmt.Sprintf("%dm", 10+i%50))}
	}
	for i := range nodes * podsPerNode {
		app := fmt.Sprintf("app-%d", i%apps)
		p := pod(fmt.Sprintf("ns-%d", i%50), fmt.Sprintf("pod-%d", i), s.Nodes[i%nodes].Name, app, "ReplicaSet/"+app)
		p.Spec.Containers = []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: requests[i%apps]}}}
		s.Pods = append(s.Pods, p)
	}
	for i := range apps {
		s.PDBs = append(s.PDBs, pdb(fmt.Sprintf("ns-%d", i%50), fmt.Sprintf("app-%d", i), fmt.Sprintf("app-%d", i), 1))
	}
	return s
}

func BenchmarkBuild5000Nodes150kPods(b *testing.B) {
	snap := syntheticSnapshot(5000, 30)
	// With --max-unavailable 1, the no-room check looks at 2,500 batches.
	for _, maxUnavailable := range []string{"20", "1"} {
		b.Run("max-unavailable-"+maxUnavailable, func(b *testing.B) {
			in := baseInput()
			in.MaxUnavailable = maxUnavailable
			b.ReportAllocs()
			for b.Loop() {
				p, err := Build(snap, in)
				if err != nil {
					b.Fatal(err)
				}
				if p.Nodes.Outdated != 2500 {
					b.Fatalf("outdated %d", p.Nodes.Outdated)
				}
			}
		})
	}
}
