// Package deploy holds the manifests users apply, embedded so that the
// plugin checks an in-cluster run's rights against the very roles it
// documents.
package deploy

import _ "embed"

// RBAC is rbac.yaml: the run's ClusterRole and Role, then the read-only
// pair.
//
//go:embed rbac.yaml
var RBAC []byte

// InCluster is in-cluster.yaml: the in-cluster run's ServiceAccount, its
// bindings and the submitter's Role.
//
//go:embed in-cluster.yaml
var InCluster []byte
