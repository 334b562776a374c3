package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/upgrade"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

var testNow = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// recordFor is a run on group that started 10 minutes before testNow and
// last wrote its record 4 minutes later, in batch 2 of 5 of a drain.
func recordFor(group string) *state.Record {
	return &state.Record{
		NodeGroup: group, Strategy: "eks", Phase: "Drain", Batch: 2, Batches: 5, NodesTotal: 9,
		Done: []string{"n1", "n2"}, InFlight: []string{"n3", "n4"},
		StartedAt: testNow.Add(-10 * time.Minute), UpdatedAt: testNow.Add(-6 * time.Minute),
	}
}

func TestDescribeRun(t *testing.T) {
	finished := testNow.Add(-time.Minute)
	soakEnds := testNow.Add(time.Hour)
	soakEnded := testNow.Add(-time.Hour)
	tests := []struct {
		name    string
		edit    func(r *state.Record)
		alive   bool
		request string
		want    string
		elapsed time.Duration
	}{
		{"live run", nil, true, "", StatusRunning, 10 * time.Minute},
		{"live run asked to pause", nil, true, state.RequestCancel, StatusPausing, 10 * time.Minute},
		{"paused by cancel", func(r *state.Record) {
			r.State, r.Note = state.StatePaused, "paused by cancel in phase Cordon"
		}, false, "", StatusPaused, 4 * time.Minute},
		{"dead run marked paused by cancel", nil, false, state.RequestCancel, StatusPaused, 4 * time.Minute},
		{"resumed run with an old pause note", func(r *state.Record) { r.State, r.Note = state.StateRunning, "paused by cancel in phase Cordon" }, true, "", StatusRunning, 10 * time.Minute},
		{"Ctrl-C", func(r *state.Record) { r.LastError = interruptedError }, false, "", StatusInterrupted, 4 * time.Minute},
		{"Ctrl-C, recorded by an older version", func(r *state.Record) { r.LastError = "context canceled" }, false, "", StatusInterrupted, 4 * time.Minute},
		{"Ctrl-C, lock not yet given up", func(r *state.Record) { r.LastError = "context canceled" }, true, "", StatusInterrupted, 10 * time.Minute},
		{"killed", nil, false, "", StatusInterrupted, 4 * time.Minute},
		{"failed drain", func(r *state.Record) { r.LastError = "batch 2: pods did not leave" }, false, "", StatusFailed, 4 * time.Minute},
		{"finished", func(r *state.Record) { r.Phase, r.FinishedAt = "Done", &finished }, false, "", StatusFinished, 9 * time.Minute},
		{"aborted by the abort command", func(r *state.Record) {
			r.Phase, r.FinishedAt, r.AbortedAt = "Taint", &finished, &finished
		}, false, "", StatusAborted, 9 * time.Minute},
		{"blue/green rolled back", func(r *state.Record) {
			r.State, r.Phase, r.FinishedAt, r.Note = state.StateRolledBack, "Done", &finished, `rolled back: blue (Auto Scaling group "ng") serves again`
		}, false, "", StatusRolledBack, 9 * time.Minute},
		{"eks rolled back to the version before", func(r *state.Record) {
			r.Phase, r.FinishedAt = "Done", &finished
			r.Cloud = &state.CloudRecord{GroupRecord: state.GroupRecord{FromVersion: "1", TargetVersion: "1"}}
			r.Request = &plan.Request{NodeGroup: "ng", MaxUnavailable: "2", Cloud: plan.CloudTarget{Version: "1"}}
		}, false, "", StatusRolledBack, 9 * time.Minute},
		{"eks upgrade that named its version", func(r *state.Record) {
			r.Phase, r.FinishedAt = "Done", &finished
			r.Cloud = &state.CloudRecord{GroupRecord: state.GroupRecord{FromVersion: "1", TargetVersion: "2"}}
			r.Request = &plan.Request{NodeGroup: "ng", Cloud: plan.CloudTarget{Version: "2"}}
		}, false, "", StatusFinished, 9 * time.Minute},
		{"rolling back", func(r *state.Record) { r.Phase = "Rollback" }, true, "", StatusRollingBack, 10 * time.Minute},
		{"soaking, alive", func(r *state.Record) { r.Phase = "Soak" }, true, "", StatusSoaking, 10 * time.Minute},
		{"left soaking (--no-wait)", func(r *state.Record) {
			r.Phase, r.Note, r.Cloud = "Soak", "soaking until ...", &state.CloudRecord{GreenRecord: state.GreenRecord{SoakUntil: &soakEnds}}
		}, false, "", StatusSoaking, 4 * time.Minute},
		{"waiting for a window", func(r *state.Record) { r.Phase, r.WaitingForWindow = "Recover", &soakEnds }, true, "", StatusWaiting, 10 * time.Minute},
		{"killed while waiting for a window", func(r *state.Record) { r.Phase, r.WaitingForWindow = "Recover", &soakEnds }, false, "", StatusInterrupted, 4 * time.Minute},
		{"stopped at --not-after", func(r *state.Record) {
			r.State, r.Phase, r.Note = state.StateWindowClosed, "Recover", (&upgrade.WindowClosedError{What: "batch 2/3", NotAfter: testNow}).Error()
		}, false, "", StatusWindowOver, 4 * time.Minute},
		{"Ctrl-C during the soak", func(r *state.Record) {
			r.State, r.LastError, r.Phase, r.Cloud = state.StateInterrupted, interruptedError, "Soak", &state.CloudRecord{GreenRecord: state.GreenRecord{SoakUntil: &soakEnds}}
		}, false, "", StatusSoaking, 4 * time.Minute},
		{"killed during the soak", func(r *state.Record) {
			r.State, r.Phase, r.Cloud = state.StateRunning, "Soak", &state.CloudRecord{GreenRecord: state.GreenRecord{SoakUntil: &soakEnded}}
		}, false, "", StatusSoakOver, 4 * time.Minute},
		{"left soaking, soak over", func(r *state.Record) {
			r.Phase, r.Note, r.Cloud = "Soak", "soaking until ...", &state.CloudRecord{GreenRecord: state.GreenRecord{SoakUntil: &soakEnded}}
		}, false, "", StatusSoakOver, 4 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := recordFor("ng")
			if tc.edit != nil {
				tc.edit(r)
			}
			s := describeRun(r, tc.alive, tc.request, testNow)
			if s.Status != tc.want {
				t.Errorf("status %q, want %q", s.Status, tc.want)
			}
			if got := time.Duration(s.ElapsedSeconds) * time.Second; got != tc.elapsed {
				t.Errorf("elapsed %s, want %s (frozen unless alive)", got, tc.elapsed)
			}
		})
	}
}

