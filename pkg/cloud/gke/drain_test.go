package gke

import (
	"context"
	"testing"

	container "google.golang.org/api/container/v1"
)

// TestDrainConfigRestored: the pool's whole nodeDrainConfig is recorded
// before the run and put back as it was; an update sends the
// nodeDrainConfig only when the run changes it, the upgradeSettings only
// when it changes them.
func TestDrainConfigRestored(t *testing.T) {
	for _, tc := range []struct {
		name                string
		was                 container.NodeDrainConfig
		pdb                 string // the run's PDB timeout, "" to keep the pool's
		surge               int64  // the run's maxSurge
		sendsDrain, sendsUp bool
		drainSent           container.NodeDrainConfig
	}{
		{name: "a PDB timeout beside the pool's grace and deletion settings", was: container.NodeDrainConfig{GraceTerminationDuration: "45s", RespectPdbDuringNodePoolDeletion: true},
			pdb: "20s", surge: 1, sendsDrain: true, drainSent: container.NodeDrainConfig{PdbTimeoutDuration: "20s", GraceTerminationDuration: "45s", RespectPdbDuringNodePoolDeletion: true}},
		{name: "a PDB timeout over the pool's", was: container.NodeDrainConfig{PdbTimeoutDuration: "600s"},
			pdb: "20s", surge: 2, sendsDrain: true, sendsUp: true, drainSent: container.NodeDrainConfig{PdbTimeoutDuration: "20s"}},
		{name: "the upgrade settings alone", was: container.NodeDrainConfig{PdbTimeoutDuration: "600s", GraceTerminationDuration: "10s"}, surge: 3, sendsUp: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGKE(t)
			was := tc.was
			f.pool.NodeDrainConfig = &was
			np := openPool(t, map[string]string{})
			ctx := context.Background()
			before, err := np.Settings(ctx)
			if err != nil {
				t.Fatal(err)
			}
			during := before
			during.Other = map[string]string{}
			for k, v := range before.Other {
				during.Other[k] = v
			}
			if tc.pdb != "" {
				during.Other[setPDBTimeout] = tc.pdb
			}
			surge := int(tc.surge)
			during.MaxSurge = &surge
			if err := np.Configure(ctx, during); err != nil {
				t.Fatal(err)
			}
			sent := f.updates[0]
			if (sent.NodeDrainConfig != nil) != tc.sendsDrain || (sent.UpgradeSettings != nil) != tc.sendsUp {
				t.Fatalf("sent nodeDrainConfig %v, upgradeSettings %v; want %v, %v", sent.NodeDrainConfig, sent.UpgradeSettings, tc.sendsDrain, tc.sendsUp)
			}
			if tc.sendsDrain && !sameDrain(*sent.NodeDrainConfig, tc.drainSent) {
				t.Errorf("sent nodeDrainConfig %+v, want %+v", *sent.NodeDrainConfig, tc.drainSent)
			}
			if err := np.Configure(ctx, before); err != nil {
				t.Fatal(err)
			}
			if got := *f.pool.NodeDrainConfig; !sameDrain(got, tc.was) {
				t.Errorf("after the run the pool's nodeDrainConfig is %+v, was %+v", got, tc.was)
			}
		})
	}
}

func sameDrain(a, b container.NodeDrainConfig) bool {
	return a.PdbTimeoutDuration == b.PdbTimeoutDuration && a.GraceTerminationDuration == b.GraceTerminationDuration &&
		a.RespectPdbDuringNodePoolDeletion == b.RespectPdbDuringNodePoolDeletion
}
