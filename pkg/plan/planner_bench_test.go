package plan

import (
	"fmt"
	"testing"
)

// syntheticSnapshot is a 5,000-node cluster with 30 pods per node, a PDB per
// app, half the nodes outdated.
func syntheticSnapshot(nodes, podsPerNode int) Snapshot {
	var s Snapshot
	zones := []string{"a", "b", "c"}
	for i := range nodes {
		image := "ami-old"
		if i%2 == 0 {
			image = "ami-new"
		}
		s.Nodes = append(s.Nodes, node(fmt.Sprintf("node-%05d", i), "ng", zones[i%3], image))
	}
	const apps = 500
	for i := range nodes * podsPerNode {
		app := fmt.Sprintf("app-%d", i%apps)
		s.Pods = append(s.Pods, pod(fmt.Sprintf("ns-%d", i%50), fmt.Sprintf("pod-%d", i), s.Nodes[i%nodes].Name, app, "ReplicaSet/"+app))
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
