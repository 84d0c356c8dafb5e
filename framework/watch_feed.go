package framework

// Watch feeds: the one watch stream that every informer of a client shares
// for a topic and selection.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/frames"
	"github.com/lockstep-dev/lockstep/framework/protocol"

	"github.com/lockstep-dev/lockstep/internal/benchhook"
)

// feedSubscriber is what a feed hands its frames to: an [Informer], which
// decodes them itself. The feed calls its methods with its lock held, in
// the order the frames were read, so they must not block.
type feedSubscriber interface {
	// snapshot replaces everything queued with a fresh state: the latest
	// set frame of each key (the map is the subscriber's), from the server
	// instance named, and wakes the subscriber.
	snapshot(raw map[string]*feedFrame, instance string)
	// change queues fr as the latest change of key, without waking the
	// subscriber: the feed calls wake once it has handed on every frame
	// it holds read (a burst), so that a subscriber wakes once per burst
	// rather than once per frame. It reports false when the subscriber's
	// queue is full; the feed then hands it a snapshot instead.
	change(key string, fr *feedFrame) bool
	// wake makes the subscriber take what was queued.
	wake()
}

// feedFrame is one set or delete frame a feed read, shared by its
// subscribers: the bytes, which nothing modifies again, and the frame
// decoded by the first informer that needed it, which the others copy
// rather than decode again (see [DecodeEach]). A frame superseded before
// any informer got to it is never decoded. A frame the feed handed to one
// subscriber alone (sole: an informer by itself on its feed, as a shared
// informer is) is decoded for that informer to keep, without a copy.
type feedFrame struct {
	line []byte

	mu sync.Mutex
	// sole is set, before the frame is handed on, when the feed has one
	// subscriber.
	sole bool
	// decoded is a *decodedFrame[T] for the object type T of the informer
	// that decoded it first: nil until then. taken is set when a sole
	// subscriber took the decode as its own: then nothing may copy it
	// (the informer that holds it owns it), and a subscriber that comes
	// later decodes the frame itself.
	decoded any
	taken   bool
}

// decodedFrame is a frame decoded once, and its decoding's error.
type decodedFrame[T any] struct {
	f   frames.Frame[T]
	err error
}

// newFeedFrame wraps a frame's bytes.
func newFeedFrame(line []byte) *feedFrame { return &feedFrame{line: line} }

// decodeOnce returns the frame decoded into T, decoding it if no informer
// did yet; ok is false when an informer of another object type decoded
// it first, or a sole subscriber took it (the caller then decodes it
// itself). The object returned is shared, and informers copy it, unless
// own is set: the frame was the caller's alone, decoded for it to keep.
func decodeOnce[T any](fr *feedFrame) (d *decodedFrame[T], own, ok bool) {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if fr.taken {
		return nil, false, false
	}
	if fr.decoded == nil {
		d = new(decodedFrame[T])
		d.err = frames.Decode(fr.line, &d.f)
		if fr.sole {
			fr.taken = true
			return d, true, true
		}
		fr.decoded = d
		return d, false, true
	}
	d, ok = fr.decoded.(*decodedFrame[T])
	return d, false, ok
}

// markSole sets fr.sole for a frame about to be handed to n subscribers.
func markSole(fr *feedFrame, n int) {
	if n == 1 {
		fr.mu.Lock()
		fr.sole = true
		fr.mu.Unlock()
	}
}

