package plugin

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The hooks' kubeconfig connects as the run does: the context --context
// picks (not the file's current one), with its credentials.
func TestHookKubeconfigConnectsAsTheRun(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "config")
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, []byte("not checked here"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["dev"] = &clientcmdapi.Cluster{Server: "https://dev.example:6443", CertificateAuthority: caFile}
	cfg.Clusters["prod"] = &clientcmdapi.Cluster{Server: "https://prod.example:6443", TLSServerName: "api.prod", InsecureSkipTLSVerify: false}
	cfg.AuthInfos["dev"] = &clientcmdapi.AuthInfo{Token: "dev-token"}
	cfg.AuthInfos["prod"] = &clientcmdapi.AuthInfo{
		Exec:        &clientcmdapi.ExecConfig{Command: "aws", Args: []string{"eks", "get-token"}, APIVersion: "client.authentication.k8s.io/v1beta1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode},
		Impersonate: "admin", ImpersonateGroups: []string{"ops"},
	}
	cfg.Contexts["dev"] = &clientcmdapi.Context{Cluster: "dev", AuthInfo: "dev"}
	cfg.Contexts["prod"] = &clientcmdapi.Context{Cluster: "prod", AuthInfo: "prod", Namespace: "team"}
	cfg.CurrentContext = "dev"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		context string
		check   func(t *testing.T, got *rest.Config, namespace string)
	}{
		{name: "the current context", check: func(t *testing.T, got *rest.Config, ns string) {
			if got.Host != "https://dev.example:6443" || got.BearerToken != "dev-token" || got.CAFile != caFile || ns != "default" {
				t.Errorf("host %q token %q CA %q namespace %q", got.Host, got.BearerToken, got.CAFile, ns)
			}
		}},
		{name: "the context --context picks", context: "prod", check: func(t *testing.T, got *rest.Config, ns string) {
			if got.Host != "https://prod.example:6443" || got.ServerName != "api.prod" || got.BearerToken != "" || ns != "team" {
				t.Errorf("host %q server name %q token %q namespace %q", got.Host, got.ServerName, got.BearerToken, ns)
			}
			if got.ExecProvider == nil || got.ExecProvider.Command != "aws" || len(got.ExecProvider.Args) != 2 {
				t.Errorf("exec credentials %+v, want aws eks get-token", got.ExecProvider)
			}
			if got.Impersonate.UserName != "admin" || len(got.Impersonate.Groups) != 1 {
				t.Errorf("impersonation %+v", got.Impersonate)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flags := genericclioptions.NewConfigFlags(false)
			*flags.KubeConfig, *flags.Context = kubeconfig, tc.context
			path, remove, err := hookKubeconfig(flags)
			if err != nil {
				t.Fatal(err)
			}
			if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
				t.Fatalf("hooks' kubeconfig %q: %v, mode %v; want 0600", path, err, info.Mode())
			}
			loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, nil)
			got, err := loader.ClientConfig()
			if err != nil {
				t.Fatal(err)
			}
			ns, _, _ := loader.Namespace()
			tc.check(t, got, ns)
			remove()
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("the hooks' kubeconfig is left after the run: %v", err)
			}
		})
	}
}
