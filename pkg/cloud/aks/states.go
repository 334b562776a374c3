package aks

import "fmt"

// The REST spec types an agent pool's provisioningState as a plain string
// ("The current deployment or provisioning state",
// ManagedClusterAgentPoolProfileProperties.ProvisioningState, READ-ONLY,
// no enum), so the states below are those AKS's documentation names;
// one outside them is reported, never taken for an end or waited on:
//   - ended: Succeeded, Failed, Canceled (endedStates);
//   - running the pool's own operations (runningStates): Creating,
//     Updating, Upgrading, UpgradingNodeImageVersion, Scaling, Canceling
//     (https://learn.microsoft.com/en-us/azure/aks/manage-abort-operations);
//   - running operations the run never starts (otherOperationStates):
//     Deleting (https://learn.microsoft.com/en-us/azure/aks/delete-node-pool),
//     Starting and Stopping
//     (https://learn.microsoft.com/en-us/azure/aks/start-stop-nodepools).
var (
	endedStates          = map[string]bool{"Succeeded": true, "Failed": true, "Canceled": true}
	otherOperationStates = map[string]bool{"Deleting": true, "Starting": true, "Stopping": true}
)

// knownState reports whether st is a provisioning state AKS documents.
func knownState(st string) bool {
	return endedStates[st] || runningStates[st] || otherOperationStates[st]
}

// busyState reports whether an operation runs on a pool in state st:
// AKS refuses any other change of the cluster's pools meanwhile (409
// OperationNotAllowed).
func busyState(st string) bool { return runningStates[st] || otherOperationStates[st] }

// unknownState is the error of a pool in a state AKS does not document:
// neither an end to go on from nor an operation to wait for.
func unknownState(a *AgentPool, st string) error {
	return &Error{Msg: fmt.Sprintf("AKS reports %s in provisioning state %q, which the plugin does not know as an end or a running operation: it changes nothing; look at the pool (\"az aks nodepool show --cluster-name %s --resource-group %s --name %s\") and run the same command again once it is Succeeded",
		a, st, a.id.name, a.id.group, a.name)}
}
