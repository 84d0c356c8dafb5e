package topics

// Watch streams on the server: their states, their pending keys and the
// goroutine that flushes them to the watcher's connection.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/lockstep-dev/lockstep/framework/internal/frames"
	"github.com/lockstep-dev/lockstep/framework/internal/limits"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// watchChunk is the size at which a flush writes what it gathered so far:
// many frames per write, without building one huge buffer for a large
// snapshot.
const watchChunk = 32 << 10

var watchBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, watchChunk)
	return &b
}}

// watchSink is where a watch stream's bytes go: the connection itself
// (HTTP/1.1, taken over from the HTTP server so an idle watcher holds no
// goroutine and no buffers) or a ResponseWriter (HTTP/2).
type watchSink interface {
	setDeadline(deadline time.Time) error
	write(p []byte) error
	// close ends the stream after its last frame went out whole.
	close()
	// abort ends it at once, whatever it was doing.
	abort()
}

type connSink struct{ conn net.Conn }

func (c connSink) setDeadline(deadline time.Time) error { return c.conn.SetWriteDeadline(deadline) }

func (c connSink) write(p []byte) error {
	_, err := c.conn.Write(p)
	return err
}

func (c connSink) close() { _ = c.conn.Close() }

// abort closes the connection without TLS's close_notify: to a watcher
// that stopped reading the alert cannot be written, and tls.Conn.Close
// would wait up to 5 s trying, holding the stream's goroutine and
// connection.
func (c connSink) abort() {
	if tc, ok := c.conn.(*tls.Conn); ok {
		_ = tc.NetConn().Close()
		return
	}
	_ = c.conn.Close()
}

