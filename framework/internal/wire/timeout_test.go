package wire

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimeoutFormatRoundTrips(t *testing.T) {
	cases := []struct {
		in   time.Duration // the deadline left
		wire string        // its gRPC-style encoding
	}{
		{250 * time.Millisecond, "250000u"},
		{time.Nanosecond, "1n"},
		{99999999 * time.Nanosecond, "99999999n"},
		{100 * time.Millisecond, "100000u"},
		{1500 * time.Millisecond, "1500000u"},
		{2 * time.Minute, "120000m"},
		{36 * time.Hour, "129600S"},
		{0, "0n"},
		{-time.Second, "0n"},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.wire, EncodeTimeout(tc.in), "encode %v", tc.in)
		d, err := DecodeTimeout(tc.wire)
		require.NoError(t, err)
		assert.Equal(t, max(tc.in, 0), d, "decode %s", tc.wire)
	}
	// Rounding up never shortens a deadline.
	d, err := DecodeTimeout(EncodeTimeout(100000001 * time.Nanosecond))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, d, 100000001*time.Nanosecond)

	for _, bad := range []string{"", "5", "5x", "-5S", "123456789S", "S", "1.5S"} {
		_, err := DecodeTimeout(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestTimeoutBeyondADurationSaturates(t *testing.T) {
	d, err := DecodeTimeout("99999999H")
	require.NoError(t, err)
	assert.Positive(t, d, "no overflow into the past")
	d, err = DecodeTimeout(EncodeTimeout(time.Duration(math.MaxInt64)))
	require.NoError(t, err)
	assert.Positive(t, d)
}
