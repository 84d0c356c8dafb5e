package frames

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResumePointText(t *testing.T) {
	p := ResumePoint{History: "9c41d2a07f3e11b2", Rev: 1234}
	got, ok := ParseResumePoint(p.String())
	require.True(t, ok)
	assert.Equal(t, p, got)
	for _, bad := range []string{"", "1234", ".12", "abc.", "abc.x", "abc.-1", "abc.99999999999999999999"} {
		_, ok := ParseResumePoint(bad)
		assert.False(t, ok, "%q", bad)
	}
}