// statusFixture is a fake cluster with the records of recs, and a live
// lock for the groups in alive.
func statusFixture(t *testing.T, recs []*state.Record, alive ...string) kubernetes.Interface {
	t.Helper()
	client := fake.NewClientset()
	store := &state.Store{Client: client, Namespace: state.DefaultNamespace}
	for _, r := range recs {
		if slices.Contains(alive, r.NodeGroup) {
			r.Holder = "elsewhere/1"
		}
		started, updated := r.StartedAt, r.UpdatedAt
		if err := store.Save(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		r.StartedAt, r.UpdatedAt = started, updated
	}
	for _, g := range alive {
		holder, seconds, now := "elsewhere/1", int32(30), metav1.NewMicroTime(time.Now())
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: state.ObjectName(g), Namespace: state.DefaultNamespace},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, RenewTime: &now},
		}
		if _, err := client.CoordinationV1().Leases(state.DefaultNamespace).Create(context.Background(), lease, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return client
}

// runStatus runs status with args against client.
func runStatus(t *testing.T, client kubernetes.Interface, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	cmd, o := newCmdStatus(nil, streams)
	o.client, o.now = client, func() time.Time { return testNow }
	cmd.SetArgs(args)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err: err} })
	err := cmd.ExecuteContext(context.Background())
	code = PrintError(errOut, err)
	return out.String(), errOut.String(), code
}

