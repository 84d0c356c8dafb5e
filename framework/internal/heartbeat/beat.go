package heartbeat

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/wire"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// beat sends one heartbeat for tokens and applies the answer. It reports
// whether the server answered.
func (g *group) beat(tokens []string, members map[string]Member, ttl, sinceOK time.Duration) bool {
	body, _ := json.Marshal(wire.HeartbeatRequest{Sessions: tokens})
	ctx, cancel := context.WithTimeout(context.Background(), ttl)
	defer cancel()
	go func() {
		select {
		case <-g.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.key.url+protocol.PathHeartbeat, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", protocol.ContentTypeJSON)
	resp, err := g.hc.Do(req)
	if err != nil {
		select {
		case <-g.stop:
			return false
		default:
		}
		// A refused connection means the server is gone; other failures
		// are forgiven until the sessions would have lapsed anyway.
		if g.s.cfg.DialError(err) || sinceOK > ttl {
			g.loseAll(members, Unreachable, err)
		}
		return false
	}
	answer, err := wire.ReadAnswer(resp, 16<<20)
	if err != nil || resp.StatusCode != http.StatusOK {
		if err == nil {
			err = wire.DecodeError(resp, answer)
		}
		g.s.cfg.Logger.Warn("lockstep: heartbeat failed", "url", g.key.url, "err", err)
		// A proxy answering for a dead server looks like this: give the
		// sessions up once they would have lapsed anyway.
		if sinceOK > ttl {
			g.loseAll(members, Unreachable, err)
		}
		return false
	}
	if resp.Header.Get(protocol.HeaderDraining) != "" {
		// Take the sessions out of routing first, then acknowledge the
		// drain for all of them in one request.
		g.loseAll(members, Draining, apierror.Errorf(apierror.CodeUnavailable, "the server is draining"))
		g.closeAll(members)
		return true
	}
	var ans wire.HeartbeatAnswer
	if err := json.Unmarshal(answer, &ans); err != nil {
		g.s.cfg.Logger.Warn("lockstep: heartbeat answer does not decode", "url", g.key.url, "err", err)
		return true
	}
	g.apply(members, ans)
	return true
}

// apply tells the members what a heartbeat's answer says of them.
func (g *group) apply(members map[string]Member, ans wire.HeartbeatAnswer) {
	for _, token := range ans.Lost {
		if m := members[token]; m != nil && g.held(m) {
			m.Lose(Gone, apierror.Errorf(apierror.CodeHandshakeRequired, "the server no longer holds the session"))
		}
	}
	if len(ans.Topics) > 0 {
		for _, m := range members {
			if g.held(m) && m.WatchesWriters() {
				m.LearnTopicWriters(ans.Topics)
			}
		}
	}
	for _, token := range ans.Resync {
		if m := members[token]; m != nil && g.held(m) {
			m.Resync()
		}
	}
}

// closeAll closes the group's sessions at a draining server in one request,
// briefly and best effort.
func (g *group) closeAll(members map[string]Member) {
	tokens := make([]string, 0, len(members))
	for token, m := range members {
		if m.MarkClosed() {
			tokens = append(tokens, token)
		}
	}
	if len(tokens) > 0 {
		g.s.cfg.CloseSessions(g.hc, g.key.url, tokens)
	}
}

// allMembers returns every session of the group, keyed by token.
func (g *group) allMembers() map[string]Member {
	g.s.mu.Lock()
	defer g.s.mu.Unlock()
	all := make(map[string]Member, len(g.members))
	for m := range g.members {
		all[m.Token()] = m
	}
	return all
}

func (g *group) loseAll(members map[string]Member, why Loss, err error) {
	for _, m := range members {
		if g.held(m) {
			m.Lose(why, err)
		}
	}
}

// ProbeAddr is the dial address the group's sessions are held at, the key
// of its prober (probe.Group).
func (g *group) ProbeAddr() string { return g.addr }

// Unreachable takes every session of the group out of routing: its
// prober found nothing listening at the address (probe.Group).
func (g *group) Unreachable(err error) { g.loseAll(g.allMembers(), Unreachable, err) }

// BeatNow asks the group to beat at once, for all its sessions: its
// prober saw a connection closed and something listening (probe.Group).
func (g *group) BeatNow() {
	select {
	case g.now <- struct{}{}:
	default:
	}
}
