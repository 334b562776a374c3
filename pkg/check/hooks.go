package check

import (
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// defaultGrace is the API default of terminationGracePeriodSeconds.
const defaultGrace = 30

func gracePeriod(p *corev1.Pod) float64 {
	if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
		return float64(*g)
	}
	return defaultGrace
}

// preStopSleep returns how long a preStop hook sleeps, and whether the hook
// is recognised as a sleep at all: the lifecycle sleep action, an exec of
// `sleep N` / `/bin/sleep N`, or a shell -c script whose sleeps are summed
// (e.g. "sleep 5 && nginx -s quit"). Anything else (an HTTP call, a custom
// script) cannot be timed from the spec.
func preStopSleep(h *corev1.LifecycleHandler) (seconds float64, isSleep bool) {
	if h == nil {
		return 0, false
	}
	if h.Sleep != nil {
		return float64(h.Sleep.Seconds), true
	}
	if h.Exec == nil || len(h.Exec.Command) == 0 {
		return 0, false
	}
	cmd := h.Exec.Command
	switch path.Base(cmd[0]) {
	case "sleep":
		if len(cmd) >= 2 {
			if s, ok := parseSleepArg(cmd[1]); ok {
				return s, true
			}
		}
		return 0, false
	case "sh", "bash", "ash", "dash", "zsh", "busybox":
		for i := 1; i+1 < len(cmd); i++ {
			if cmd[i] == "-c" || cmd[i] == "-ec" || cmd[i] == "-ce" {
				return scriptSleep(cmd[i+1])
			}
		}
	}
	return 0, false
}

// scriptSleep sums the `sleep N` commands of a shell script.
func scriptSleep(script string) (float64, bool) {
	fields := strings.FieldsFunc(script, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == ';' || r == '&' || r == '|' || r == '(' || r == ')'
	})
	total, found := 0.0, false
	for i := 0; i+1 < len(fields); i++ {
		if path.Base(fields[i]) != "sleep" {
			continue
		}
		if s, ok := parseSleepArg(fields[i+1]); ok {
			total, found = total+s, true
			i++
		}
	}
	return total, found
}

// parseSleepArg reads a sleep(1) operand: a number with an optional
// s/m/h/d suffix, as GNU coreutils and busybox accept.
func parseSleepArg(s string) (float64, bool) {
	s = strings.Trim(s, `"'`)
	mult := 1.0
	if n := len(s); n > 1 {
		switch s[n-1] {
		case 's':
			s = s[:n-1]
		case 'm':
			mult, s = 60, s[:n-1]
		case 'h':
			mult, s = 3600, s[:n-1]
		case 'd':
			mult, s = 86400, s[:n-1]
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v * mult, true
}

// hasPreStopDelay reports whether some container keeps serving after the
// pod is told to stop. A hook we cannot time (HTTP, custom script) gets the
// benefit of the doubt: a warning that misses beats one that cries wolf.
func hasPreStopDelay(p *corev1.Pod) bool {
	for i := range p.Spec.Containers {
		lc := p.Spec.Containers[i].Lifecycle
		if lc == nil || lc.PreStop == nil {
			continue
		}
		if s, isSleep := preStopSleep(lc.PreStop); !isSleep || s > 0 {
			return true
		}
	}
	return false
}

// formatSeconds prints a sleep without a useless fraction.
func formatSeconds(s float64) string {
	return strconv.FormatFloat(s, 'f', -1, 64) + "s"
}