func TestStatusTableAndJSONSayTheSame(t *testing.T) {
	long := strings.Repeat("pod \"shop/web-1\" cannot be evicted: the PodDisruptionBudget \"web\" allows 0 disruptions\n", 14)
	failed := recordFor("alpha")
	failed.LastError = long
	scaling := recordFor("beta")
	scaling.Phase, scaling.Batch, scaling.InFlight = "ScaleUp", 1, nil
	client := statusFixture(t, []*state.Record{failed, scaling}, "beta")

	table, _, code := runStatus(t, client, "-A")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header and 2 rows, got %d lines:\n%s", len(lines), table)
	}
	header := strings.Fields(lines[0])
	if strings.Join(header, " ") != "NODE GROUP STATUS PHASE BATCH DONE LEFT IN FLIGHT ELAPSED LAST ERROR" {
		t.Fatalf("header %q", lines[0])
	}
	alpha, beta := strings.Fields(lines[1]), strings.Fields(lines[2])
	if alpha[1] != StatusFailed || alpha[3] != "2/5" || !strings.HasSuffix(lines[1], "...") || len(lines[1]) > 200 {
		t.Errorf("failed run row %q: want failed, batch 2/5, last error cut on one line", lines[1])
	}
	if beta[1] != StatusRunning || beta[2] != "ScaleUp" || beta[3] != "-" {
		t.Errorf("scale-up row %q: want running, ScaleUp, no batch", lines[2])
	}

	out, _, code := runStatus(t, client, "-o", "json")
	var list RunStatusList
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list.Items) != 2 {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	for i, row := range [][]string{alpha, beta} {
		if list.Items[i].Status != row[1] || list.Items[i].Phase != row[2] {
			t.Errorf("JSON says %q/%q, the table %q/%q", list.Items[i].Status, list.Items[i].Phase, row[1], row[2])
		}
	}
	if list.Items[0].LastError != long {
		t.Errorf("JSON cut the last error")
	}

	// One group: a record as before, with the status beside it.
	out, _, _ = runStatus(t, client, "alpha", "-o", "yaml")
	var rec state.Record
	var extra struct{ Status string }
	if err := yaml.Unmarshal([]byte(out), &rec); err != nil || rec.LastError != long || rec.NodeGroup != "alpha" {
		t.Fatalf("status alpha -o yaml does not decode as the record: %v\n%s", err, out)
	}
	if err := yaml.Unmarshal([]byte(out), &extra); err != nil || extra.Status != StatusFailed {
		t.Fatalf("status alpha -o yaml: status %q, %v", extra.Status, err)
	}
}

