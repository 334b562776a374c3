package state

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
)

// reportKey holds a node group's report.History in its own ConfigMap:
// written as the run goes (at most every few seconds) and at its end,
// never with each record save, and out of List's records (it carries no
// ManagedByLabel).
const reportKey = "report.json"

// ReportName is the name of the ConfigMap of a node group's reports.
func ReportName(group string) string { return ObjectName(group) + "-report" }

// LoadReports returns the history of group's runs; empty when none.
func (s *Store) LoadReports(ctx context.Context, group string) (report.History, error) {
	var h report.History
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, ReportName(group), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return h, nil
	case err != nil:
		return h, fmt.Errorf("error when reading the reports of %q: %w", group, err)
	}
	if err := json.Unmarshal([]byte(cm.Data[reportKey]), &h); err != nil {
		return h, fmt.Errorf("cannot read the reports in configmap %q: %w", cm.Namespace+"/"+cm.Name, err)
	}
	return h, nil
}

// SaveReports writes h (bounded by report.MaxRuns and MaxBytes) for group.
// Only this run writes it, under the group's lock: no conflict to retry.
func (s *Store) SaveReports(ctx context.Context, group string, h report.History) error {
	data, err := h.Encode()
	if err != nil {
		return err
	}
	cms := s.Client.CoreV1().ConfigMaps(s.Namespace)
	meta := metav1.ObjectMeta{Name: ReportName(group), Namespace: s.Namespace, Annotations: map[string]string{GroupAnnotation: group}}
	cm, err := cms.Get(ctx, meta.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{reportKey: string(data)}}, metav1.CreateOptions{})
	case err == nil:
		cm.Data = map[string]string{reportKey: string(data)}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("error when writing the report of %q: %w", group, err)
	}
	return nil
}
