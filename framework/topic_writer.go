package framework

// Writer bookkeeping: who owns which keys of a topic, in which epoch, and
// the lost-writer policy applied when a writer is gone.

import (
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// writerKey identifies a topic writer by (component, instance), not by
// session, so a writer that handshakes again keeps its keys.
type writerKey struct{ component, instance string }

// writerState is what a topic knows of one writer.
type writerState struct {
	epoch string
	seq   uint64              // the highest sequence seen in epoch
	keys  map[string]struct{} // the keys it owns
}

// checkEpoch checks an epoch a client chose: it is copied into frames
// without escaping.
func checkEpoch(epoch string) error {
	if len(epoch) > 64 {
		return Errorf(CodeInvalidArgument, "epoch of %d bytes exceeds 64", len(epoch))
	}
	for _, r := range epoch {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return Errorf(CodeInvalidArgument, "epoch %q: only letters, digits, '-', '_' and '.' are allowed", epoch)
		}
	}
	return nil
}

// writerFor returns the state of writer w, starting it or moving it to a
// new epoch as needed. A writer seen in a new epoch has restarted: the keys
// of its earlier epoch, except keep, follow the lost-writer policy, since
// their process is gone. An empty epoch continues the current one.
func (t *topicStore) writerFor(w writerKey, epoch, keep string) *writerState {
	ws := t.writers[w]
	if ws == nil {
		if epoch == "" {
			epoch = randomID(8)
		}
		ws = &writerState{epoch: epoch, keys: map[string]struct{}{}}
		t.writers[w] = ws
		return ws
	}
	if epoch != "" && epoch != ws.epoch {
		for key := range ws.keys {
			if key != keep {
				t.loseKeyLocked(ws, key)
			}
		}
		ws.epoch, ws.seq = epoch, 0
	}
	return ws
}

// ownerConflict returns conflict when key belongs to a writer other than w.
func (t *topicStore) ownerConflict(e *topicEntry, w writerKey, key string) error {
	if e == nil || e.writer == w || e.writer == (writerKey{}) {
		return nil
	}
	return Errorf(CodeConflict, "topic %s key %q belongs to %s instance %s", t.name, key, e.writer.component, e.writer.instance).
		WithDetails(map[string]string{"key": key, "component": e.writer.component, "instance": e.writer.instance})
}

// loseKeyLocked applies the lost-writer policy to one key of ws: delete it
// (telling watchers), or keep it without an owner, so that any writer may
// take it over.
func (t *topicStore) loseKeyLocked(ws *writerState, key string) {
	delete(ws.keys, key)
	e := t.entries[key]
	if e == nil {
		return
	}
	if t.decl.LostWriter == handshake.LostWriterKeep {
		e.writer = writerKey{}
		return
	}
	t.removeEntryLocked(key, e, encodeDeleteFrame(key, e.version, t.gen+1, true, nil))
}

// errWriterSessionLost refuses a client's topic write whose instance
// holds no session any more (sessionLostLocked): not processed, so its
// client may handshake again and resend it.
var errWriterSessionLost = Errorf(CodeHandshakeRequired, "the writer's session was lost before its write arrived: handshake again")

// sessionLostLocked reports whether w is a client instance that holds no
// session of the topic's contract. A client's write is admitted on its
// headers and applied once its body has arrived; a session lost in
// between has had the lost-writer policy applied to its keys already, and
// a write applied now would make a writer that nothing ever loses: its
// key would stay for good, and every other writer of it get conflict.
// t.mu must be held: writerLost, which runs once the session is gone,
// takes it too, so a write either comes before it or is refused.
func (t *topicStore) sessionLostLocked(w writerKey) bool {
	return t.decl.Writer == handshake.RoleClient && !t.s.sessions.Has(sessionKey(t.contract.Name(), w.instance))
}

// writerLost applies the lost-writer policy to every key of w.
func (t *topicStore) writerLost(w writerKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ws := t.writers[w]
	if ws == nil {
		return
	}
	delete(t.writers, w)
	for key := range ws.keys {
		t.loseKeyLocked(ws, key)
	}
}

// topicsPeerLost applies the lost-writer policy of every topic of a
// contract to the keys of a client instance whose session was lost, and
// ends that instance's watch streams.
func (s *Server) topicsPeerLost(sess *session) {
	w := writerKey{sess.peer.Component, sess.peer.Instance}
	peer := clientKey{sess.contract, sess.peer.Instance}
	for _, t := range s.allTopics() {
		if t.contract.Name() != sess.contract {
			continue
		}
		if t.decl.Writer == handshake.RoleClient {
			t.writerLost(w)
		}
		t.closeWatchers(func(ws *watchStream) bool { return ws.peer == peer }, protocol.CloseSessionLost)
	}
}