func TestStatusOutputFormats(t *testing.T) {
	a, b := recordFor("alpha"), recordFor("beta")
	b.InFlight = []string{"n3", "n4", "n5", "n6"}
	client := statusFixture(t, []*state.Record{a, b}, "alpha", "beta")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"name", []string{"-o", "name"}, 0, "nodegroup.nodeupgrade.dev/alpha\nnodegroup.nodeupgrade.dev/beta\n"},
		{"jsonpath", []string{"-o", "jsonpath={.items[*].status}"}, 0, "running running"},
		{"go-template", []string{"beta", "-o", "go-template={{.nodeGroup}} {{len .inFlight}}"}, 0, "beta 4"},
		{"in flight cut", []string{"beta"}, 0, "n3,n4 +2 more"},
		{"wide names them all", []string{"beta", "-o", "wide"}, 0, "n3,n4,n5,n6"},
		{"wide has the holder", []string{"-o", "wide"}, 0, "elsewhere/1"},
		{"unknown group", []string{"gamma"}, ExitUsage, ""},
		{"bad format", []string{"-o", "xml"}, ExitUsage, ""},
		{"bad jsonpath", []string{"-o", "jsonpath={.items["}, ExitUsage, ""},
		{"-A and a group", []string{"alpha", "-A"}, ExitUsage, ""},
		{"-w without a group", []string{"-w"}, ExitUsage, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runStatus(t, client, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d (want %d), stdout %q, stderr %q; want %q", code, tc.code, out, stderr, tc.want)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe to read while status -w writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in:\n%s", s, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStatusWatchFollowsTheRunToItsEnd(t *testing.T) {
	tests := []struct {
		name string
		end  func(r *state.Record)
		code int
		last string
	}{
		{"finished", func(r *state.Record) {
			now := time.Now()
			r.Phase, r.Done, r.InFlight, r.FinishedAt = "Done", []string{"n1", "n2", "n3", "n4"}, nil, &now
		}, ExitOK, "finished, phase Done, 4 of 9 nodes done"},
		{"failed", func(r *state.Record) { r.LastError = "batch 2: pods did not leave" }, ExitFailure, "failed, phase Cordon, batch 2/5"},
		{"aborted", func(r *state.Record) {
			now := time.Now()
			r.FinishedAt, r.AbortedAt, r.InFlight = &now, &now, nil
		}, ExitOK, "aborted, phase Cordon"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := recordFor("ng")
			client := statusFixture(t, []*state.Record{rec}, "ng")
			out := &syncBuffer{}
			o := &StatusOptions{IOStreams: genericiooptions.IOStreams{Out: out, ErrOut: out}, NodeGroup: "ng", Watch: true,
				StateNamespace: state.DefaultNamespace, client: client, now: time.Now, recheck: time.Hour}
			done := make(chan error, 1)
			go func() { done <- o.Run(context.Background()) }()
			out.waitFor(t, "ng: running, phase Drain, batch 2/5, 2 of 9 nodes done, in flight n3,n4")

			store := &state.Store{Client: client, Namespace: state.DefaultNamespace}
			rec.Phase = "Cordon"
			if err := store.Save(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
			out.waitFor(t, "ng: running, phase Cordon")
			tc.end(rec)
			if err := store.Save(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
			// The run gives its lock up last.
			lock := &state.Lock{Client: client, Namespace: state.DefaultNamespace, Group: "ng", Holder: "elsewhere/1"}
			if err := lock.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if code := ExitCode(err); code != tc.code {
					t.Fatalf("exit %d (%v), want %d", code, err, tc.code)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("status -w did not end:\n%s", out.String())
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if !strings.Contains(lines[len(lines)-1], tc.last) {
				t.Errorf("last line %q, want %q", lines[len(lines)-1], tc.last)
			}
			for i := 1; i < len(lines); i++ {
				if lines[i][9:] == lines[i-1][9:] {
					t.Errorf("line %d repeats the one before: %q", i, lines[i])
				}
			}
		})
	}
}

// TestStatusWatchCtrlCStopsWatching: Ctrl-C on status -w, with no run or
// while one goes on, stops the watching: exit 0, and no word of abort.
func TestStatusWatchCtrlCStopsWatching(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records []*state.Record
		locked  []string
	}{
		{"no run", nil, nil},
		{"a run going on", []*state.Record{recordFor("ng")}, []string{"ng"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := statusFixture(t, tc.records, tc.locked...)
			out := &syncBuffer{}
			o := &StatusOptions{IOStreams: genericiooptions.IOStreams{Out: out, ErrOut: out}, NodeGroup: "ng", Watch: true,
				StateNamespace: state.DefaultNamespace, client: client, now: time.Now, recheck: time.Hour}
			ctx, interrupt := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- o.Run(ctx) }()
			if tc.records != nil {
				out.waitFor(t, "ng: running")
			} else {
				time.Sleep(100 * time.Millisecond) // watching, with nothing to print
			}
			interrupt()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("status -w did not stop at Ctrl-C:\n%s", out.String())
			}
			errOut := &bytes.Buffer{}
			if code := PrintError(errOut, err); code != ExitOK {
				t.Errorf("exit %d (%s), want %d", code, errOut, ExitOK)
			}
			if all := out.String() + errOut.String(); strings.Contains(all, "abort") || strings.Contains(all, "interrupted") {
				t.Errorf("Ctrl-C on a watch suggests abort or reads as an interrupted run:\n%s", all)
			}
		})
	}
}

func TestStatusWatchEndsAtOnceOnAStoppedRun(t *testing.T) {
	rec := recordFor("ng")
	rec.State, rec.Note = state.StatePaused, "paused by cancel in phase Drain"
	client := statusFixture(t, []*state.Record{rec})
	out, stderr, code := runStatus(t, client, "ng", "-w")
	if code != ExitPaused || !strings.Contains(out, "ng: paused") || !strings.Contains(stderr, "resume ng") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

func TestWatchLineSaysInterruptedNotContextCanceled(t *testing.T) {
	tests := []struct {
		name, lastError, want string
	}{
		{"recorded now", interruptedError, "last error: interrupted (Ctrl-C or SIGTERM)"},
		{"recorded by an older version", "context canceled", "last error: interrupted (Ctrl-C or SIGTERM)"},
		{"a failure", "error when draining node \"n3\":\nboom", "last error: error when draining node \"n3\": boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := recordFor("ng")
			r.LastError = tc.lastError
			line := (&StatusOptions{}).watchLine(describeRun(r, false, "", testNow))
			if !strings.HasSuffix(line, tc.want) {
				t.Errorf("line %q does not end with %q", line, tc.want)
			}
		})
	}
}

// TestStatusOfARunThatEndsBetweenItsRecordAndItsLock: status reads the
// record, then the lock; a run that writes its last record and gives its
// lock up in between has finished, not paused (its record still carries
// the note of the cancel it was resumed from) or stopped.
func TestStatusOfARunThatEndsBetweenItsRecordAndItsLock(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"status", []string{"ng"}, ExitOK},
		{"status -w", []string{"ng", "-w"}, ExitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := recordFor("ng")
			rec.Phase, rec.Done, rec.InFlight = "Done", []string{"n1", "n2", "n3", "n4"}, nil
			rec.Note = "paused by cancel in phase Drain; continue with resume, or undo with rollback"
			client := statusFixture(t, []*state.Record{rec}, "ng")

			// The last record as the run writes it, taken from a cluster of its own.
			finished := *rec
			now := time.Now()
			finished.FinishedAt, finished.Note = &now, ""
			elsewhere := fake.NewClientset()
			if err := (&state.Store{Client: elsewhere, Namespace: state.DefaultNamespace}).Save(context.Background(), &finished); err != nil {
				t.Fatal(err)
			}
			last, err := elsewhere.CoreV1().ConfigMaps(state.DefaultNamespace).Get(context.Background(), state.ObjectName("ng"), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// The run ends when status first asks for the lock: after it read the record.
			var once sync.Once
			fc := client.(*fake.Clientset)
			fc.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
				once.Do(func() {
					tracker := fc.Tracker()
					last.ResourceVersion = ""
					if err := tracker.Update(corev1.SchemeGroupVersion.WithResource("configmaps"), last, state.DefaultNamespace); err != nil {
						t.Error(err)
					}
					obj, err := tracker.Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), state.DefaultNamespace, state.ObjectName("ng"))
					if err != nil {
						t.Error(err)
						return
					}
					lease := obj.(*coordinationv1.Lease).DeepCopy()
					empty := ""
					lease.Spec.HolderIdentity = &empty
					if err := tracker.Update(coordinationv1.SchemeGroupVersion.WithResource("leases"), lease, state.DefaultNamespace); err != nil {
						t.Error(err)
					}
				})
				return false, nil, nil
			})
			out, stderr, code := runStatus(t, client, tc.args...)
			if code != tc.code || !strings.Contains(out, "finished") || strings.Contains(out, "paused") {
				t.Fatalf("exit %d, want %d and finished; stdout:\n%s\nstderr: %s", code, tc.code, out, stderr)
			}
		})
	}
}

