package jsonwire

import (
	"strconv"
	"time"
)

// DateTime reads a string in JSON Schema's date-time format (RFC 3339)
// into a time.Time. It accepts exactly the strings jsonschema/v5 accepts
// for the format, including lower-case 't' and 'z', any number of
// fractional digits (nanoseconds are kept, the rest dropped) and leap
// seconds (23:59:60 UTC), which time.Time cannot hold and which become the
// next second. A string in another form is a format violation.
func (d *Decoder) DateTime() (time.Time, error) {
	start := d.Mark()
	s, err := d.String()
	if err != nil {
		return time.Time{}, err
	}
	t, ok := ParseDateTime(s)
	if !ok {
		return time.Time{}, &DecodeError{Keyword: "format", Message: Quote(s) + ` is not valid "date-time"`, Offset: start}
	}
	return t, nil
}

// ParseDateTime parses an RFC 3339 date-time as [Decoder.DateTime] does,
// reporting whether s is one.
func ParseDateTime(s string) (time.Time, bool) {
	if len(s) < 20 || s[10] != 'T' && s[10] != 't' {
		return time.Time{}, false
	}
	day, err := time.Parse("2006-01-02", s[:10])
	if err != nil {
		return time.Time{}, false
	}
	rest := s[11:]
	if len(rest) < 9 || rest[2] != ':' || rest[5] != ':' {
		return time.Time{}, false
	}
	h, ok1 := twoDigits(rest[0:2], 23)
	m, ok2 := twoDigits(rest[3:5], 59)
	sec, ok3 := twoDigits(rest[6:8], 60)
	if !ok1 || !ok2 || !ok3 {
		return time.Time{}, false
	}
	rest = rest[8:]
	nsec := 0
	if rest[0] == '.' {
		rest = rest[1:]
		digits := 0
		for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
			if digits < 9 {
				nsec = nsec*10 + int(rest[digits]-'0')
			}
			digits++
		}
		if digits == 0 {
			return time.Time{}, false
		}
		for i := digits; i < 9; i++ {
			nsec *= 10
		}
		rest = rest[digits:]
	}
	if rest == "" {
		return time.Time{}, false
	}
	loc := time.UTC
	offset := 0
	if rest[0] == 'z' || rest[0] == 'Z' {
		if len(rest) != 1 {
			return time.Time{}, false
		}
	} else {
		if len(rest) != 6 || rest[3] != ':' || rest[0] != '+' && rest[0] != '-' {
			return time.Time{}, false
		}
		zh, ok1 := twoDigits(rest[1:3], 23)
		zm, ok2 := twoDigits(rest[4:6], 59)
		if !ok1 || !ok2 {
			return time.Time{}, false
		}
		offset = (zh*60 + zm) * 60
		if rest[0] == '-' {
			offset = -offset
		}
		loc = time.FixedZone("", offset)
	}
	if sec == 60 {
		// A leap second is only valid at 23:59 UTC.
		utcMinutes := ((h*60+m-offset/60)%(24*60) + 24*60) % (24 * 60)
		if utcMinutes != 23*60+59 {
			return time.Time{}, false
		}
	}
	return time.Date(day.Year(), day.Month(), day.Day(), h, m, sec, nsec, loc), true
}

// twoDigits reads a two-character field no greater than max the way
// jsonschema/v5 does, with strconv.Atoi (which also takes "+1" and "-0").
func twoDigits(s string, max int) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0 && n <= max
}
