package status

import (
	"fmt"
	"slices"
	"strings"
)

// The bounds of the status a server serves (GET /lockstep/status, JSON
// and page). Its size is the server's to decide, not its peers': one
// certificate's 9,000 sessions made a status read of 1.8 MB, and a
// server at its 100,000 sessions would answer tens of megabytes to every
// read (and lockstepctl would have to hold them). Beyond the bounds the
// status lists sessions taken in turns from each identity that owns some
// (so a peer that chooses its instance names cannot push others' sessions
// out of view: every identity keeps at least one listed while there are
// fewer identities than the bound), and the first watchers of each topic
// in its order; it counts them all (SessionCount, PeersByVersion, each
// topic's WatcherCount), and says what it left out in Truncated.
// Without mutual TLS every session's identity is empty, and the first
// sessions in the status's order are listed.
const (
	// MaxSessions is the most sessions the served status lists.
	MaxSessions = 1000
	// MaxWatchers is the most watchers of one topic it lists.
	MaxWatchers = 100
)

// Cuts collects what a served status leaves out to stay within the
// bounds.
type Cuts []string

// Sessions returns sessions within [MaxSessions] (in turns per identity,
// see [InTurns]), noting a cut.
func (c *Cuts) Sessions(sessions []Session) []Session {
	n := len(sessions)
	if n <= MaxSessions {
		return sessions
	}
	*c = append(*c, fmt.Sprintf("%d of %d sessions (in turns per identity)", MaxSessions, n))
	return InTurns(sessions, MaxSessions)
}

// Watchers returns how many of a topic's n watchers the status lists,
// noting a cut.
func (c *Cuts) Watchers(n int, contract, version, topic string) int {
	if n <= MaxWatchers {
		return n
	}
	*c = append(*c, fmt.Sprintf("%d of the %d watchers of %s %s topic %s", MaxWatchers, n, contract, version, topic))
	return MaxWatchers
}

// Truncated is what the status says it left out: "" when nothing.
func (c Cuts) Truncated() string {
	if len(c) == 0 {
		return ""
	}
	return "lists only " + strings.Join(c, "; ") + " (the counts cover all)"
}

// InTurns returns n of sessions (n < len(sessions)), taken in turns from
// each identity in identity order: the first session of every identity,
// then the second, and so on. What it keeps stays in the order of
// sessions.
func InTurns(sessions []Session, n int) []Session {
	byIdentity := map[string][]int{}
	for i, s := range sessions {
		byIdentity[s.Identity] = append(byIdentity[s.Identity], i)
	}
	ids := make([]string, 0, len(byIdentity))
	for id := range byIdentity {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	keep := make([]bool, len(sessions))
	for kept, turn := 0, 0; kept < n; turn++ {
		for _, id := range ids {
			if turn < len(byIdentity[id]) && kept < n {
				keep[byIdentity[id][turn]] = true
				kept++
			}
		}
	}
	out := make([]Session, 0, n)
	for i, s := range sessions {
		if keep[i] {
			out = append(out, s)
		}
	}
	return out
}
