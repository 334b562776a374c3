package gkefake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	container "google.golang.org/api/container/v1"
)

// upgrade is a node pool's upgrade from one node configuration to
// another: running (op set) or paused by a cancel or a failure.
type upgrade struct {
	from, to                 nodeConfig
	fromTemplate, toTemplate string
	// settings are the pool's upgradeSettings when the upgrade started;
	// pdbTimeout its drains' PDB timeout.
	settings   container.UpgradeSettings
	pdbTimeout time.Duration
	// bg is the blue/green upgrade's state, nil for surge.
	bg *container.BlueGreenInfo
	// drained are the blue nodes drained so far.
	drained []string
	op      *operation
}

// autoscaled reports whether the upgrade is an autoscaled blue/green one.
func (u *upgrade) autoscaled() bool {
	bg := u.settings.BlueGreenSettings
	return bg != nil && bg.AutoscaledRolloutPolicy != nil
}

// updatePool answers nodePools.update: a stale etag is refused with
// ABORTED, any update while an operation runs on the pool with
// FAILED_PRECONDITION (see runningOpLocked); settings alone
// (upgradeSettings, nodeDrainConfig) are changed by an operation of their
// own (see startSettingsLocked); with a node version or image type they
// replace the pool's at once and an upgrade starts (or a cancelled one
// to the same target resumes)
// (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters.nodePools/update).
func (s *Server) updatePool(q *request) (any, error) {
	var body container.UpdateNodePoolRequest
	if err := decode(q, &body); err != nil {
		return nil, err
	}
	q.upgrade = body.NodeVersion != "" || body.ImageType != ""
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.poolLocked(q)
	if err != nil {
		return nil, err
	}
	if body.Etag != "" && body.Etag != p.etag() {
		return nil, aborted("Node pool %q was changed since etag %q was read (now %q).", p.name, body.Etag, p.etag())
	}
	if o := runningOpLocked(p); o != nil {
		return nil, incompatible(o)
	}
	if err := validSettings(body.UpgradeSettings, body.NodeDrainConfig); err != nil {
		return nil, err
	}
	if !q.upgrade {
		return s.startSettingsLocked(p, &body), nil
	}
	to, err := s.targetLocked(p, &body)
	if err != nil {
		return nil, err
	}
	s.applySettingsLocked(p, &body)
	return s.startLocked(p, to)
}

func (s *Server) applySettingsLocked(p *pool, body *container.UpdateNodePoolRequest) {
	if body.UpgradeSettings != nil {
		p.upgrade = *body.UpgradeSettings
	}
	if body.NodeDrainConfig != nil {
		p.drainConfig = *body.NodeDrainConfig
	}
	s.changedLocked(p)
}

// validSettings checks what GKE documents of the settings: maxSurge and
// maxUnavailable from 0, not both 0 for surge; a known strategy; the
// autoscaled rollout's wait from 0 to 7 days (API reference,
// AutoscaledRolloutPolicy.waitForDrainDuration); durations as
// google.protobuf.Duration's JSON ("3600s").
func validSettings(up *container.UpgradeSettings, dc *container.NodeDrainConfig) error {
	if dc != nil && dc.PdbTimeoutDuration != "" {
		if _, err := parseDuration(dc.PdbTimeoutDuration); err != nil {
			return invalidArg("nodeDrainConfig.pdbTimeoutDuration: %v", err)
		}
	}
	if up == nil {
		return nil
	}
	switch up.Strategy {
	case "", "NODE_POOL_UPDATE_STRATEGY_UNSPECIFIED", "SURGE", "BLUE_GREEN", "SHORT_LIVED":
	default:
		return invalidArg("upgradeSettings.strategy %q is not one of SURGE, BLUE_GREEN, SHORT_LIVED", up.Strategy)
	}
	if up.MaxSurge < 0 || up.MaxUnavailable < 0 {
		return invalidArg("upgradeSettings.maxSurge and maxUnavailable must not be negative")
	}
	bg := up.BlueGreenSettings
	if bg == nil {
		return nil
	}
	for _, d := range []string{bg.NodePoolSoakDuration, standard(bg).BatchSoakDuration} {
		if _, err := parseDuration(d); d != "" && err != nil {
			return invalidArg("upgradeSettings.blueGreenSettings: %v", err)
		}
	}
	if a := bg.AutoscaledRolloutPolicy; a != nil && a.WaitForDrainDuration != "" {
		d, err := parseDuration(a.WaitForDrainDuration)
		if err != nil || d < 0 || d > 7*24*time.Hour {
			return invalidArg("autoscaledRolloutPolicy.waitForDrainDuration %q must be between 0 and 7 days", a.WaitForDrainDuration)
		}
	}
	return nil
}