// watchFeed is one watch stream of a topic and selection, read once for
// every [Informer] of its client that watches them. It holds the latest
// frame of each key as the bytes it read, immutable and shared by its
// subscribers; each subscriber decodes them into objects of its own, so
// informers stay independent (their caches, handlers and pace) while the
// server sends, and the client reads, each change once per client rather
// than once per informer; informers whose object type has a generated
// DeepCopy decode each frame once per feed and take copies ([DecodeEach]).
// A subscriber that comes while the feed is synced starts from the frames
// it holds, without a stream of its own.
//
// It opens its stream through the client's version-aware routing and
// opens a new one whenever a stream ends, resuming from the revision it
// last read when it can (see [Informer]); it runs while it has
// subscribers.
type watchFeed struct {
	c     *Client
	id    string // "<topic>?<selection query>", its key in the client's feeds
	topic string
	// query is the watch request's selection (?nodeName=node-042), ""
	// for none: see [Select]. fields are the selectors it names.
	query  string
	fields []string
	// writerAware is set for a server-written topic: the feed watches a
	// replica whose writer is attached and syncs from no other.
	writerAware bool
	ctx         context.Context
	cancel      context.CancelFunc
	done        chan struct{}

	// mu guards what follows. Lock order: the client's feeds.mu, then mu,
	// then a subscriber's own locks.
	mu   sync.Mutex
	subs map[feedSubscriber]struct{}
	// raw is the latest set frame of each key, once synced is set: the
	// state a new subscriber starts from. instance is the server instance
	// whose topic it is.
	raw      map[string]*feedFrame
	instance string
	synced   bool

	// resume is where the next stream asks to start: the synced frame's
	// history and revision, then the revision of every change read after
	// it. Only the run goroutine uses it.
	resume resumePoint

	rr                                  atomic.Uint64
	streams, resumes, frames, badFrames atomic.Int64
}

// watchFeeds are a client's feeds by topic and selection.
type watchFeeds struct {
	mu sync.Mutex
	m  map[string]*watchFeed
}

// DecodeEach makes an [Informer] decode every frame of its feed itself,
// as every informer did before feeds decoded once: by default, when the
// object type has a generated DeepCopy method (DeepCopy() *T, which
// codegen generates for messages whose types it can copy), the first
// informer of a feed to take a frame decodes it and each informer,
// that one included, holds a deep copy of its own (strings shared, being
// immutable): the same objects, caches and handlers, for a copy's cost
// rather than a decode's. It is for comparing the two.
func DecodeEach() WatchOption {
	return watchOptionFunc(func(c *watchConfig) { c.decodeEach = true })
}

// ownStream makes an [Informer] open a watch stream of its own rather than
// share its client's feed of the topic and selection (see
// internal/benchhook, through which the benchmarks reach it).
func ownStream() WatchOption {
	return watchOptionFunc(func(c *watchConfig) { c.ownStream = true })
}

func init() { benchhook.OwnStream = func() any { return ownStream() } }

// feedRequest says which feed a subscriber wants.
type feedRequest struct {
	topic, query string // the topic and the selection's query
	writerAware  bool   // the topic's writer is the server (see informerMode)
	own          bool   // a feed of its own, not the client's shared one
}

// subscribe adds sub to c's feed of r's topic and selection, starting the
// feed if it is the first; with r.own, to a feed of its own.
func (c *Client) subscribe(sub feedSubscriber, r feedRequest) *watchFeed {
	topic, query, writerAware, own := r.topic, r.query, r.writerAware, r.own
	id := topic + "?" + query
	c.feeds.mu.Lock()
	defer c.feeds.mu.Unlock()
	f := c.feeds.m[id]
	if f == nil || own {
		f = &watchFeed{c: c, id: id, topic: topic, query: query, fields: queryFields(query), writerAware: writerAware,
			done: make(chan struct{}), subs: map[feedSubscriber]struct{}{}}
		f.ctx, f.cancel = context.WithCancel(c.ctx)
		if c.feeds.m == nil {
			c.feeds.m = map[string]*watchFeed{}
		}
		if !own {
			c.feeds.m[id] = f
		}
		go f.run()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs[sub] = struct{}{}
	if f.synced {
		sub.snapshot(maps.Clone(f.raw), f.instance)
	}
	return f
}

// unsubscribe takes sub off the feed; the last one stops the feed and
// waits until its goroutines are gone.
func (f *watchFeed) unsubscribe(sub feedSubscriber) {
	f.c.feeds.mu.Lock()
	f.mu.Lock()
	delete(f.subs, sub)
	last := len(f.subs) == 0
	f.mu.Unlock()
	if last && f.c.feeds.m[f.id] == f {
		delete(f.c.feeds.m, f.id)
	}
	f.c.feeds.mu.Unlock()
	if last {
		f.cancel()
		<-f.done
	}
}

// publishSnapshot makes raw, read from instance, the feed's state and
// every subscriber's.
func (f *watchFeed) publishSnapshot(raw map[string]*feedFrame, instance string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.raw, f.instance, f.synced = raw, instance, true
	for _, fr := range raw {
		markSole(fr, len(f.subs))
	}
	for s := range f.subs {
		s.snapshot(maps.Clone(raw), instance)
	}
}

// publishChange applies a set or delete frame of key to the feed's state
// and queues it for every subscriber; a subscriber whose queue is full is
// handed the whole state instead.
func (f *watchFeed) publishChange(typ, key string, fr *feedFrame) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.raw == nil {
		f.raw = map[string]*feedFrame{} // a resumed stream's first change
	}
	if typ == protocol.FrameSet {
		f.raw[key] = fr
	} else {
		delete(f.raw, key)
	}
	markSole(fr, len(f.subs))
	for s := range f.subs {
		if !s.change(key, fr) {
			s.snapshot(maps.Clone(f.raw), f.instance)
		}
	}
}