type responseSink struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (r responseSink) setDeadline(deadline time.Time) error {
	if err := r.rc.SetWriteDeadline(deadline); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

func (r responseSink) write(p []byte) error {
	if _, err := r.w.Write(p); err != nil {
		return err
	}
	return r.rc.Flush()
}

// close unblocks a write in progress; the handler ends the response.
func (r responseSink) close() { _ = r.rc.SetWriteDeadline(time.Unix(1, 0)) }

func (r responseSink) abort() { r.close() }

// Stream is one watcher of a topic. It holds no queue of changes:
// only the set of keys changed since they were last sent, each pointing at
// the key's latest change (shared, encoded once), so its memory is bounded
// by the number of keys however slow the watcher is, and it always ends up
// with the latest state. A goroutine runs only while there is something to
// send; an idle stream is a connection and this struct.
//
// Its life is the streamState machine below; what it has to send next
// (pend, prefix, needSynced, pingDue) is work, not state.
type Stream struct {
	topic *Store
	sess  Session
	// sel is what the watcher selects (nil: every object); the topic's
	// index files the stream by it.
	sel Selection
	// since is the topic's revision when the stream started: its first
	// frames (a snapshot, or the changes since the resume point) bring the
	// watcher to it, and its synced frame names it.
	since   uint64
	resumed bool // the stream resumed from the watcher's resume point
	// writerAtSince is whether the topic had a live writer at since: the
	// synced frame says so of the state it brings the watcher to, not of
	// the moment it is written, which can come after the writer attached
	// (a snapshot of a writer-less replica labelled the writer's) or
	// detached.
	writerAtSince bool
	peer          peerKey
	info          handshake.Peer
	pingEvery     time.Duration
	writeTimeout  time.Duration
	// deadline is the sink's write deadline; only the flush goroutine,
	// one at a time, uses it.
	deadline writeDeadline

	// mu guards what follows. Lock order: Store.mu, then mu (a topic
	// closes its watchers while holding its own lock); never the reverse:
	// a stream releases mu before it takes its topic's lock
	// (closeNow → removeWatcher).
	mu    sync.Mutex
	state streamState
	// closeReason is the closing frame's reason (a protocol Close reason)
	// once the stream is streamClosing.
	closeReason string
	// sink is nil until the answer's header can be sent.
	sink   watchSink
	prefix []byte
	// pend holds the latest change of each dirty key, in the order the
	// keys first became dirty; index maps a key to its place in pend.
	pend       []*change
	index      map[string]int
	needSynced bool
	pingDue    bool
	wrote      bool // something was written since the last ping tick
	running    bool // a flush goroutine is active
	pinger     clockwork.Timer
	finished   chan struct{} // closed on entering streamFinished

	maxQueued int
	// queuedBytes is the bytes of the frames pend holds that were marked
	// after the snapshot was taken for sending; a watcher that does not
	// read lets it grow to Limits.WatchQueuedBytes, then is closed with an
	// overflow frame (it resumes with a fresh snapshot).
	queuedBytes               int64
	frames, writes, coalesced uint64
}

// streamState is where a watch stream is in its life. Every change of
// state goes through [Stream.moveLocked], beside the one table of the
// moves allowed.
type streamState uint8

const (
	// streamWaiting: registered with its topic, so changes are marked,
	// but without a sink: the answer's header is not sent yet.
	streamWaiting streamState = iota
	// streamOpen: it has a sink and sends its pending keys as they come.
	streamOpen
	// streamClosing: it sends what is pending, then a closing frame
	// giving closeReason, then closes. A stream told to close while
	// waiting stays here and sends the frame once it has a sink.
	streamClosing
	// streamClosed: its connection is closed and it holds nothing; a
	// flush may still be finishing its round.
	streamClosed
	// streamFinished: closed, and no flush runs; finished is closed.
	streamFinished
)

func (s streamState) String() string {
	return [...]string{"waiting", "open", "closing", "closed", "finished"}[s]
}

// streamMoves lists, for each state, the states a stream may move to.
var streamMoves = [...][]streamState{
	streamWaiting:  {streamOpen, streamClosing, streamClosed},
	streamOpen:     {streamClosing, streamClosed},
	streamClosing:  {streamClosed},
	streamClosed:   {streamFinished},
	streamFinished: nil,
}

// moveLocked moves the stream to state to, which must be one of
// streamMoves[ws.state]: a stream never reopens. Entering streamClosed with
// no flush running finishes the stream at once. ws.mu must be held.
func (ws *Stream) moveLocked(to streamState) {
	if !slices.Contains(streamMoves[ws.state], to) {
		panic(fmt.Sprintf("lockstep: watch stream cannot move from %s to %s", ws.state, to))
	}
	ws.state = to
	switch {
	case to == streamClosed && !ws.running:
		ws.moveLocked(streamFinished)
	case to == streamFinished:
		close(ws.finished)
	}
}

// endingLocked reports whether the stream takes no more changes: it is closing
// or closed.
func (ws *Stream) endingLocked() bool { return ws.state >= streamClosing }

// closedLocked reports whether the stream's connection is closed.
func (ws *Stream) closedLocked() bool { return ws.state >= streamClosed }

// start gives the stream its sink and sends what is pending: prefix, the
// snapshot, the synced marker.
func (ws *Stream) start(sink watchSink, prefix []byte) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closedLocked() {
		sink.close()
		return
	}
	ws.sink, ws.prefix = sink, prefix
	ws.pinger = ws.topic.host.Clock.AfterFunc(ws.pingEvery, ws.tick)
	if ws.state == streamWaiting {
		ws.moveLocked(streamOpen)
	}
	ws.scheduleLocked()
}

// markAll records that each change of batch (one per key) is the latest
// change of its key, skipping those its snapshot already holds. It never
// blocks on the watcher's connection.
func (ws *Stream) markAll(batch []*change) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, ch := range batch {
		if ws.endingLocked() {
			return
		}
		if ch.gen > ws.since {
			ws.markLocked(ch)
		}
	}
	ws.scheduleLocked()
}

// markOne is [Stream.markAll] of one change.
func (ws *Stream) markOne(ch *change) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.endingLocked() {
		return
	}
	if ch.gen > ws.since {
		ws.markLocked(ch)
	}
	ws.scheduleLocked()
}

