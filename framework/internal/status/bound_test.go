package status

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A peer that opens many sessions cannot push another identity's out of
// the served status: sessions are taken in turns per identity, and what
// is kept stays in the status's order.
func TestInTurnsKeepsEveryIdentity(t *testing.T) {
	var sessions []Session
	for i := 0; i < 10; i++ {
		sessions = append(sessions, Session{Identity: "lockstep://kubelet/greedy", Peer: peer(i)})
	}
	sessions = append(sessions, Session{Identity: "lockstep://kubelet/a", Peer: peer(100)},
		Session{Identity: "lockstep://kubelet/b", Peer: peer(101)}, Session{Identity: "lockstep://kubelet/b", Peer: peer(102)})

	got := InTurns(sessions, 5)
	require.Len(t, got, 5)
	var instances []string
	for _, s := range got {
		instances = append(instances, s.Peer.Instance)
	}
	// Turn one: a, b, greedy's first; turn two: b's second, greedy's second.
	assert.Equal(t, []string{"i-0", "i-1", "i-100", "i-101", "i-102"}, instances)
}

// Cuts say what was left out, and nothing when nothing was.
func TestCutsSayWhatWasLeftOut(t *testing.T) {
	var none Cuts
	assert.Equal(t, 3, none.Watchers(3, "c", "1.0.0", "T"))
	assert.Len(t, none.Sessions(make([]Session, MaxSessions)), MaxSessions)
	assert.Equal(t, "", none.Truncated())

	var cuts Cuts
	assert.Len(t, cuts.Sessions(make([]Session, MaxSessions+1)), MaxSessions)
	assert.Equal(t, MaxWatchers, cuts.Watchers(MaxWatchers+5, "c", "1.0.0", "T"))
	assert.Equal(t, fmt.Sprintf("lists only %d of %d sessions (in turns per identity); %d of the %d watchers of c 1.0.0 topic T (the counts cover all)",
		MaxSessions, MaxSessions+1, MaxWatchers, MaxWatchers+5), cuts.Truncated())
}

// JSON stays the default: only an Accept header naming HTML before any
// JSON type gets the page.
func TestPrefersHTML(t *testing.T) {
	for accept, want := range map[string]bool{
		"":                                 false,
		"application/json":                 false,
		"*/*":                              false,
		"text/html,application/xhtml+xml":  true,
		"application/json, text/html":      false,
		"bogus;;, text/html;q=0.9":         true,
		"application/xhtml+xml;q=0.9, */*": true,
	} {
		r, err := http.NewRequest(http.MethodGet, "/lockstep/status", nil)
		require.NoError(t, err)
		r.Header.Set("Accept", accept)
		assert.Equal(t, want, PrefersHTML(r), "Accept: %q", accept)
	}
}

func peer(i int) handshake.Peer { return handshake.Peer{Instance: fmt.Sprintf("i-%d", i)} }