// wakeSubscribers wakes every subscriber: the changes of a burst of
// frames are queued.
func (f *watchFeed) wakeSubscribers() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		s.wake()
	}
}

// run opens stream after stream until the feed stops. A stream that
// failed before its snapshot is retried after the client's backoff.
func (f *watchFeed) run() {
	defer close(f.done)
	failures := 0
	for {
		e, sess, ok := f.route()
		if !ok {
			return
		}
		synced, err := f.stream(e, sess, failures == 0)
		if f.ctx.Err() != nil {
			return
		}
		if synced {
			failures = 0
			continue
		}
		if err != nil {
			f.c.cfg.Logger.Debug("lockstep: watch stream failed", "topic", f.topic, "url", e.url, "err", err)
		}
		t := f.c.cfg.Clock.NewTimer(f.c.cfg.Backoff.Delay(failures))
		failures++
		select {
		case <-t.Chan():
		case <-f.ctx.Done():
			t.Stop()
			return
		}
	}
}

// route waits for an endpoint whose session can carry the topic, as long
// as the feed lives, taking the endpoints in turn: one at the client's own
// version, or at a fork version that converts the topic up (see
// [Client.watchEndpoints]). For a server-written topic it picks among the
// replicas whose writer is attached, then among those it knows nothing of
// yet, and waits while every replica it can reach says its topic has no
// writer.
func (f *watchFeed) route() (*endpoint, *clientSession, bool) {
	w := &routeWait{c: f.c, what: "watch " + f.topic, watch: f}
	defer w.done()
	var e *endpoint
	var sess *clientSession
	err := w.until(f.ctx, func() bool {
		eps := f.c.watchEndpoints(f.topic, f.fields)
		if f.writerAware {
			live, unknown, _ := f.c.writerEndpoints(f.topic, eps)
			eps = live
			if len(eps) == 0 {
				eps = unknown
			}
		}
		if len(eps) == 0 {
			return false
		}
		e = eps[int(f.rr.Add(1)%uint64(len(eps)))]
		sess = e.routableSession()
		return sess != nil && f.c.watchSession(sess, f.topic, f.fields)
	})
	return e, sess, err == nil
}

