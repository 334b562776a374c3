package plugin

import (
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// AddProfiling registers --cpuprofile and --memprofile (go test's names:
// kubectl's --profile is taken by the AWS profile) on the root command,
// starts the CPU profile once the flags are parsed, and returns what
// writes the profiles out: call it when the command has ended. It is how a
// slow plan or run on a big cluster is looked into (hack/bench.sh
// --plan-scale writes one of each).
func AddProfiling(root *cobra.Command) (flush func() error) {
	var cpuFile, memFile string
	fs := root.PersistentFlags()
	fs.StringVar(&cpuFile, "cpuprofile", "", "Write a CPU profile of the command to this file (for go tool pprof)")
	fs.StringVar(&memFile, "memprofile", "", "Write a heap profile to this file when the command ends (for go tool pprof)")
	// For whoever looks into the plugin's speed, not for its users' help.
	_ = fs.MarkHidden("cpuprofile")
	_ = fs.MarkHidden("memprofile")
	stop := func() error { return nil }
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if cpuFile == "" {
			return nil
		}
		f, err := os.Create(cpuFile)
		if err != nil {
			return usageErrorf("cannot create --cpuprofile %q: %v", cpuFile, err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return err
		}
		stop = func() error { pprof.StopCPUProfile(); return f.Close() }
		return nil
	}
	return func() error {
		err := stop()
		if memFile == "" || err != nil {
			return err
		}
		f, err := os.Create(memFile)
		if err != nil {
			return usageErrorf("cannot create --memprofile %q: %v", memFile, err)
		}
		// the heap as the command left it, not as its last collection saw it
		runtime.GC()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
}
