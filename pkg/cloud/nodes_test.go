package cloud

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestPoolOf(t *testing.T) {
	const label = "example.com/pool"
	node := func(name, pool string) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if pool != "" {
			n.Labels[label] = pool
		}
		return n
	}
	tests := []struct {
		name    string
		nodes   []corev1.Node
		want    string
		wantErr string
	}{
		{name: "one pool", nodes: []corev1.Node{node("a", "p1"), node("b", "p1")}, want: "p1"},
		{name: "a node without the label", nodes: []corev1.Node{node("a", "p1"), node("b", "")}, wantErr: `node "b" carries no example.com/pool label, so it is no SVC node pool's`},
		{name: "two pools", nodes: []corev1.Node{node("a", "p1"), node("b", "p2")}, wantErr: `SVC node pools "p1" and "p2"; SVC upgrades one pool at a time`},
		{name: "no node", wantErr: "no node to find the SVC node pool from"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PoolOf(tt.nodes, label, "SVC", "node pool")
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Fatalf("PoolOf = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			var e *Error
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &e) || !e.Input() {
				t.Fatalf("PoolOf = %q, %v; want an input error with %q", got, err, tt.wantErr)
			}
		})
	}
}

func TestNodeOf(t *testing.T) {
	present := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	failing := fake.NewClientset()
	failing.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	tests := []struct {
		name    string
		client  kubernetes.Interface
		node    string
		want    string
		wantErr string
	}{
		{name: "a node is read", client: fake.NewClientset(present), node: "a", want: "a"},
		{name: "a node gone is nil, no error", client: fake.NewClientset(present), node: "gone"},
		{name: "an API error names the node", client: failing, node: "a", wantErr: `error when reading node "a": connection refused`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := NodeOf(context.Background(), tt.client, tt.node)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("NodeOf = %v, %v; want error %q", n, err, tt.wantErr)
				}
				return
			}
			got := ""
			if n != nil {
				got = n.Name
			}
			if err != nil || got != tt.want {
				t.Fatalf("NodeOf = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
