package jsonwire

import (
	"fmt"
	"testing"
	"time"
)

// TestParseUTCSecondsIsParseDateTime: the fast path of UTC seconds gives
// exactly parseDateTime's time.Time (== compares wall, ext and location)
// on every day of the years around the calendar's turns (0000, the
// centuries 1600, 1900 and 2000, the Unix epoch, now, 9999) and on every
// 101st day of years 0000 to 9999, at a few times of day; and it leaves
// what it does not handle (a leap second, fractions, offsets, lower-case
// letters, impossible dates) to it.
func TestParseUTCSecondsIsParseDateTime(t *testing.T) {
	check := func(day time.Time) {
		for _, clock := range []string{"00:00:00", "12:34:56", "23:59:59"} {
			s := fmt.Sprintf("%04d-%02d-%02dT%sZ", day.Year(), day.Month(), day.Day(), clock)
			got, ok := parseUTCSeconds([]byte(s))
			want, wantOK := parseDateTime(s)
			if !ok || !wantOK || got != want {
				t.Fatalf("%s: fast %v %v, parseDateTime %v %v", s, got, ok, want, wantOK)
			}
		}
	}
	n := 0
	for _, first := range []int{0, 1599, 1899, 1969, 1999, 2024, 9997} {
		day := time.Date(first, 1, 1, 0, 0, 0, 0, time.UTC)
		for end := day.AddDate(3, 0, 0); day.Before(end); day = day.AddDate(0, 0, 1) {
			check(day)
			n++
		}
	}
	day := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	for end := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC); day.Before(end); day = day.AddDate(0, 0, 101) {
		check(day)
		n++
	}
	if n < 7*3*365+10000*365/101 {
		t.Fatalf("checked only %d days", n)
	}
	for _, s := range []string{
		"2026-12-31T23:59:60Z", "2026-12-01T10:00:00.5Z", "2026-12-01T10:00:00+01:00", "2026-12-01t10:00:00Z",
		"2026-12-01T10:00:00z", "2026-02-29T10:00:00Z", "2026-13-01T10:00:00Z", "2026-12-01T24:00:00Z",
		"2026-12-01T10:60:00Z", "2026-12-01T10:00:0xZ", "+026-12-01T10:00:00Z", "2026-12-01T1:000:00Z",
	} {
		if _, ok := parseUTCSeconds([]byte(s)); ok {
			t.Errorf("%s: the fast path took it", s)
		}
	}
	// Through the decoder, the leap second still decodes (as the next
	// second), by parseDateTime.
	d := NewDecoder([]byte(`"2016-12-31T23:59:60Z"`))
	got, err := d.DateTime()
	if want := time.Date(2017, 1, 1, 0, 0, 0, 0, time.UTC); err != nil || got != want {
		t.Errorf("leap second: %v %v, want %v", got, err, want)
	}
}
