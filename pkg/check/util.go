package check

import (
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func labelsOf(p *corev1.Pod) labels.Set { return labels.Set(p.Labels) }

// mapPointer is what a map value points to: equal for the same map, not
// for equal ones, and a key for a memo of what was computed from a map.
func mapPointer(m map[string]string) unsafe.Pointer {
	return reflect.ValueOf(m).UnsafePointer()
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m)) // nil for none
}

// maxListed bounds the names quoted in a message, to keep it one short line.
const maxListed = 5

// quoteList renders names as "a", "b", "c" (and N more).
func quoteList(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i == maxListed {
			b.WriteString(" and " + strconv.Itoa(len(names)-maxListed) + " more")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(n))
	}
	return b.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// containers renders `container "a"` or `containers "a", "b"`.
func containers(names []string) string {
	if len(names) == 1 {
		return "container " + quoteList(names)
	}
	return "containers " + quoteList(names)
}

func prefixed(ns string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = ns + "/" + n
	}
	return out
}
