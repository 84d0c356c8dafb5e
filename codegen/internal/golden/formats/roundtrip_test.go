package formats

import (
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/codegen/internal/golden/roundtrip"
)

func TestRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{"at": "2026-11-30T05:00:00Z"}`,
		`{"at": "2026-11-30T05:00:00.123456789+02:00", "maybeAt": null, "day": "2026-11-30", "id": "7f3a1b2c-1d2e-4f5a-8b9c-0d1e2f3a4b5c",
		  "mail": "a@example.com", "small": -2147483648, "big": 18446744073709551615, "ratio": 0.25, "plain": 1e-7, "count": 0, "history": []}`,
		`{"at": "2026-11-30T05:00:00Z", "maybeAt": "2026-12-01T00:00:00Z", "history": ["2026-01-01T00:00:00Z"]}`,
	} {
		roundtrip.Check[Formats](t, Contract, "Formats", in)
	}
	f := roundtrip.Check[Formats](t, Contract, "Formats", `{"at": "2026-11-30T05:00:00Z", "big": 18446744073709551615}`)
	if !f.At.Equal(time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)) || *f.Big != 18446744073709551615 {
		t.Errorf("decoded %+v", f)
	}
	var small int32 = *roundtrip.Check[Formats](t, Contract, "Formats", `{"at": "2026-11-30T05:00:00Z", "small": 7}`).Small
	if small != 7 {
		t.Errorf("small = %d", small)
	}
}
