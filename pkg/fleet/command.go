package fleet

// Command is the plugin's argument list for verb on t: its node group
// (or -l and its selector), extra, then --context: every place that runs
// a target (a coordinator's process, an exported workflow's container)
// names it the same way.
func (t Target) Command(verb string, extra ...string) []string {
	args := []string{verb, t.NodeGroup}
	if t.Selector != "" {
		args = []string{verb, "-l", t.Selector}
	}
	args = append(args, extra...)
	return append(args, "--context", t.Context)
}