// standard is the blue/green settings' standard rollout policy, empty
// when unset.
func standard(bg *container.BlueGreenSettings) container.StandardRolloutPolicy {
	if bg == nil || bg.StandardRolloutPolicy == nil {
		return container.StandardRolloutPolicy{}
	}
	return *bg.StandardRolloutPolicy
}

// parseDuration reads google.protobuf.Duration's JSON form, seconds with
// an "s" ("3600s", "1.5s").
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if !strings.HasSuffix(s, "s") || strings.ContainsAny(strings.TrimSuffix(s, "s"), "hmu") {
		return 0, fmt.Errorf("invalid duration %q: want seconds such as \"3600s\"", s)
	}
	return time.ParseDuration(s)
}

// targetLocked is the node configuration an update asks for.
func (s *Server) targetLocked(p *pool, body *container.UpdateNodePoolRequest) (nodeConfig, error) {
	to := p.cfg
	if p.up != nil {
		to = p.up.to
	}
	if body.NodeVersion != "" {
		v, err := resolveVersion(p.c, body.NodeVersion)
		if err != nil {
			return to, err
		}
		to.Version = v
	}
	if body.ImageType != "" {
		if !slices.Contains(validImageTypes, body.ImageType) {
			return to, invalidArg("image type %q is not supported; valid image types: %s", body.ImageType, strings.Join(validImageTypes, ", "))
		}
		to.ImageType = body.ImageType
	}
	if p.up != nil && to != p.up.to {
		return to, failedPrecondition("Node pool %q has a cancelled upgrade to %s %s: update to the same version to resume it, or roll it back first.", p.name, p.up.to.Version, p.up.to.ImageType)
	}
	return to, nil
}

// startLocked starts (or resumes) the upgrade to cfg; one to the pool's
// own configuration ends at once.
func (s *Server) startLocked(p *pool, to nodeConfig) (any, error) {
	if p.up == nil && to == p.cfg {
		return s.doneOpLocked(p, "the node pool runs "+to.Version+" already"), nil
	}
	if p.up == nil {
		p.up = &upgrade{from: p.cfg, to: to, fromTemplate: p.template, settings: p.upgrade, pdbTimeout: s.pdbTimeout(p)}
	}
	o := s.newOpLocked(p, fmt.Sprintf("upgrade of node pool %s to %s %s", p.name, to.Version, to.ImageType))
	p.up.op, p.status = o, "RECONCILING"
	s.changedLocked(p)
	s.wg.Add(1)
	go s.run(p, o, func(ctx context.Context) error { return s.upgradeRun(ctx, p, o) })
	return s.opView(o), nil
}

// pdbTimeout is the pool's PDB timeout (API reference,
// NodeDrainConfig.pdbTimeoutDuration), GKE's hour when unset.
func (s *Server) pdbTimeout(p *pool) time.Duration {
	if d, err := parseDuration(p.drainConfig.PdbTimeoutDuration); err == nil && d > 0 {
		return d
	}
	return s.opts.DefaultPDBTimeout
}

// upgradeRun carries the upgrade out with the pool's strategy: SURGE
// unless set, SHORT_LIVED for flex-start and queued pools
// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies#short-lived-upgrades).
func (s *Server) upgradeRun(ctx context.Context, p *pool, o *operation) error {
	u := p.up
	if u.toTemplate == "" {
		t, err := s.nodeTemplate(ctx, p, u.to)
		if err != nil {
			return err
		}
		s.mu.Lock()
		u.toTemplate = t
		s.mu.Unlock()
	}
	switch {
	case p.flexStart || p.queued || u.settings.Strategy == "SHORT_LIVED":
		return s.shortLived(ctx, p, o)
	case u.settings.Strategy == "BLUE_GREEN":
		return s.blueGreen(ctx, p, o)
	}
	return s.surge(ctx, p, o, u.toTemplate, surgeHow{maxSurge: u.settings.MaxSurge, maxUnavailable: u.settings.MaxUnavailable, pdbTimeout: u.pdbTimeout, force: true})
}

