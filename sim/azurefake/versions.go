package azurefake

import "strings"

// resolveMinor reads an orchestratorVersion of the 1.X form as AKS does:
// "Both patch version (e.g. 1.20.13) and <major.minor> (e.g. 1.20) are
// supported. When <major.minor> is specified, the latest supported GA
// patch version is chosen automatically. Updating the cluster with the
// same <major.minor> once it has been created (e.g. 1.14.x -> 1.14) will
// not trigger an upgrade" (armcontainerservice v6
// ManagedClusterAgentPoolProfileProperties.OrchestratorVersion). It is
// the patch version v names among offered (the cluster's versions, at
// most the control plane's), "" for none; same reports that current is
// of that minor already. A patch version is itself.
func resolveMinor(v, current, control string, offered []string) (patch string, same bool) {
	if strings.Count(v, ".") != 1 {
		return v, false
	}
	if strings.HasPrefix(current, v+".") {
		return current, true
	}
	for _, o := range append([]string{control}, offered...) {
		if strings.HasPrefix(o, v+".") && compareVersions(o, control) <= 0 && (patch == "" || compareVersions(o, patch) > 0) {
			patch = o
		}
	}
	return patch, false
}
