package wire

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// EncodeTimeout renders d in the gRPC timeout format (the deadline
// header, protocol.HeaderTimeout): at most eight digits
// and a unit (H, M, S, m, u, n), choosing the finest unit that fits.
func EncodeTimeout(d time.Duration) string {
	if d <= 0 {
		return "0n"
	}
	const maxValue = 99999999
	units := []struct {
		size time.Duration
		unit string
	}{
		{time.Nanosecond, "n"}, {time.Microsecond, "u"}, {time.Millisecond, "m"},
		{time.Second, "S"}, {time.Minute, "M"}, {time.Hour, "H"},
	}
	for _, u := range units {
		v := d / u.size
		if d%u.size != 0 {
			v++ // round up so a deadline is never shortened to zero
		}
		if v <= maxValue {
			return strconv.FormatInt(int64(v), 10) + u.unit
		}
	}
	return strconv.Itoa(maxValue) + "H"
}

// DecodeTimeout parses the gRPC timeout format; a value further than a
// Duration reaches saturates.
func DecodeTimeout(s string) (time.Duration, error) {
	if len(s) < 2 || len(s) > 9 {
		return 0, fmt.Errorf("timeout %q: want 1 to 8 digits and a unit", s)
	}
	v, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("timeout %q: want 1 to 8 digits and a unit", s)
	}
	var unit time.Duration
	switch s[len(s)-1] {
	case 'H':
		unit = time.Hour
	case 'M':
		unit = time.Minute
	case 'S':
		unit = time.Second
	case 'm':
		unit = time.Millisecond
	case 'u':
		unit = time.Microsecond
	case 'n':
		unit = time.Nanosecond
	default:
		return 0, fmt.Errorf("timeout %q: unit must be one of H M S m u n", s)
	}
	if v > int64(math.MaxInt64/unit) {
		return time.Duration(math.MaxInt64), nil // further than a Duration reaches: no deadline to speak of
	}
	return time.Duration(v) * unit, nil
}