// TestStatusCloudLineAfterRollbacks: after a rollback, status names the
// version the group launches again, not the one the run was going to, and
// a green group the rollback deleted as deleted.
func TestStatusCloudLineAfterRollbacks(t *testing.T) {
	finished := testNow.Add(-time.Minute)
	bg := func(created bool) func(r *state.Record) {
		return func(r *state.Record) {
			r.Strategy, r.State, r.Phase, r.FinishedAt = "blue-green", state.StateRolledBack, "Done", &finished
			r.Cloud = &state.CloudRecord{GroupRecord: state.GroupRecord{Provider: "aws", Group: "ng", Template: "lt-1", FromVersion: "1", TargetVersion: "2"},
				GreenRecord: state.GreenRecord{Green: "ng-v2", GreenCreated: created}}
		}
	}
	for _, tc := range []struct {
		name      string
		edit      func(r *state.Record)
		want, not string
	}{
		{"blue/green rolled back, green created", bg(true), `launch template lt-1 version 1, back from launch template lt-1 version 2; green Auto Scaling group "ng-v2" deleted by the rollback`, "soak"},
		{"blue/green rolled back, green given", bg(false), `green Auto Scaling group "ng-v2" (given to the run) kept, drained`, "deleted"},
		{"interrupted in its rollback", func(r *state.Record) {
			bg(true)(r)
			r.State, r.Phase, r.FinishedAt, r.LastError = state.StateInterrupted, "Rollback", nil, interruptedError
		}, `version 1, back from launch template lt-1 version 2; green Auto Scaling group "ng-v2"`, "deleted"},
		{"upgrade under way", func(r *state.Record) {
			bg(true)(r)
			r.State, r.Phase, r.FinishedAt = state.StateRunning, "Drain", nil
		}, `launch template lt-1 version 2; green Auto Scaling group "ng-v2"`, "back from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := recordFor("ng")
			tc.edit(r)
			line := cloudLine(describeRun(r, false, "", testNow), testNow)
			if !strings.Contains(line, tc.want) || strings.Contains(line, tc.not) {
				t.Errorf("status line %q, want %q and no %q", line, tc.want, tc.not)
			}
		})
	}
}

