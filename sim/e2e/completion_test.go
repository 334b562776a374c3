package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
)

// noFileComp is cobra.ShellCompDirectiveNoFileComp as printed by __complete.
const noFileComp = ":4"

// completionScript is the shipped completion executable.
var completionScript = filepath.Join("..", "..", "completion", "kubectl_complete-nodeupgrade")

// kubectlPath puts on PATH the plugin and, with script, the shipped
// completion script, ahead of kubectl and sh, the way krew and a user
// installing the script leave them.
func kubectlPath(t *testing.T, script bool) string {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skipf("kubectl is not installed: %v", err)
	}
	bin := t.TempDir()
	if err := os.Symlink(binary, filepath.Join(bin, "kubectl-nodeupgrade")); err != nil {
		t.Fatal(err)
	}
	if script {
		b, err := os.ReadFile(completionScript)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, "kubectl_complete-nodeupgrade"), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return strings.Join([]string{bin, filepath.Dir(kubectl), "/usr/bin", "/bin"}, string(os.PathListSeparator))
}

// kubectlComplete runs "kubectl __complete nodeupgrade ARGS..." as the
// shell's completion of "kubectl nodeupgrade" does, and returns the
// candidate lines and the directive line.
func kubectlComplete(t *testing.T, path string, args ...string) (lines []string, directive string) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"__complete", "nodeupgrade"}, args...)...)
	// kubectl passes no flags to the plugin's completion: the kubeconfig
	// comes from the environment, as in a user's shell.
	cmd.Env = []string{"PATH=" + path, "HOME=" + t.TempDir(), "KUBECONFIG=" + sim.Kubeconfig, "NO_COLOR=1"}
	r := runCmd(t, cmd)
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("kubectl __complete nodeupgrade %q: %s", args, r)
	}
	out := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	return out[:len(out)-1], out[len(out)-1]
}

// values cuts the descriptions off completion lines.
func values(lines []string) []string {
	var out []string
	for _, l := range lines {
		v, _, _ := strings.Cut(l, "\t")
		out = append(out, v)
	}
	return out
}

func TestCompletionThroughKubectl(t *testing.T) {
	t.Parallel()
	const name = "completion"
	outdated, current := setupGroup(t, name, 2, 1)
	group := fmt.Sprintf("%s\t%d nodes, %s", name, len(outdated)+len(current), groupKey)

	cfg, err := clientcmd.LoadFromFile(sim.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var contexts []string
	for c := range cfg.Contexts {
		contexts = append(contexts, c)
	}
	slices.Sort(contexts)

	path := kubectlPath(t, true)
	tests := []struct {
		name string
		args []string // the words after "kubectl nodeupgrade", the last one being completed
		// want is every candidate's value, in order; contains, lines that
		// must be among the candidates. Neither: no candidate.
		want, contains []string
	}{
		{name: "plan: the cluster's node groups", args: []string{"plan", ""}, contains: []string{group}},
		{name: "run: node groups by prefix", args: []string{"run", name[:4]}, contains: []string{group}},
		{name: "check: node groups with --nodegroup-label", args: []string{"check", "--nodegroup-label", groupKey, ""}, contains: []string{group}},
		{name: "plan: nothing after NODEGROUP", args: []string{"plan", name, ""}},
		{name: "--strategy", args: []string{"plan", name, "--strategy", ""}, want: plan.StrategyNames()},
		{name: "--provider", args: []string{"run", name, "--provider", ""}, want: cloud.Names()},
		{name: "--context", args: []string{"status", "--context", ""}, want: contexts},
		{name: "-n: the cluster's namespaces", args: []string{"check", name, "-n", "kube-"}, contains: []string{"kube-system"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lines, directive := kubectlComplete(t, path, tc.args...)
			t.Logf("kubectl __complete nodeupgrade %q:\n%s\n%s", tc.args, strings.Join(lines, "\n"), directive)
			if directive != noFileComp {
				t.Errorf("directive %q, want %q (no file names)", directive, noFileComp)
			}
			prefix := tc.args[len(tc.args)-1]
			for _, v := range values(lines) {
				if !strings.HasPrefix(v, prefix) {
					t.Errorf("candidate %q does not start with %q", v, prefix)
				}
			}
			switch {
			case tc.want != nil:
				if got := values(lines); !slices.Equal(got, tc.want) {
					t.Errorf("candidates %q, want %q", got, tc.want)
				}
			case tc.contains != nil:
				for _, c := range tc.contains {
					if !slices.Contains(lines, c) {
						t.Errorf("candidates %q lack %q", lines, c)
					}
				}
			case len(lines) > 0:
				t.Errorf("candidates %q, want none", lines)
			}
		})
	}

	// Without the script kubectl has nothing to ask, so the node group
	// above came through it.
	t.Run("without the script: nothing", func(t *testing.T) {
		if lines, _ := kubectlComplete(t, kubectlPath(t, false), "plan", ""); len(lines) > 0 {
			t.Errorf("kubectl completed %q without kubectl_complete-nodeupgrade on PATH", lines)
		}
	})
}
