package plan

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
)

func TestEstimateCountsPostDrainWait(t *testing.T) {
	tests := []struct {
		name string
		wait time.Duration
		want time.Duration // 3 batches of a 1m drain and the wait
	}{
		{"no wait", 0, 3 * time.Minute},
		{"default wait", time.Minute, 6 * time.Minute},
		{"long wait", 10 * time.Minute, 33 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput()
			in.PostDrainWait = tc.wait
			p, err := Build(groupSnapshot(), in)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.EstimatedDuration(); got != tc.want {
				t.Errorf("estimate %s, want %s", got, tc.want)
			}
			var b bytes.Buffer
			if err := WriteTable(&b, p, time.Now(), false, false); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"(estimated " + FormatDuration(tc.want) + ";", "post-drain wait " + FormatDuration(tc.wait) + "):"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("the plan does not say %q:\n%s", want, b.String())
				}
			}
		})
	}
}

func TestPlanTableWording(t *testing.T) {
	tests := []struct {
		name           string
		maxUnavailable string
		want           []string
		dontWant       []string
	}{
		{"one node", "1", []string{"Max unavailable: 1 node per batch\n", "6 batches of up to 1 node:"}, []string{"(1)", "1 nodes"}},
		{"a percentage", "25%", []string{"Max unavailable: 2 nodes per batch (--max-unavailable 25%)\n", "3 batches of up to 2 nodes:"}, nil},
		{"more than outdated", "6", []string{"1 batch of up to 6 nodes:"}, []string{"1 batches"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput()
			in.MaxUnavailable = tc.maxUnavailable
			p, err := Build(groupSnapshot(), in)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := WriteTable(&b, p, time.Now(), false, false); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("missing %q in:\n%s", w, b.String())
				}
			}
			for _, w := range tc.dontWant {
				if strings.Contains(b.String(), w) {
					t.Errorf("says %q in:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestPlanWideAndName(t *testing.T) {
	p, err := Build(groupSnapshot(), baseInput())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		print func(*bytes.Buffer) error
		want  []string
	}{
		{"wide", func(b *bytes.Buffer) error { return WriteTable(b, p, time.Now(), false, true) }, []string{"TAINTED", "CORDONED", "PROVIDER ID"}},
		{"name", func(b *bytes.Buffer) error { return output.Print(b, output.FormatName, p) }, []string{"node/old-0\n", "node/old-5\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.print(&b); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("missing %q in:\n%s", w, b.String())
				}
			}
			if tc.name == "name" && strings.Count(b.String(), "\n") != 6 {
				t.Errorf("want the 6 outdated nodes, got:\n%s", b.String())
			}
		})
	}
	var narrow bytes.Buffer
	if err := WriteTable(&narrow, p, time.Now(), false, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(narrow.String(), "PROVIDER ID") {
		t.Errorf("the default table has the wide columns:\n%s", narrow.String())
	}
}

func TestGroupLineKey(t *testing.T) {
	for _, tc := range []struct{ kind, want string }{
		{"Auto Scaling group", "Auto Scaling"},
		{"EKS managed node group", "Group"}, // "EKS managed node:" would touch its value
		{"regional managed instance group", "Group"},
		{"zonal managed instance groups", "Group"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			if got := groupLineKey(tc.kind); got != tc.want {
				t.Errorf("groupLineKey(%q) = %q, want %q", tc.kind, got, tc.want)
			}
		})
	}
}
