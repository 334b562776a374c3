package plugin

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestProfiles: --cpuprofile and --memprofile write their profiles once
// the command has ended, next to the AWS --profile of plan, and a file
// that cannot be created is bad input.
func TestProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string // files written
	}{
		{"none", []string{"version"}, ExitOK, nil},
		{"both", []string{"version", "--cpuprofile", cpu, "--memprofile", mem}, ExitOK, []string{cpu, mem}},
		{"beside the AWS profile", []string{"plan", "ng", "--profile", "prod", "--cpuprofile", cpu, "--server", "https://127.0.0.1:1", "--kubeconfig", filepath.Join(dir, "absent")}, ExitUsage, []string{cpu}},
		{"cannot create", []string{"version", "--cpuprofile", filepath.Join(dir, "no", "such", "dir")}, ExitUsage, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(cpu)
			os.Remove(mem)
			var stdout, stderr bytes.Buffer
			cmd := NewCmdNodeUpgrade(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &stdout, ErrOut: &stderr})
			flush := AddProfiling(cmd)
			cmd.SetArgs(tc.args)
			err := cmd.ExecuteContext(context.Background())
			if ferr := flush(); err == nil {
				err = ferr
			}
			if code := PrintError(&stderr, err); code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", code, tc.wantCode, stderr.String())
			}
			for _, f := range []string{cpu, mem} {
				info, err := os.Stat(f)
				written := err == nil && info.Size() > 0
				if want := len(tc.want) > 0 && (tc.want[0] == f || len(tc.want) > 1 && tc.want[1] == f); written != want {
					t.Errorf("%s written %v, want %v", filepath.Base(f), written, want)
				}
			}
		})
	}
}

// TestProfileFlagsHidden: the profiles are for whoever looks into the
// plugin's speed; they work but stay out of every user's help.
func TestProfileFlagsHidden(t *testing.T) {
	var stdout bytes.Buffer
	cmd := NewCmdNodeUpgrade(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &stdout, ErrOut: &bytes.Buffer{}})
	AddProfiling(cmd)
	for _, args := range [][]string{{"--help"}, {"plan", "--help"}, {"run", "--help"}} {
		stdout.Reset()
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(stdout.Bytes(), []byte("cpuprofile")) || bytes.Contains(stdout.Bytes(), []byte("memprofile")) {
			t.Errorf("%v lists a profile flag:\n%s", args, stdout.String())
		}
	}
}
