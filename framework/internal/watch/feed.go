package watch

// Feeds: the one watch stream that every informer of a client shares for
// a topic and selection.

import (
	"context"
	"maps"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/frames"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// subscriber is what a feed hands its frames to: an [Informer], which
// decodes them itself. The feed calls its methods with its lock held, in
// the order the frames were read, so they must not block.
type subscriber interface {
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
// rather than decode again (see Request.DecodeEach). A frame superseded
// before any informer got to it is never decoded. A frame the feed handed
// to one subscriber alone (sole: an informer by itself on its feed, as a
// shared informer is) is decoded for that informer to keep, without a
// copy.
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

// feed is one watch stream of a topic and selection, read once for every
// [Informer] of its client that watches them. It holds the latest frame
// of each key as the bytes it read, immutable and shared by its
// subscribers; each subscriber decodes them into objects of its own, so
// informers stay independent (their caches, handlers and pace) while the
// server sends, and the client reads, each change once per client rather
// than once per informer; informers whose object type has a generated
// DeepCopy decode each frame once per feed and take copies. A subscriber
// that comes while the feed is synced starts from the frames it holds,
// without a stream of its own.
//
// It opens its stream through the client's version-aware routing
// ([Router]) and opens a new one whenever a stream ends, resuming from
// the revision it last read when it can (see [Informer]); it runs while
// it has subscribers.
type feed struct {
	env *Env
	id  string // "<topic>?<selection query>", its key in the client's feeds
	// want is what its streams carry; query is the watch request's
	// selection (?nodeName=node-042), "" for none.
	want   Want
	query  string
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	// mu guards what follows. Lock order: the client's Feeds.mu, then mu,
	// then a subscriber's own locks.
	mu   sync.Mutex
	subs map[subscriber]struct{}
	// raw is the latest set frame of each key, once synced is set: the
	// state a new subscriber starts from. instance is the server instance
	// whose topic it is.
	raw      map[string]*feedFrame
	instance string
	synced   bool

	// resume is where the next stream asks to start: the synced frame's
	// history and revision, then the revision of every change read after
	// it. Only the run goroutine uses it.
	resume frames.ResumePoint

	rr                                  atomic.Uint64
	streams, resumes, frames, badFrames atomic.Int64
}

// Feeds are a client's feeds by topic and selection. The zero value is
// ready: a client holds one.
type Feeds struct {
	mu sync.Mutex
	m  map[string]*feed
}

// Request says which feed an informer wants, and how it takes its frames.
type Request struct {
	Topic string
	// Query is the selection's query ("" for none), Selectors the topic's.
	Query string
	// WriterAware: the topic's writer is the server, whose reports of a
	// live writer the feed and the informer follow.
	WriterAware bool
	// Own: a feed of its own, not the client's shared one (the
	// benchmarks' own-stream option).
	Own bool
	// DecodeEach: the informer decodes every frame itself, rather than
	// copy the feed's one decode.
	DecodeEach bool
}

// subscribe adds sub to the client's feed of r's topic and selection,
// starting the feed if it is the first; with r.Own, to a feed of its own.
func subscribe(env *Env, sub subscriber, r Request) *feed {
	id := r.Topic + "?" + r.Query
	fs := env.Feeds
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.m[id]
	start := f == nil || r.Own
	if start {
		f = &feed{env: env, id: id, query: r.Query,
			want: Want{Topic: r.Topic, Fields: queryFields(r.Query), WriterAware: r.WriterAware},
			done: make(chan struct{}), subs: map[subscriber]struct{}{}}
		f.ctx, f.cancel = context.WithCancel(env.Ctx)
		if fs.m == nil {
			fs.m = map[string]*feed{}
		}
		if !r.Own {
			fs.m[id] = f
		}
	}
	f.mu.Lock()
	f.subs[sub] = struct{}{}
	if f.synced {
		sub.snapshot(maps.Clone(f.raw), f.instance)
	}
	f.mu.Unlock()
	if start {
		// Only now: a feed never reads a frame before its first
		// subscriber is on it, so the frames it hands that subscriber
		// alone are marked so (markSole), however late this goroutine
		// got here.
		go f.run()
	}
	return f
}

// queryFields returns the selectors a watch request's query names.
func queryFields(query string) []string {
	if query == "" {
		return nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil
	}
	return slices.Sorted(maps.Keys(q))
}

// unsubscribe takes sub off the feed; the last one stops the feed and
// waits until its goroutines are gone.
func (f *feed) unsubscribe(sub subscriber) {
	fs := f.env.Feeds
	fs.mu.Lock()
	f.mu.Lock()
	delete(f.subs, sub)
	last := len(f.subs) == 0
	f.mu.Unlock()
	if last && fs.m[f.id] == f {
		delete(fs.m, f.id)
	}
	fs.mu.Unlock()
	if last {
		f.cancel()
		<-f.done
	}
}

// publishSnapshot makes raw, read from instance, the feed's state and
// every subscriber's.
func (f *feed) publishSnapshot(raw map[string]*feedFrame, instance string) {
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
func (f *feed) publishChange(typ, key string, fr *feedFrame) {
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
func (f *feed) wakeSubscribers() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		s.wake()
	}
}

// run opens stream after stream until the feed stops. A stream that
// failed before its snapshot is retried after the client's backoff.
func (f *feed) run() {
	defer close(f.done)
	failures := 0
	for {
		conn, ok := f.env.Router.Route(f.ctx, f.want, func(n int) int { return int(f.rr.Add(1) % uint64(n)) })
		if !ok {
			return
		}
		synced, err := f.stream(conn, failures == 0)
		if f.ctx.Err() != nil {
			return
		}
		if synced {
			failures = 0
			continue
		}
		if err != nil {
			f.env.Logger.Debug("lockstep: watch stream failed", "topic", f.want.Topic, "url", conn.URL(), "err", err)
		}
		t := f.env.Clock.NewTimer(f.env.Backoff(failures))
		failures++
		select {
		case <-t.Chan():
		case <-f.ctx.Done():
			t.Stop()
			return
		}
	}
}

// stream reads one watch stream to its end. It reports whether the stream
// got as far as its snapshot. A refusal is logged as a warning when warn is
// set, on the first of a run of failed attempts.
func (f *feed) stream(conn Conn, warn bool) (bool, error) {
	ctx, cancel := context.WithCancel(f.ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	f.streams.Add(1)
	query := f.query
	if f.resume.History != "" {
		if query != "" {
			query += "&"
		}
		query += protocol.QuerySince + "=" + f.resume.String()
	}
	a, err := conn.Open(ctx, query)
	if a.Body == nil {
		if a.Refused && warn {
			f.env.Logger.Warn("lockstep: watch refused", "topic", f.want.Topic, "url", conn.URL(), "err", err)
		}
		return false, err
	}
	defer a.Body.Close()
	// End the stream when its session leaves routing: the endpoint was
	// lost, is draining, or handshook again; or, for a server-written
	// topic, when its writer is gone while another replica's is attached.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			changed := f.env.Changed()
			if conn.Left() {
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
	idle := 2 * conn.TTL()
	if idle <= 0 {
		idle = 10 * time.Second
	}
	silence := f.env.Clock.AfterFunc(idle, cancel)
	defer silence.Stop()

	return f.readFrames(ctx, f.newStreamRead(conn, a.Resumed), a.Body, func() { silence.Reset(idle) })
}

// errStreamEnded is the error of a stream cut because its session left
// routing or it fell silent.
func (f *feed) errStreamEnded(conn Conn) error {
	return apierror.Errorf(apierror.CodeUnavailable, "watch stream of %s at %s ended: session lost or stream silent", f.want.Topic, conn.URL())
}
