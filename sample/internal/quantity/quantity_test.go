package quantity

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in     string // the quantity
		millis int64  // Millis of it
		value  int64  // Value of it
	}{
		{"4", 4000, 4},
		{"3500m", 3500, 4},
		{"0.5", 500, 1},
		{"1.25k", 1250000, 1250},
		{"16Gi", 16 << 30 * 1000, 16 << 30},
		{"1536Mi", 1536 << 20 * 1000, 1536 << 20},
		{"1G", 1e12, 1e9},
		{"110", 110000, 110},
		{"1m", 1, 1},
		{"0", 0, 0},
	} {
		m, err := Millis(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.millis, m, "Millis(%s)", tc.in)
		v, err := Value(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.value, v, "Value(%s)", tc.in)
	}
}

func TestParseRefusesWhatThePatternRefuses(t *testing.T) {
	for _, in := range []string{"", "-1", "1e3", "1.", ".5", "4 Gi", "4gi", "1Pi", "99999999Ti"} {
		_, err := Value(in)
		assert.Error(t, err, in)
	}
}

func TestFormatRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		millis int64  // a CPU amount
		cpu    string // how FormatMillis writes it
	}{{4000, "4"}, {3500, "3500m"}, {0, "0"}, {1, "1m"}} {
		assert.Equal(t, tc.cpu, FormatMillis(tc.millis))
		back, err := Millis(tc.cpu)
		require.NoError(t, err)
		assert.Equal(t, tc.millis, back)
	}
	for _, tc := range []struct {
		bytes int64  // a memory amount
		text  string // how FormatBytes writes it
	}{{16 << 30, "16Gi"}, {1536 << 20, "1536Mi"}, {1000, "1000"}, {0, "0"}, {3 << 40, "3Ti"}} {
		assert.Equal(t, tc.text, FormatBytes(tc.bytes))
		back, err := Value(tc.text)
		require.NoError(t, err)
		assert.Equal(t, tc.bytes, back)
	}
}
