package framework

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// watchChunk is the size at which a flush writes what it gathered so far:
// many frames per write, without building one huge buffer for a large
// snapshot.
const watchChunk = 32 << 10

var watchBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, watchChunk)
	return &b
}}

var pingFrame = []byte(`{"type":"ping"}` + "\n")

// hijackedHeader starts the answer of a watch stream that owns its
// connection: the body runs until the connection closes.
var hijackedHeader = []byte("HTTP/1.1 200 OK\r\nContent-Type: " + protocol.ContentTypeNDJSON +
	"\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n")

// watchSink is where a watch stream's bytes go: the connection itself
// (HTTP/1.1, taken over from the HTTP server so an idle watcher holds no
// goroutine and no buffers) or a ResponseWriter (HTTP/2).
type watchSink interface {
	setDeadline(deadline time.Time) error
	write(p []byte) error
	close()
}

type connSink struct{ conn net.Conn }

func (c connSink) setDeadline(deadline time.Time) error { return c.conn.SetWriteDeadline(deadline) }

func (c connSink) write(p []byte) error {
	_, err := c.conn.Write(p)
	return err
}

func (c connSink) close() { _ = c.conn.Close() }

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

// watchStream is one watcher of a topic. It holds no queue of changes:
// only the set of keys changed since they were last sent, each pointing at
// the key's latest change (shared, encoded once), so its memory is bounded
// by the number of keys however slow the watcher is, and it always ends up
// with the latest state. A goroutine runs only while there is something to
// send; an idle stream is a connection and this struct.
type watchStream struct {
	topic        *topicStore
	sess         *session
	since        uint64 // the topic's change count when the snapshot was taken
	peer         clientKey
	info         handshake.Peer
	pingEvery    time.Duration
	writeTimeout time.Duration
	// deadline is the sink's write deadline; only the flush goroutine,
	// one at a time, uses it.
	deadline time.Time

	mu sync.Mutex
	// sink is nil until the answer's header can be sent.
	sink   watchSink
	prefix []byte
	// pend holds the latest change of each dirty key, in the order the
	// keys first became dirty; index maps a key to its place in pend.
	pend       []*topicChange
	index      map[string]int
	needSynced bool
	pingDue    bool
	wrote      bool // something was written since the last ping tick
	closing    string
	closed     bool
	running    bool // a flush goroutine is active
	done       bool // finished is closed
	pinger     clockwork.Timer
	finished   chan struct{} // closed once closed and no flush runs

	maxQueued                 int
	frames, writes, coalesced uint64
}

// addWatcher registers a watch stream whose first frames are the current
// object of every key, then a synced marker.
func (t *topicStore) addWatcher(sess *session) (*watchStream, error) {
	ttl := t.s.cfg.SessionTTL
	ws := &watchStream{
		topic: t, sess: sess, peer: clientKey{sess.contract, sess.peer.Instance}, info: sess.peer,
		pingEvery: ttl / 2, writeTimeout: 2 * ttl,
		needSynced: true, finished: make(chan struct{}),
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, Errorf(CodeUnavailable, "%s is draining: watch another endpoint", t.s.cfg.Component)
	}
	if len(t.watchers) >= t.cfg.maxWatchers {
		return nil, Errorf(CodeResourceExhausted, "topic %s has its limit of %d watchers", t.name, t.cfg.maxWatchers)
	}
	ws.pend = make([]*topicChange, 0, len(t.entries))
	ws.index = make(map[string]int, len(t.entries))
	for key, e := range t.entries {
		ws.index[key] = len(ws.pend)
		ws.pend = append(ws.pend, e.change)
	}
	ws.maxQueued = len(ws.pend)
	ws.since = t.gen
	t.watchers[ws] = struct{}{}
	return ws, nil
}

func (t *topicStore) removeWatcher(ws *watchStream) {
	t.mu.Lock()
	delete(t.watchers, ws)
	t.mu.Unlock()
}

// closeWatchers ends the streams that match with a closing frame giving
// reason, after what they still have to send.
func (t *topicStore) closeWatchers(match func(*watchStream) bool, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for ws := range t.watchers {
		if match(ws) {
			ws.closeGracefully(reason)
		}
	}
}

// start gives the stream its sink and sends what is pending: prefix, the
// snapshot, the synced marker.
func (ws *watchStream) start(sink watchSink, prefix []byte) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		sink.close()
		return
	}
	ws.sink, ws.prefix = sink, prefix
	ws.pinger = ws.topic.s.cfg.Clock.AfterFunc(ws.pingEvery, ws.tick)
	ws.scheduleLocked()
}

