package lifecycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestServerMovesOnlyForwardThroughItsTable(t *testing.T) {
	for from, tos := range Moves {
		for _, to := range tos {
			assert.Greater(t, to, State(from), "%s -> %s", State(from), to)
		}
	}
	assert.Empty(t, Moves[Stopped], "nothing leaves stopped")

	s := New()
	assert.PanicsWithValue(t, "lockstep: server cannot move from registering to closing",
		func() { s.Move(Closing) }, "a server closes only after it began to drain")
	assert.True(t, s.Move(Draining))
	assert.True(t, s.Draining())
	assert.False(t, s.Move(Running), "a server that began to drain never starts running")
	assert.False(t, s.Move(Draining), "a second drain is no move")
	assert.True(t, s.Move(Stopped))
	assert.False(t, s.Move(Closing), "a stopped server is past closing")
	assert.Equal(t, Stopped, s.State())
}
