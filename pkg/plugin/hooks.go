package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

const hookHelp = `Command run with "sh -c" %s, once per node; its environment has HOOK, NODE, NODE_GROUP, ZONE, INSTANCE_ID (empty without a cloud machine), PROVIDER_ID, BATCH (1-based; empty outside the batches, as in the scale-down), PROVIDER, and KUBECONFIG for the cluster the run talks to. Its output is shown; a failure or --hook-timeout stops the run (exit 10). A run killed after a hook succeeded but before that was recorded runs it again: hooks must be idempotent`

// addHookFlags binds the hook flags to the request's hooks.
func addHookFlags(f *pflag.FlagSet, h *plan.Hooks) {
	f.StringVar(&h.PreDrain, "pre-drain-hook", "", fmt.Sprintf(hookHelp, "before each node is drained (after its cordon or taint)"))
	f.StringVar(&h.PostDrain, "post-drain-hook", "", fmt.Sprintf(hookHelp, "after each node is drained and --post-drain-wait is over"))
	f.StringVar(&h.PreTerminate, "pre-terminate-hook", "", fmt.Sprintf(hookHelp, "before each node is removed (its machine terminated, its Node deleted, or its blue group deleted)"))
	durationVar(f, (*time.Duration)(&h.Timeout), "hook-timeout", plan.DefaultHookTimeout,
		"How long each hook may run before its process group is killed and the run stops; also how long a node's drain (removal) waits for its annotations "+plan.PreDrainHookPrefix+"NAME ("+plan.PreTerminateHookPrefix+"NAME) to be taken off by their owners")
}

// hookKubeconfig writes the connection the plugin uses (the kubeconfig with
// --context, --server, --token and the rest applied) to a kubeconfig file
// of its own for the hooks, as one context: the kubeconfig's path alone
// would lose the flags, and KUBECONFIG has no way to name a context. It
// returns the file and how to remove it.
func hookKubeconfig(flags *genericclioptions.ConfigFlags) (string, func(), error) {
	cfg, err := restConfig(flags)
	if err != nil {
		return "", nil, err
	}
	namespace, _, _ := flags.ToRawKubeConfigLoader().Namespace()
	dir, err := os.MkdirTemp("", "kubectl-nodeupgrade-hooks-")
	if err != nil {
		return "", nil, fmt.Errorf("cannot write the hooks' kubeconfig: %w", err)
	}
	remove := func() { _ = os.RemoveAll(dir) }
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(kubeconfigOf(cfg, namespace), path); err != nil {
		remove()
		return "", nil, fmt.Errorf("cannot write the hooks' kubeconfig: %w", err)
	}
	return path, remove, nil
}

// kubeconfigOf is a kubeconfig of one context that connects as cfg does.
// A proxy set by the kubeconfig (proxy-url) is not carried over: the REST
// configuration holds it as a function.
func kubeconfigOf(cfg *rest.Config, namespace string) clientcmdapi.Config {
	const name = "nodeupgrade"
	cluster := clientcmdapi.NewCluster()
	cluster.Server = cfg.Host
	if cfg.APIPath != "" && cfg.APIPath != "/api" {
		cluster.Server += cfg.APIPath
	}
	cluster.CertificateAuthority, cluster.CertificateAuthorityData = cfg.CAFile, cfg.CAData
	cluster.InsecureSkipTLSVerify, cluster.TLSServerName = cfg.Insecure, cfg.ServerName
	user := clientcmdapi.NewAuthInfo()
	user.ClientCertificate, user.ClientCertificateData = cfg.CertFile, cfg.CertData
	user.ClientKey, user.ClientKeyData = cfg.KeyFile, cfg.KeyData
	user.Token, user.TokenFile = cfg.BearerToken, cfg.BearerTokenFile
	user.Username, user.Password = cfg.Username, cfg.Password
	user.Impersonate, user.ImpersonateUID = cfg.Impersonate.UserName, cfg.Impersonate.UID
	user.ImpersonateGroups, user.ImpersonateUserExtra = cfg.Impersonate.Groups, cfg.Impersonate.Extra
	user.AuthProvider, user.Exec = cfg.AuthProvider, cfg.ExecProvider
	kctx := clientcmdapi.NewContext()
	kctx.Cluster, kctx.AuthInfo, kctx.Namespace = name, name, namespace
	out := clientcmdapi.NewConfig()
	out.Clusters[name], out.AuthInfos[name], out.Contexts[name] = cluster, user, kctx
	out.CurrentContext = name
	return *out
}