// markLocked records that ch is the latest change of its key.
func (ws *Stream) markLocked(ch *change) {
	if !ws.needSynced {
		ws.queuedBytes += int64(len(ch.frame))
		if i := ws.pending(ch.key); i >= 0 {
			ws.queuedBytes -= int64(len(ws.pend[i].frame))
		}
		if limit := ws.topic.host.WatchQueuedBytes; limit > 0 && ws.queuedBytes > limit {
			ws.pend, ws.index, ws.queuedBytes = nil, nil, 0
			ws.topic.host.refused(limits.WatchQueuedBytes)
			ws.closeReason = protocol.CloseOverflow
			ws.moveLocked(streamClosing)
			return
		}
	}
	if i := ws.pending(ch.key); i >= 0 {
		ws.pend[i] = ch
		ws.coalesced++
		ws.topic.coalesced.Add(1)
	} else {
		ws.pend = append(ws.pend, ch)
		switch {
		case ws.index != nil:
			ws.index[ch.key] = len(ws.pend) - 1
		case len(ws.pend) > pendScanMax:
			ws.index = make(map[string]int, 2*len(ws.pend))
			for i, p := range ws.pend {
				ws.index[p.key] = i
			}
		}
		ws.maxQueued = max(ws.maxQueued, len(ws.pend))
		// Keys deleted while the watcher lags also wait here; should a
		// writer churn through more distinct keys than the topic may hold
		// meanwhile, the stream ends and the watcher resyncs on reconnect.
		if len(ws.pend) > 2*ws.topic.cfg.MaxKeys {
			ws.pend, ws.index = nil, nil
			ws.topic.host.refused(limits.WatchQueuedKeys)
			ws.closeReason = protocol.CloseOverflow
			ws.moveLocked(streamClosing)
		}
	}
}

// pendScanMax is how many dirty keys are looked up by scanning before a
// stream indexes them: a watcher that keeps up has one or two.
const pendScanMax = 16

// pending returns the place of key in pend, or -1.
func (ws *Stream) pending(key string) int {
	if ws.index != nil {
		if i, ok := ws.index[key]; ok {
			return i
		}
		return -1
	}
	for i, p := range ws.pend {
		if p.key == key {
			return i
		}
	}
	return -1
}

// scheduleLocked starts the flush goroutine unless one runs.
func (ws *Stream) scheduleLocked() {
	if ws.closedLocked() || ws.sink == nil || ws.running {
		return
	}
	ws.running = true
	ws.topic.host.Goroutines.Add(1)
	go ws.flush()
}

// tick runs every ping interval: a stream that wrote nothing since the
// last tick gets a ping, so its watcher can tell a quiet topic from a dead
// connection.
func (ws *Stream) tick() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closedLocked() {
		return
	}
	if !ws.wrote {
		ws.pingDue = true
		ws.scheduleLocked()
	}
	ws.wrote = false
	ws.pinger.Reset(ws.pingEvery)
}

// closeGracefully ends the stream after what it still has to send, with a
// closing frame giving reason.
func (ws *Stream) closeGracefully(reason string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.endingLocked() {
		return
	}
	ws.closeReason = reason
	ws.moveLocked(streamClosing)
	ws.scheduleLocked() // without a sink yet, start sends it
}

// closeNow cuts the stream's connection at once (watchSink.abort): the
// server stops, the watcher went away, or a write to it failed.
func (ws *Stream) closeNow() { ws.closeConn(false) }

// closeConn closes the stream's connection; finished says the stream's
// closing frame went out whole, so the connection may end the way a
// finished one does rather than be cut.
func (ws *Stream) closeConn(finished bool) {
	ws.mu.Lock()
	if ws.closedLocked() {
		ws.mu.Unlock()
		return
	}
	sink := ws.sink
	if ws.pinger != nil {
		ws.pinger.Stop()
	}
	ws.pend, ws.index = nil, nil
	ws.moveLocked(streamClosed)
	ws.mu.Unlock()
	switch {
	case sink == nil:
	case finished:
		sink.close()
	default:
		sink.abort()
	}
	ws.topic.removeWatcher(ws)
}

// flush sends what is pending, as few writes as it takes, until nothing
// is; changes made meanwhile are picked up by the next round.
func (ws *Stream) flush() {
	defer ws.topic.host.Goroutines.Done()
	bufp := watchBufs.Get().(*[]byte)
	buf := (*bufp)[:0]
	defer func() {
		if cap(buf) <= 4*watchChunk {
			*bufp = buf[:0]
			watchBufs.Put(bufp)
		}
	}()
	var spare []*change
	for {
		r, ok := ws.takeRound(spare)
		if !ok {
			return
		}
		var err error
		buf, err = ws.sendRound(buf, &r)
		clear(r.pend)
		spare = r.pend
		if err == nil && r.closing == protocol.CloseDraining {
			// The watcher was told, as a call's answer would tell it.
			ws.sess.NoticeDrain()
		}
		if err != nil || r.closing != "" {
			ws.closeConn(err == nil)
		}
	}
}

