package plan

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

const day = 24 * time.Hour

// ParseDuration is time.ParseDuration that also takes a leading count of
// days, as soaks and waits are naturally given: "3d", "1d12h", "1.5d".
func ParseDuration(s string) (time.Duration, error) {
	body, sign := s, time.Duration(1)
	switch {
	case strings.HasPrefix(body, "-"):
		body, sign = body[1:], -1
	case strings.HasPrefix(body, "+"):
		body = body[1:]
	}
	count, rest, hasDays := strings.Cut(body, "d")
	if !hasDays {
		return time.ParseDuration(s)
	}
	days, err := strconv.ParseFloat(count, 64)
	if err != nil || count == "" || strings.ContainsAny(count, "eEinfINFxX") || days < 0 {
		return 0, fmt.Errorf("invalid duration %q: want e.g. 90s, 15m, 1h30m, 3d or 1d12h", s)
	}
	if days*float64(day) > math.MaxInt64 {
		return 0, fmt.Errorf("invalid duration %q: too long", s)
	}
	d := time.Duration(days * float64(day))
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil || r < 0 || strings.HasPrefix(rest, "+") {
			return 0, fmt.Errorf("invalid duration %q: want e.g. 90s, 15m, 1h30m, 3d or 1d12h", s)
		}
		if d > math.MaxInt64-r {
			return 0, fmt.Errorf("invalid duration %q: too long", s)
		}
		d += r
	}
	return sign * d, nil
}

// FormatDuration writes d the way ParseDuration reads it, in days where it
// spans them and without zero units: 7d, 1d12h, 1h30m, 15m, 90s is 1m30s.
func FormatDuration(d time.Duration) string {
	if d < 0 {
		return "-" + FormatDuration(-d)
	}
	var s string
	if days := d / day; days > 0 {
		s, d = fmt.Sprintf("%dd", days), d%day
		if d == 0 {
			return s
		}
	}
	rest := d.String()
	if strings.HasSuffix(rest, "m0s") {
		rest = strings.TrimSuffix(rest, "0s")
	}
	if strings.HasSuffix(rest, "h0m") {
		rest = strings.TrimSuffix(rest, "0m")
	}
	return s + rest
}
