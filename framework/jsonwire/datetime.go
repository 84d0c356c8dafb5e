package jsonwire

import (
	"time"
)

// DateTime reads a string in JSON Schema's date-time format (RFC 3339)
// into a time.Time. It accepts exactly the strings jsonschema/v5 accepts
// for the format, including lower-case 't' and 'z', any number of
// fractional digits (nanoseconds are kept, the rest dropped) and leap
// seconds (23:59:60 UTC), which time.Time cannot hold and which become the
// next second. A string in another form is a format violation.
func (d *Decoder) DateTime() (time.Time, error) {
	if rest := d.data[d.pos:]; len(rest) >= 22 && rest[0] == '"' && rest[20] == 'Z' && rest[21] == '"' {
		if t, ok := parseUTCSeconds(rest[1:21]); ok {
			d.pos += 22
			d.opened = false
			return t, nil
		}
	}
	start := d.Mark()
	b, err := d.StringBytes()
	if err != nil {
		return time.Time{}, err
	}
	t, ok := parseDateTime(b)
	if !ok {
		return time.Time{}, &DecodeError{Keyword: "format", Message: Quote(string(b)) + ` is not valid "date-time"`, Offset: start}
	}
	return t, nil
}

// ParseDateTime parses an RFC 3339 date-time as [Decoder.DateTime] does,
// reporting whether s is one.
func ParseDateTime(s string) (time.Time, bool) { return parseDateTime(s) }

func parseDateTime[S string | []byte](s S) (time.Time, bool) {
	if len(s) < 20 || s[10] != 'T' && s[10] != 't' {
		return time.Time{}, false
	}
	year, month, day, ok := parseDate(s[:10])
	if !ok {
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
	if len(rest) == 0 {
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
	return time.Date(year, time.Month(month), day, h, m, sec, nsec, loc), true
}

// parseUTCSeconds reads YYYY-MM-DDTHH:MM:SSZ, the form Go and Kubernetes
// write UTC times in, a fifth of the work of parseDateTime and time.Date:
// it computes the instant from the day number of the date, and gives
// exactly the time.Time that parseDateTime gives (time.Date builds it from
// the same Unix seconds). Anything else (other forms, a leap second) is
// left to parseDateTime.
func parseUTCSeconds(s []byte) (time.Time, bool) {
	if len(s) != 20 || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != 'Z' ||
		!isDigit(s[11]) || !isDigit(s[12]) || !isDigit(s[14]) || !isDigit(s[15]) || !isDigit(s[17]) || !isDigit(s[18]) {
		return time.Time{}, false
	}
	year, month, day, ok := parseDate(s[:10])
	h := int(s[11]-'0')*10 + int(s[12]-'0')
	m := int(s[14]-'0')*10 + int(s[15]-'0')
	sec := int(s[17]-'0')*10 + int(s[18]-'0')
	if !ok || h > 23 || m > 59 || sec > 59 {
		return time.Time{}, false
	}
	unix := int64(daysFromCivil(year, month, day))*86400 + int64(h*3600+m*60+sec)
	return time.Unix(unix, 0).UTC(), true
}

// daysFromCivil is the number of days from 1970-01-01 to a date of the
// proleptic Gregorian calendar (H. Hinnant's days_from_civil).
func daysFromCivil(y, m, d int) int {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// parseDate reads YYYY-MM-DD as time.Parse("2006-01-02", s) does (which is
// what jsonschema/v5 checks dates with): four digits, two, two, and a day
// that exists in that month.
func parseDate[S string | []byte](s S) (year, month, day int, ok bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, 0, 0, false
	}
	if !isDigit(s[0]) || !isDigit(s[1]) || !isDigit(s[2]) || !isDigit(s[3]) || !isDigit(s[5]) || !isDigit(s[6]) || !isDigit(s[8]) || !isDigit(s[9]) {
		return 0, 0, 0, false
	}
	year = int(s[0]-'0')*1000 + int(s[1]-'0')*100 + int(s[2]-'0')*10 + int(s[3]-'0')
	month = int(s[5]-'0')*10 + int(s[6]-'0')
	day = int(s[8]-'0')*10 + int(s[9]-'0')
	if month < 1 || month > 12 || day < 1 || day > daysIn(month, year) {
		return 0, 0, 0, false
	}
	return year, month, day, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// twoDigits reads a two-character field no greater than max the way
// jsonschema/v5 does, with strconv.Atoi (which also takes "+1" and "-0").
func twoDigits[S string | []byte](s S, max int) (int, bool) {
	if len(s) != 2 {
		return 0, false
	}
	a, b := s[0], s[1]
	if b < '0' || b > '9' {
		return 0, false
	}
	switch {
	case a >= '0' && a <= '9':
		n := int(a-'0')*10 + int(b-'0')
		return n, n <= max
	case a == '+':
		return int(b - '0'), int(b-'0') <= max
	case a == '-' && b == '0':
		return 0, true
	}
	return 0, false
}