// stream reads one watch stream to its end. It reports whether the stream
// got as far as its snapshot. A refusal is logged as a warning when warn is
// set, on the first of a run of failed attempts.
func (f *watchFeed) stream(e *endpoint, sess *clientSession, warn bool) (bool, error) {
	c := f.c
	ctx, cancel := context.WithCancel(f.ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	f.streams.Add(1)
	// The topic is watched at the session's version, in its form.
	url := e.url + f.watchPath(sess)
	sep := "?"
	if f.query != "" {
		url += sep + f.query
		sep = "&"
	}
	if f.resume.history != "" {
		url += sep + protocol.QuerySince + "=" + f.resume.String()
	}
	a := e.send(ctx, sess, request{method: http.MethodGet, url: url, stream: true})
	if a.stream == nil {
		d, err := e.settle(ctx, sess, a, idempotentCall, "watch of "+f.topic)
		if d.action == actFail && d.lose == "" && warn && a.transport == transportOK {
			c.cfg.Logger.Warn("lockstep: watch refused", "topic", f.topic, "url", e.url, "err", err)
		}
		return false, err
	}
	defer a.stream.Close()
	// End the stream when its session leaves routing: the endpoint was
	// lost, is draining, or handshook again; or, for a server-written
	// topic, when its writer is gone while another replica's is attached.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			changed := c.changedCh()
			if e.routableSession() != sess || f.writerMoved(sess) {
				cancel()
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	// A live stream carries a frame at least every half TTL (pings when
	// the topic is quiet); silence for two TTLs means a dead connection.
	idle := 2 * sess.ttl
	if idle <= 0 {
		idle = 10 * time.Second
	}
	silence := c.cfg.Clock.AfterFunc(idle, cancel)
	defer silence.Stop()

	return f.readFrames(ctx, f.newStreamRead(e, sess, a.resumed), a.stream, func() { silence.Reset(idle) })
}

// feedReadBuffer is the read buffer of a feed's stream: a flush of many
// frames is read in a few system calls.
const feedReadBuffer = 16 << 10

// streamRead is one stream being read: where it comes from and what was
// read of it so far. Only the feed's run goroutine uses it.
type streamRead struct {
	e    *endpoint
	sess *clientSession
	// conv converts the objects of a stream at a fork version up, once for
	// every subscriber; nil at the client's own version.
	conv *TopicConversion
	// resumed: the stream continues the last one, so its frames before
	// synced are changes like those after it. Any other starts with a
	// snapshot, collected in snapshot until its synced marker comes.
	resumed  bool
	snapshot map[string]*feedFrame
	synced   bool
	// queued is set while changes handed on wait for the subscribers'
	// wake, which comes at the end of the burst: before a read that may
	// wait for the connection, and when the stream ends.
	queued bool
}

// newStreamRead starts the reading of a stream through sess at e.
func (f *watchFeed) newStreamRead(e *endpoint, sess *clientSession, resumed bool) *streamRead {
	r := &streamRead{e: e, sess: sess, resumed: resumed}
	if sess != nil && sess.version != nil {
		r.conv = sess.version.topicConversion(f.topic)
	}
	if !resumed {
		r.snapshot = map[string]*feedFrame{}
	}
	return r
}

// readFrames reads one stream's frames to its end: the snapshot, collected
// aside until its synced marker comes, then each change, handed on as
// soon as it is read, so the connection never holds stale frames. alive
// is called on each frame (the stream is not silent). It reports whether
// the stream got as far as its synced marker.
func (f *watchFeed) readFrames(ctx context.Context, r *streamRead, body io.Reader, alive func()) (bool, error) {
	br := bufio.NewReaderSize(body, feedReadBuffer)
	var scratch []byte
	defer func() {
		if r.queued {
			f.wakeSubscribers()
		}
	}()
	for {
		if r.queued && !lineBuffered(br) {
			f.wakeSubscribers()
			r.queued = false
		}
		line, err := frames.ReadLine(br, &scratch, f.c.cfg.MaxResponseBytes)
		if err != nil {
			if ctx.Err() != nil && f.ctx.Err() == nil {
				err = Errorf(CodeUnavailable, "watch stream of %s at %s ended: session lost or stream silent", f.topic, r.e.url)
			}
			return r.synced, err
		}
		alive()
		f.frames.Add(1)
		typ, key, rev, ok := frames.TypeKey(line)
		if !ok {
			f.badFrames.Add(1)
			f.c.cfg.Logger.Warn("lockstep: watch frame does not decode", "topic", f.topic)
			continue
		}
		switch typ {
		case protocol.FrameSet, protocol.FrameDelete:
			f.readChange(r, typ, key, rev, line)
		case protocol.FrameSynced, protocol.FrameClosing:
			if end, err := f.readMarker(r, line); end {
				return r.synced, err
			}
		default:
			// ping and frame types this version does not know carry nothing
		}
	}
}

// readChange takes a set or delete frame: into the snapshot being
// collected, or handed on to the subscribers, which decode the objects;
// the bytes are shared.
func (f *watchFeed) readChange(r *streamRead, typ, key string, rev uint64, line []byte) {
	var fr *feedFrame
	if r.conv != nil && typ == protocol.FrameSet {
		up, err := r.conv.frame(line)
		if err != nil {
			f.badFrames.Add(1)
			f.c.cfg.Logger.Warn("lockstep: watch frame does not convert", "topic", f.topic, "key", key,
				"from", r.sess.version.contract.Version(), "to", f.c.contract.Version(), "err", err)
			return
		}
		fr = newFeedFrame(up)
	} else {
		fr = newFeedFrame(bytes.Clone(line))
	}
	switch {
	case r.synced || r.resumed:
		f.publishChange(typ, key, fr)
		if r.synced && rev > f.resume.rev {
			f.resume.rev = rev
		}
		r.queued = true
	case typ == protocol.FrameSet:
		r.snapshot[key] = fr
	default:
		delete(r.snapshot, key)
	}
}

// readMarker takes a synced or closing frame; end reports that the stream
// is over: it closed, or its replica has no writer to sync from.
func (f *watchFeed) readMarker(r *streamRead, line []byte) (end bool, err error) {
	var fr frames.Frame[json.RawMessage]
	if err := json.Unmarshal(line, &fr); err != nil {
		f.badFrames.Add(1)
		f.c.cfg.Logger.Warn("lockstep: watch frame does not decode", "topic", f.topic, "err", err)
		return false, nil
	}
	if fr.Type == protocol.FrameClosing {
		closedBy(r.e, r.sess, fr.Reason)
		return true, nil
	}
	live := fr.Writer == nil || *fr.Writer // a server without writer reports has one
	f.c.learnTopicWriter(r.sess, f.topic, live)
	if !live && f.writerAware && !r.resumed {
		// A replica whose topic has no writer holds no topic, or a
		// stale one: never the cache's truth. Wait for a replica whose
		// writer is attached.
		return true, Errorf(CodeUnavailable, "%s at %s has no writer attached", f.topic, r.e.url)
	}
	if r.resumed {
		f.resumes.Add(1)
	} else {
		f.publishSnapshot(r.snapshot, fr.Instance)
		r.snapshot = nil
	}
	f.resume = resumePoint{history: fr.History, rev: fr.Rev}
	r.synced = true
	return false, nil
}

// lineBuffered reports whether br holds a whole line already read, which
// the next read returns without waiting for the connection.
func lineBuffered(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// closedBy takes sess out of routing as a closing frame's reason says: the
// server drains, or it lost the session.
func closedBy(e *endpoint, sess *clientSession, reason string) {
	switch reason {
	case protocol.CloseDraining:
		e.lose(sess, stateDraining, Errorf(CodeUnavailable, "%s is draining", sess.peer.Component))
	case protocol.CloseSessionLost:
		e.lose(sess, stateConnecting, Errorf(CodeHandshakeRequired, "the server lost the session"))
	}
}

// writerMoved reports whether the topic's writer at sess is gone while
// another replica's is attached: the feed should move there.
func (f *watchFeed) writerMoved(sess *clientSession) bool {
	if !f.writerAware {
		return false
	}
	if live, known := sess.writers.get(f.topic); !known || live {
		return false
	}
	live, _, _ := f.c.writerEndpoints(f.topic, f.c.watchEndpoints(f.topic, f.fields))
	return len(live) > 0
}
