package e2e

import (
	"bufio"
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestEvictionsThrottledByTheAPIServer runs an upgrade whose evictions the
// API server's own Priority and Fairness rejects with 429 and Retry-After,
// as a loaded control plane does: a FlowSchema puts the evictions of one
// user (bound to deploy/rbac.yaml) on a priority level of about 3 seats
// that rejects what does not fit, and one batch evicts 18 pods of a
// Deployment without a PDB at once. The run retries them after their
// Retry-After, completes, and reports no PDB where none is in the way.
func TestEvictionsThrottledByTheAPIServer(t *testing.T) {
	t.Parallel()
	const (
		name  = "apf"
		user  = "throttled-upgrader"
		level = "nodeupgrade-e2e-throttled"
	)
	setupGroup(t, name, 3, 3,
		scenario.App{Name: "batch", Replicas: 36},
		scenario.App{Name: "web", Replicas: 6, MaxUnavailable: num(1)},
	)
	kubeconfig := boundUser(t, user)
	ctx := testContext(t, 10*time.Minute)
	throttleEvictionsOf(t, ctx, user, level)
	rejectedBefore := rejectedRequests(t, ctx, level)

	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	r := pluginAs(t, kubeconfig, "run", name, "--target-label", target, "--max-unavailable", "3", "--post-drain-wait", "0s", "--yes")
	assertNoViolations(t, watcher.Stop())
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run failed: %s", r)
	}
	// the server did push back: otherwise this test proves nothing
	rejected := rejectedRequests(t, ctx, level) - rejectedBefore
	if rejected == 0 {
		t.Fatalf("priority level %q rejected no request: nothing was throttled", level)
	}
	t.Logf("the API server rejected %d evictions with 429", rejected)
	// web's PDB does block its second pod; no PDB selects batch's pods
	for _, line := range strings.Split(r.stdout+r.stderr, "\n") {
		if strings.Contains(line, `"`+name+`/batch-`) && strings.Contains(line, "blocked") {
			t.Errorf("the run reported a block of a pod no PDB selects, where the API server throttled: %s", line)
		}
	}
	assertUpgraded(t, name, 3)
}

// throttleEvictionsOf puts user's evictions on a priority level of its own
// with one nominal concurrency share (the fewest seats the server gives a
// level) that rejects what does not fit, until the test ends.
func throttleEvictionsOf(t *testing.T, ctx context.Context, user, level string) {
	t.Helper()
	fc := client.FlowcontrolV1()
	one, none := int32(1), int32(0)
	if _, err := fc.PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: level},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: &one,
				LendablePercent:          &none,
				LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = fc.PriorityLevelConfigurations().Delete(context.Background(), level, metav1.DeleteOptions{})
	})
	if _, err := fc.FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: level},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         100,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: user}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods/eviction"},
					Namespaces: []string{flowcontrolv1.NamespaceEvery},
				}},
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = fc.FlowSchemas().Delete(context.Background(), level, metav1.DeleteOptions{})
	})
	// the API server's flow control controller says the schema is in use
	// by setting its Dangling condition to False
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		fs, err := fc.FlowSchemas().Get(ctx, level, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range fs.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling && c.Status == flowcontrolv1.ConditionFalse {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("flow schema %q not in use: %v", level, err)
	}
}

// rejectedRequests is the API server's count of the requests priority
// level rejected, from its metrics.
func rejectedRequests(t *testing.T, ctx context.Context, level string) int {
	t.Helper()
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_flowcontrol_rejected_requests_total{") || !strings.Contains(line, `priority_level="`+level+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		n += int(v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}