// flushRound is what one round of a flush sends.
type flushRound struct {
	sink           watchSink
	prefix         []byte
	pend           []*change
	synced, ping   bool
	closing        string // the closing frame's reason, if the stream ends
	frames, writes int
}

// takeRound takes what is pending, leaving spare as the stream's next
// pend; ok is false when the flush goroutine is to end (the stream is
// idle or closed).
func (ws *Stream) takeRound(spare []*change) (r flushRound, ok bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closedLocked() {
		ws.running = false
		ws.moveLocked(streamFinished)
		return r, false
	}
	if len(ws.pend) == 0 && !ws.needSynced && !ws.pingDue && ws.state != streamClosing && ws.prefix == nil {
		// Idle: give the round's memory back.
		ws.running = false
		ws.pend, ws.index = nil, nil
		return r, false
	}
	r = flushRound{sink: ws.sink, prefix: ws.prefix, pend: ws.pend, synced: ws.needSynced, ping: ws.pingDue}
	if ws.state == streamClosing {
		r.closing = ws.closeReason
	}
	ws.pend, ws.queuedBytes = spare[:0], 0
	clear(ws.index)
	ws.prefix, ws.needSynced, ws.pingDue = nil, false, false
	return r, true
}

// sendRound writes a round's frames to its sink, in chunks of about
// watchChunk, and counts them.
func (ws *Stream) sendRound(buf []byte, r *flushRound) ([]byte, error) {
	if !r.synced || ws.resumed {
		// Changes go out in the order they were made, so a watcher that
		// has read revision R has every change up to R: its resume point.
		// (A key changed again waits at the place it first became dirty.)
		// A snapshot's order does not matter: the synced frame after it
		// is the point.
		sortByRevision(r.pend)
	}
	buf = append(buf[:0], r.prefix...)
	var err error
	for _, ch := range r.pend {
		buf = append(buf, ch.frame...)
		r.frames++
		if len(buf) >= watchChunk {
			if err = ws.write(r.sink, buf); err != nil {
				break
			}
			r.writes++
			buf = buf[:0]
		}
	}
	if r.synced {
		buf = ws.topic.appendSynced(buf, syncedMark{rev: ws.since, resumed: ws.resumed, writer: ws.writerAtSince})
		r.frames++
	}
	// A round that sends only a ping does not count as a write, so an idle
	// stream gets one every ping interval (half a TTL), not every other one.
	onlyPing := r.ping && len(buf) == 0 && r.closing == ""
	if r.ping && len(buf) == 0 {
		buf = append(buf, frames.Ping...)
		r.frames++
	}
	if r.closing != "" {
		buf = frames.AppendClosing(buf, r.closing)
		r.frames++
	}
	if err == nil && len(buf) > 0 {
		if err = ws.write(r.sink, buf); err == nil {
			r.writes++
		}
	}
	ws.mu.Lock()
	ws.frames += uint64(r.frames)
	ws.writes += uint64(r.writes)
	ws.wrote = ws.wrote || (r.writes > 0 && !onlyPing)
	ws.mu.Unlock()
	return buf, err
}

// write writes p, failing if the watcher takes more than about the write
// timeout to accept it.
func (ws *Stream) write(sink watchSink, p []byte) error {
	if err := ws.deadline.extend(sink, ws.writeTimeout); err != nil {
		return err
	}
	return sink.write(p)
}

// writeDeadline is a sink's write deadline. It is an instant on the
// operating system's clock, which is what net.Conn deadlines are, so it is
// the one time the runtime reads from the real clock rather than the
// injected one: a fake clock's time means nothing to the kernel, and no
// behaviour waits on it. It bounds a stuck watcher; it is not a timer.
type writeDeadline struct{ at time.Time }

// extend moves the deadline to timeout from now, but only once a quarter
// of it has passed, so that most writes cost no deadline change.
func (d *writeDeadline) extend(sink watchSink, timeout time.Duration) error {
	now := time.Now()
	if d.at.Sub(now) >= timeout*3/4 {
		return nil
	}
	d.at = now.Add(timeout)
	return sink.setDeadline(d.at)
}