// markAll records that each change of batch (one per key) is the latest
// change of its key, skipping those its snapshot already holds. It never
// blocks on the watcher's connection.
func (ws *watchStream) markAll(batch []*topicChange) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, ch := range batch {
		if ws.closed || ws.closing != "" {
			return
		}
		if ch.gen > ws.since {
			ws.markLocked(ch)
		}
	}
	ws.scheduleLocked()
}

// markLocked records that ch is the latest change of its key.
func (ws *watchStream) markLocked(ch *topicChange) {
	if i := ws.pending(ch.key); i >= 0 {
		ws.pend[i] = ch
		ws.coalesced++
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
		if len(ws.pend) > 2*ws.topic.cfg.maxKeys {
			ws.pend, ws.index = nil, nil
			ws.closing = protocol.CloseOverflow
		}
	}
}

// pendScanMax is how many dirty keys are looked up by scanning before a
// stream indexes them: a watcher that keeps up has one or two.
const pendScanMax = 16

// pending returns the place of key in pend, or -1.
func (ws *watchStream) pending(key string) int {
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
func (ws *watchStream) scheduleLocked() {
	if ws.closed || ws.sink == nil || ws.running {
		return
	}
	ws.running = true
	ws.topic.s.watchWG.Add(1)
	go ws.flush()
}

// tick runs every ping interval: a stream that wrote nothing since the
// last tick gets a ping, so its watcher can tell a quiet topic from a dead
// connection.
func (ws *watchStream) tick() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
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
// closing frame.
func (ws *watchStream) closeGracefully(reason string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed || ws.closing != "" {
		return
	}
	ws.closing = reason
	if ws.sink == nil {
		return // start sends it
	}
	ws.scheduleLocked()
}

// closeNow closes the stream's connection at once.
func (ws *watchStream) closeNow() {
	ws.mu.Lock()
	if ws.closed {
		ws.mu.Unlock()
		return
	}
	ws.closed = true
	sink := ws.sink
	if ws.pinger != nil {
		ws.pinger.Stop()
	}
	ws.pend, ws.index = nil, nil
	ws.finishLocked()
	ws.mu.Unlock()
	if sink != nil {
		sink.close()
	}
	ws.topic.removeWatcher(ws)
}

func (ws *watchStream) finishLocked() {
	if ws.closed && !ws.running && !ws.done {
		ws.done = true
		close(ws.finished)
	}
}

// flush sends what is pending, as few writes as it takes, until nothing
// is; changes made meanwhile are picked up by the next round.
func (ws *watchStream) flush() {
	defer ws.topic.s.watchWG.Done()
	bufp := watchBufs.Get().(*[]byte)
	buf := (*bufp)[:0]
	defer func() {
		if cap(buf) <= 4*watchChunk {
			*bufp = buf[:0]
			watchBufs.Put(bufp)
		}
	}()
	var spare []*topicChange
	for {
		ws.mu.Lock()
		if ws.closed {
			ws.running = false
			ws.finishLocked()
			ws.mu.Unlock()
			return
		}
		if len(ws.pend) == 0 && !ws.needSynced && !ws.pingDue && ws.closing == "" && ws.prefix == nil {
			// Idle: give the round's memory back.
			ws.running = false
			ws.pend, ws.index = nil, nil
			ws.mu.Unlock()
			return
		}
		pend := ws.pend
		ws.pend = spare[:0]
		clear(ws.index)
		prefix, synced, ping, closing, sink := ws.prefix, ws.needSynced, ws.pingDue, ws.closing, ws.sink
		ws.prefix, ws.needSynced, ws.pingDue = nil, false, false
		ws.mu.Unlock()

		buf = append(buf[:0], prefix...)
		frames, writes := 0, 0
		var err error
		for _, ch := range pend {
			buf = append(buf, ch.frame...)
			frames++
			if len(buf) >= watchChunk {
				if err = ws.write(sink, buf); err != nil {
					break
				}
				writes++
				buf = buf[:0]
			}
		}
		clear(pend)
		spare = pend
		if synced {
			buf = ws.topic.appendSynced(buf)
			frames++
		}
		if ping && len(buf) == 0 {
			buf = append(buf, pingFrame...)
			frames++
		}
		if closing != "" {
			buf = append(buf, `{"type":"closing","reason":"`...)
			buf = append(buf, closing...)
			buf = append(buf, "\"}\n"...)
			frames++
		}
		if err == nil && len(buf) > 0 {
			if err = ws.write(sink, buf); err == nil {
				writes++
			}
		}
		ws.mu.Lock()
		ws.frames += uint64(frames)
		ws.writes += uint64(writes)
		ws.wrote = ws.wrote || writes > 0
		ws.mu.Unlock()
		if err == nil && closing == protocol.CloseDraining {
			// The watcher was told, as a call's answer would tell it.
			ws.sess.drainNotified.Store(true)
		}
		if err != nil || closing != "" {
			ws.closeNow()
		}
	}
}

// write writes p, failing if the watcher takes more than about the write
// timeout to accept it. The deadline is moved only when a quarter of it has
// passed: it is a bound on a stuck watcher, not a precise timer.
func (ws *watchStream) write(sink watchSink, p []byte) error {
	now := time.Now()
	if ws.deadline.Sub(now) < ws.writeTimeout*3/4 {
		ws.deadline = now.Add(ws.writeTimeout)
		if err := sink.setDeadline(ws.deadline); err != nil {
			return err
		}
	}
	return sink.write(p)
}

// appendSynced appends the synced marker, which names the server instance
// that holds the topic.
func (t *topicStore) appendSynced(b []byte) []byte {
	b = append(b, `{"type":"synced","instance":`...)
	b = append(b, quoteJSON(t.s.cfg.Instance)...)
	return append(b, "}\n"...)
}

func (ws *watchStream) stats() WatcherStats {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return WatcherStats{
		Peer: ws.info, Queued: len(ws.pend), MaxQueued: ws.maxQueued,
		Frames: ws.frames, Writes: ws.writes, Coalesced: ws.coalesced,
	}
}

// serveWatch answers GET /lockstep/<contract>/<version>/watch/<Topic> with
// a stream of newline-delimited JSON frames: the current object of every
// key, a synced marker, then each change (docs/topics.md).
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request) {
	t, sess, err := s.topicRequest(r)
	if err != nil {
		s.refuse(w, err)
		return
	}
	sess.lastSeen.Store(s.now())
	if s.draining.Load() {
		sess.drainNotified.Store(true)
		s.refuse(w, Errorf(CodeUnavailable, "%s is draining: watch another endpoint", s.cfg.Component))
		return
	}
	ws, err := t.addWatcher(sess)
	if err != nil {
		s.refuse(w, err)
		return
	}
	rc := http.NewResponseController(w)
	if r.ProtoMajor == 1 {
		// Own the connection: an idle watcher then costs no goroutine and
		// none of the HTTP server's per-connection buffers.
		if conn, _, err := rc.Hijack(); err == nil {
			_ = conn.SetReadDeadline(time.Time{})
			limitSendBuffer(conn)
			ws.start(connSink{conn}, hijackedHeader)
			return
		}
	}
	h := w.Header()
	h.Set("Content-Type", protocol.ContentTypeNDJSON)
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	ws.start(responseSink{w: w, rc: rc}, nil)
	select {
	case <-ws.finished:
	case <-r.Context().Done():
		ws.closeNow()
		<-ws.finished
	}
}

// watchSendBuffer is the kernel send buffer of a watch connection. Kept
// small, it makes a watcher that reads slowly push back on its stream
// soon, so the changes it has not read yet wait as one latest change per
// key rather than as every change in a kernel buffer: what it reads next
// is at most this much older than the topic.
const watchSendBuffer = 128 << 10

func limitSendBuffer(conn net.Conn) {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetWriteBuffer(watchSendBuffer)
	}
}

// topicsDrain ends every watch stream with a closing frame and refuses new
// ones: the server is draining.
func (s *Server) topicsDrain() {
	for _, t := range s.allTopics() {
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		t.closeWatchers(func(*watchStream) bool { return true }, protocol.CloseDraining)
	}
}

// topicsStop closes every watch stream's connection and waits for their
// goroutines: the server stopped.
func (s *Server) topicsStop() {
	for _, t := range s.allTopics() {
		t.mu.Lock()
		t.closed = true
		watchers := make([]*watchStream, 0, len(t.watchers))
		for ws := range t.watchers {
			watchers = append(watchers, ws)
		}
		t.mu.Unlock()
		for _, ws := range watchers {
			ws.closeNow()
		}
	}
	s.watchWG.Wait()
}
