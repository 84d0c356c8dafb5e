package topics

// Writer bookkeeping: who owns which keys of a topic, in which epoch, and
// the lost-writer policy applied when a writer is gone.

import (
	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// WriterID identifies a topic writer by (component, instance), not by
// session, so a writer that handshakes again keeps its keys.
type WriterID struct{ Component, Instance string }

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
		return apierror.Errorf(apierror.CodeInvalidArgument, "epoch of %d bytes exceeds 64", len(epoch))
	}
	for _, r := range epoch {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return apierror.Errorf(apierror.CodeInvalidArgument, "epoch %q: only letters, digits, '-', '_' and '.' are allowed", epoch)
		}
	}
	return nil
}

// writerFor returns the state of writer w, starting it or moving it to a
// new epoch as needed. A writer seen in a new epoch has restarted: the keys
// of its earlier epoch, except keep, follow the lost-writer policy, since
// their process is gone. An empty epoch continues the current one.
func (t *Store) writerFor(w WriterID, epoch, keep string) *writerState {
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
func (t *Store) ownerConflict(e *entry, w WriterID, key string) error {
	if e == nil || e.writer == w || e.writer == (WriterID{}) {
		return nil
	}
	return apierror.Errorf(apierror.CodeConflict, "topic %s key %q belongs to %s instance %s", t.name, key, e.writer.Component, e.writer.Instance).
		WithDetails(map[string]string{"key": key, "component": e.writer.Component, "instance": e.writer.Instance})
}

// loseKeyLocked applies the lost-writer policy to one key of ws: delete it
// (telling watchers), or keep it without an owner, so that any writer may
// take it over.
func (t *Store) loseKeyLocked(ws *writerState, key string) {
	delete(ws.keys, key)
	e := t.entries[key]
	if e == nil {
		return
	}
	if t.decl.LostWriter == handshake.LostWriterKeep {
		e.writer = WriterID{}
		return
	}
	t.removeEntryLocked(key, e, encodeDeleteFrame(key, e.version, t.gen+1, true, nil))
}

// ErrWriterSessionLost refuses a client's topic write whose instance
// holds no session any more (sessionLostLocked): not processed, so its
// client may handshake again and resend it.
var ErrWriterSessionLost = apierror.Errorf(apierror.CodeHandshakeRequired, "the writer's session was lost before its write arrived: handshake again")

// sessionLostLocked reports whether w is a client instance that holds no
// session of the topic's contract. A client's write is admitted on its
// headers and applied once its body has arrived; a session lost in
// between has had the lost-writer policy applied to its keys already, and
// a write applied now would make a writer that nothing ever loses: its
// key would stay for good, and every other writer of it get conflict.
// t.mu must be held: writerLost, which runs once the session is gone,
// takes it too, so a write either comes before it or is refused.
func (t *Store) sessionLostLocked(w WriterID) bool {
	return t.decl.Writer == handshake.RoleClient && !t.host.SessionLive(t.contract, w.Instance)
}

// writerLost applies the lost-writer policy to every key of w.
func (t *Store) writerLost(w WriterID) {
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

// PeerLost applies what losing the session of instance (a client of
// component, speaking contract) means to the topic, if it is of that
// contract: the lost-writer policy to the keys the instance wrote, and a
// closing frame to the watch streams it held.
func (t *Store) PeerLost(contract, component, instance string) {
	if t.contract != contract {
		return
	}
	if t.decl.Writer == handshake.RoleClient {
		t.writerLost(WriterID{component, instance})
	}
	peer := peerKey{contract, instance}
	t.closeWatchers(func(ws *Stream) bool { return ws.peer == peer }, protocol.CloseSessionLost)
}

// Writer-aware routing. Replicas do not share topics, so a watcher of a
// server-written topic must watch a replica whose writer is attached (the
// elected leader, say): the others hold no topic, or a stale one. A server
// says whether each topic has a live writer in the synced frame of every
// watch stream, in every heartbeat answer and in its status; an informer
// uses it to pick its replica, to move when the writer moves, and to never
// take a writer-less replica's topic for the truth (docs/topics.md).

// writerLiveLocked reports whether the topic has a live writer.
func (t *Store) writerLiveLocked() bool {
	if t.decl.Writer == handshake.RoleClient {
		return len(t.writers) > 0
	}
	return !t.detached
}

// WriterLive reports whether the topic has a live writer: for a
// client-written topic, a writer instance with a session; for the
// server's own, an attached writer.
func (t *Store) WriterLive() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.writerLiveLocked()
}

// SetAttached attaches or detaches the server's writer of the topic; it
// reports whether that changed anything.
func (t *Store) SetAttached(attached bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.detached == !attached {
		return false
	}
	t.detached = !attached
	return true
}
