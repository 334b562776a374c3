package azurefake

import (
	"context"
	"encoding/json"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func createPDB(ctx context.Context, c kubernetes.Interface, js string) error {
	var pdb policyv1.PodDisruptionBudget
	if err := json.Unmarshal([]byte(js), &pdb); err != nil {
		return err
	}
	_, err := c.PolicyV1().PodDisruptionBudgets(pdb.Namespace).Create(ctx, &pdb, metav1.CreateOptions{})
	return err
}