// run runs an operation's work and ends it: a finished upgrade or
// rollback leaves the pool on its target, a cancelled or failed one
// leaves it paused for a resume or a rollback.
func (s *Server) run(p *pool, o *operation, work func(context.Context) error) {
	defer s.wg.Done()
	err := work(s.ctx)
	if s.ctx.Err() != nil {
		return
	}
	if err != nil {
		s.logf("%s: %s ended: %v", p.name, o.op.Name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := p.up
	u.op = nil
	p.status = "RUNNING"
	if err == nil {
		s.settleLocked(p, o)
	} else if !strings.Contains(o.op.Detail, "rollback") && !errors.Is(err, errCancelled) {
		p.status = "RUNNING_WITH_ERROR"
	}
	s.endLocked(o, err)
	s.changedLocked(p)
}

// settleLocked puts the pool on what the operation moved it to.
func (s *Server) settleLocked(p *pool, o *operation) {
	u := p.up
	if strings.Contains(o.op.Detail, "rollback") {
		p.cfg, p.template = u.from, u.fromTemplate
	} else {
		p.cfg, p.template = u.to, u.toTemplate
	}
	if len(p.green) > 0 {
		p.groups, p.green = p.green, nil
	}
	p.up = nil
}

// rollbackPool answers nodePools.rollback: a cancelled or failed upgrade
// is undone, its upgraded nodes going back to the old configuration
// (surge) or green drained and deleted and blue uncordoned (blue/green);
// with respectPdb the drains honour PodDisruptionBudgets, without they
// delete. An autoscaled blue/green upgrade cannot be rolled back; a pool
// whose last upgrade finished has nothing to roll back
// (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters.nodePools/rollback,
// .../concepts/node-pool-upgrade-strategies#rollback-surge).
func (s *Server) rollbackPool(q *request) (any, error) {
	var body container.RollbackNodePoolUpgradeRequest
	if err := decode(q, &body); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.poolLocked(q)
	if err != nil {
		return nil, err
	}
	u := p.up
	switch {
	case p.settingsOp != nil:
		return nil, incompatible(p.settingsOp)
	case u == nil:
		return s.doneOpLocked(p, "rollback: the last upgrade of the node pool completed, nothing to roll back"), nil
	case u.op != nil:
		return nil, failedPrecondition("Node pool %q is being upgraded by %s: cancel it before rolling back.", p.name, u.op.op.Name)
	case u.autoscaled():
		return nil, failedPrecondition("Node pool %q: an autoscaled blue-green upgrade cannot be rolled back once cancelled; resume it.", p.name)
	}
	o := s.newOpLocked(p, fmt.Sprintf("rollback of node pool %s to %s %s", p.name, u.from.Version, u.from.ImageType))
	u.op, p.status = o, "RECONCILING"
	s.changedLocked(p)
	s.wg.Add(1)
	go s.run(p, o, func(ctx context.Context) error { return s.rollbackRun(ctx, p, o, body.RespectPdb) })
	return s.opView(o), nil
}

func (s *Server) rollbackRun(ctx context.Context, p *pool, o *operation, respectPdb bool) error {
	u := p.up
	if u.bg != nil {
		return s.rollbackGreen(ctx, p, o, respectPdb)
	}
	return s.surge(ctx, p, o, u.fromTemplate, surgeHow{maxSurge: u.settings.MaxSurge, maxUnavailable: u.settings.MaxUnavailable, pdbTimeout: u.pdbTimeout, force: true, noPDB: !respectPdb})
}

// completeUpgrade ends the soak of a blue/green upgrade: the blue pool is
// deleted at once; refused in every other phase
// (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters.nodePools/completeUpgrade).
func (s *Server) completeUpgrade(q *request) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.poolLocked(q)
	if err != nil {
		return nil, err
	}
	u := p.up
	if u == nil || u.op == nil || u.bg == nil || u.bg.Phase != "NODE_POOL_SOAKING" {
		return nil, failedPrecondition("Node pool %q is not soaking a blue-green upgrade.", p.name)
	}
	select {
	case <-u.op.complete:
	default:
		close(u.op.complete)
	}
	return &container.Empty{}, nil
}