// TestStatusNamesTheSubmittedJobsPod: status and status -A name the Job of
// a submitted run, its pod and why the pod waits, and count what is left.
func TestStatusNamesTheSubmittedJobsPod(t *testing.T) {
	r := recordFor("demo")
	r.State, r.Phase, r.Batch, r.Done, r.InFlight = state.StateSubmitted, "", 0, nil, nil
	r.Submission = &state.Submission{Job: session.JobName("demo"), At: testNow}
	client := statusFixture(t, []*state.Record{r})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: state.DefaultNamespace, Name: session.JobName("demo") + "-abcde",
		Labels: map[string]string{batchv1.JobNameLabel: session.JobName("demo")}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/9 nodes are available"}}}}
	if _, err := client.CoreV1().Pods(state.DefaultNamespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"demo"}, {"-A"}} {
		out, stderr, code := runStatus(t, client, args...)
		want := "demo: submitted to Job " + state.DefaultNamespace + "/" + session.JobName("demo") + ", pod " + pod.Name + " Pending: Unschedulable: 0/9 nodes are available"
		if code != ExitOK || !strings.Contains(out, want) || !regexp.MustCompile(`demo\s+submitted\s+<none>\s+-?\s*0\s+9\s`).MatchString(out) {
			t.Errorf("status %v: exit %d, stderr %q, stdout:\n%s\nwant %q and 9 left", args, code, stderr, out, want)
		}
	}
}
