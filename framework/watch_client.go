package framework

// What the watch machinery (internal/watch) takes from a client: its
// life, logger, clock and backoff, and its routing, which picks the
// session a feed's stream (at a fork version too, whose objects the feed
// converts up) or a publisher's write goes through.

import (
	"context"
	"net/http"
	"time"

	"github.com/lockstep-dev/lockstep/framework/internal/frames"
	"github.com/lockstep-dev/lockstep/framework/internal/resend"
	"github.com/lockstep-dev/lockstep/framework/internal/watch"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// watchEnv is c as the watch machinery sees it.
func (c *Client) watchEnv() *watch.Env {
	return &watch.Env{
		Ctx:            c.ctx,
		Logger:         c.cfg.Logger,
		Clock:          c.cfg.Clock,
		Backoff:        c.cfg.Backoff.Delay,
		MaxFrameBytes:  c.cfg.MaxResponseBytes,
		Contract:       c.contract.Name(),
		Version:        c.contract.Version(),
		MaxQueued:      2 * DefaultTopicMaxKeys,
		Extract:        c.extractHeader,
		EncodeHeader:   func(h map[string]string) []byte { return frames.EncodeHeader(frames.HeaderOf(h)) },
		Inject:         c.injectHeader,
		WriterWatchers: &c.writerWatchers,
		Changed:        c.changedCh,
		Feeds:          &c.feeds,
		Router:         watchRouter{c},
		Writes:         topicWrites{c},
	}
}

// extractHeader is ctx carrying a change's header (ClientConfig.Propagator).
func (c *Client) extractHeader(ctx context.Context, header map[string]string) context.Context {
	if c.cfg.Propagator == nil {
		return ctx
	}
	return c.cfg.Propagator.Extract(ctx, frames.HeaderOf(header))
}

// injectHeader is a topic write's header (ClientConfig.Propagator), or nil.
func (c *Client) injectHeader(ctx context.Context) http.Header {
	if c.cfg.Propagator == nil {
		return nil
	}
	h := http.Header{}
	c.cfg.Propagator.Inject(ctx, h)
	return h
}

// watchRouter routes the streams of a client's feeds.
type watchRouter struct{ c *Client }

// Route waits for an endpoint whose session can carry w, as long as ctx
// lives, taking the endpoints in turn: one at the client's own version,
// or at a fork version that converts the topic up. For a server-written
// topic it picks among the replicas whose writer is attached, then among
// those it knows nothing of yet, and waits while every replica it can
// reach says its topic has no writer (watch.Candidates).
func (r watchRouter) Route(ctx context.Context, w watch.Want, pick func(n int) int) (watch.Conn, bool) {
	c := r.c
	rw := &routeWait{Client: &c.waits, What: "watch " + w.Topic, Why: func() string { return watch.Why(c.watchKnown(), w) }}
	defer rw.Done()
	var e *endpoint
	var sess *clientSession
	err := rw.Until(ctx, func() bool {
		eps := watch.Candidates(c.watchReady(), w)
		if len(eps) == 0 {
			return false
		}
		ep := eps[pick(len(eps))]
		s, ok := ep.Session().(routedSession) // read again: it may have changed since
		e, sess = ep.e, s.sess
		return ok && s.watchable(w)
	})
	if err != nil {
		return nil, false
	}
	return &watchConn{c: c, e: e, sess: sess, want: w}, true
}

// routedEndpoint is one of c's endpoints as watch routing reads it
// (watch.Endpoint).
type routedEndpoint struct {
	c *Client
	e *endpoint
}

func (r routedEndpoint) URL() string { return r.e.url }
func (r routedEndpoint) Why() string { return r.e.why() }

// Session returns the endpoint's routable session once it agreed a
// version, else nil.
func (r routedEndpoint) Session() watch.Session {
	if sess := r.e.routableSession(); sess != nil && sess.version != nil {
		return routedSession{r.c, sess}
	}
	return nil
}

// routedSession is a routable session that agreed a version, as watch
// routing reads it (watch.Session).
type routedSession struct {
	c    *Client
	sess *clientSession
}

func (r routedSession) Version() string         { return r.sess.version.contract.Version() }
func (r routedSession) Writers() *watch.Writers { return &r.sess.writers }

// Watchable: see [peerVersion.watchable].
func (r routedSession) Watchable(topic string, fields []string) (string, bool) {
	return r.sess.version.watchable(r.c.contract, topic, fields)
}

// watchable reports whether the session can carry a watch of w.
func (r routedSession) watchable(w watch.Want) bool {
	_, ok := r.Watchable(w.Topic, w.Fields)
	return ok
}

// watchReady returns c's routable endpoints, for watch routing.
func (c *Client) watchReady() []routedEndpoint {
	ready := *c.ready.Load()
	out := make([]routedEndpoint, len(ready))
	for i, e := range ready {
		out[i] = routedEndpoint{c, e}
	}
	return out
}

// watchKnown returns every endpoint c knows, in URL order, for the
// blocked log.
func (c *Client) watchKnown() []routedEndpoint {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]routedEndpoint, 0, len(c.endpoints))
	for _, base := range sortedKeys(c.endpoints) {
		out = append(out, routedEndpoint{c, c.endpoints[base]})
	}
	return out
}

// watchConn is the session of one endpoint a feed's stream goes through.
type watchConn struct {
	c    *Client
	e    *endpoint
	sess *clientSession
	want watch.Want
}

func (k *watchConn) URL() string        { return k.e.url }
func (k *watchConn) TTL() time.Duration { return k.sess.ttl }
func (k *watchConn) Version() string    { return k.sess.version.contract.Version() }

// Open sends the watch request at the version the session agreed, in its
// form, through the client's one request path.
func (k *watchConn) Open(ctx context.Context, query string) (watch.Opened, error) {
	url := k.e.url + protocol.WatchPath(k.c.contract.Name(), k.sess.version.contract.Version(), k.want.Topic)
	if query != "" {
		url += "?" + query
	}
	a := k.e.send(ctx, k.sess, resend.Request{Method: http.MethodGet, URL: url, Stream: true})
	if a.Stream == nil {
		d, err := k.e.settle(ctx, k.sess, a, resend.Idempotent, "watch of "+k.want.Topic)
		return watch.Opened{Refused: d.Action == resend.Fail && d.Lose == "" && a.Transport == resend.TransportOK}, err
	}
	return watch.Opened{Body: a.Stream, Resumed: a.Resumed}, nil
}

// Up is the fork's conversion of the topic's objects, nil at the
// client's own version.
func (k *watchConn) Up() func(object []byte) ([]byte, error) {
	if k.sess.version == nil {
		return nil
	}
	if conv := k.sess.version.topicConversion(k.want.Topic); conv != nil {
		return conv.up
	}
	return nil
}

// Left reports whether the session left routing, or the topic's writer
// at it is gone while another replica's is attached.
func (k *watchConn) Left() bool {
	if k.e.routableSession() != k.sess {
		return true
	}
	return watch.WriterMoved(routedSession{k.c, k.sess}, k.want, k.c.watchReady)
}

// Closed takes the session out of routing: the server drains, or it lost
// the session.
func (k *watchConn) Closed(reason string) {
	switch reason {
	case protocol.CloseDraining:
		k.e.lose(k.sess, stateDraining, Errorf(CodeUnavailable, "%s is draining", k.sess.peer.Component))
	case protocol.CloseSessionLost:
		k.e.lose(k.sess, stateConnecting, Errorf(CodeHandshakeRequired, "the server lost the session"))
	}
}

func (k *watchConn) LearnWriter(live bool) { k.c.learnTopicWriter(k.sess, k.want.Topic, live) }

// topicWrites carries the writes of a client's topic publishers.
type topicWrites struct{ c *Client }

// Targets returns the routable endpoints whose session can carry the
// client's topic writes.
func (w topicWrites) Targets() []watch.Target {
	ready := *w.c.ready.Load()
	out := make([]watch.Target, 0, len(ready))
	for _, e := range ready {
		if sess := e.routableSession(); sess != nil && w.c.topicSession(sess) {
			out = append(out, topicTarget{w.c, e})
		}
	}
	return out
}

// Wait is the client's one wait for a routable endpoint. A publisher's
// round writes to every endpoint: one resend goes at once, then backoff.
func (w topicWrites) Wait(what string, closed <-chan struct{}, closedErr error) watch.RouteWait {
	rw := w.c.newCallWait(false)
	rw.What, rw.Closed, rw.ClosedErr = what, closed, closedErr
	rw.FreeResends = 1
	return rw
}

// Post sends one topic write to an endpoint through the client's one
// request path. A topic write is idempotent (the (epoch, sequence) it
// carries makes a resend harmless), so whatever the resend rules would
// resend is marked resend, and written again once an endpoint is routable.
func (w topicWrites) Post(ctx context.Context, t watch.Target, wr watch.Write) watch.Result {
	e, sess, c := t.(topicTarget).e, wr.Session.(*clientSession), w.c
	a := e.send(ctx, sess, resend.Request{Method: http.MethodPost,
		URL: e.url + protocol.TopicPath(c.contract.Name(), c.contract.Version(), wr.Topic), Body: wr.Body, Header: wr.Header})
	d, err := e.settle(ctx, sess, a, resend.Idempotent, "topic "+wr.Topic+" write")
	switch d.Action {
	case resend.Done:
		return watch.Result{}
	case resend.Fail:
		return watch.Result{Err: err}
	}
	return watch.Result{Err: err, Resend: true}
}

// topicSession reports whether a session agreed the client's own contract
// version with a handshaking peer: a client converts the objects it
// watches up ([Fork].Topics), never those it writes down.
func (c *Client) topicSession(sess *clientSession) bool {
	return sess.version != nil && !sess.version.pinned && sess.version.contract == c.contract
}

// topicTarget is an endpoint a publisher writes to.
type topicTarget struct {
	c *Client
	e *endpoint
}

func (t topicTarget) URL() string { return t.e.url }
func (t topicTarget) Gone() bool  { return t.e.ctx.Err() != nil }

// Session is the endpoint's routable session when it can carry the
// client's topic writes, else nil.
func (t topicTarget) Session() any {
	if sess := t.e.routableSession(); sess != nil && t.c.topicSession(sess) {
		return sess
	}
	return nil
}

// sessionWriters is what a client knows of its topics' writers at one
// session's server (watch.Writers).
type sessionWriters = watch.Writers

// learnTopicWriter records what a server said of a topic's writer at a
// session and, when that changes, wakes whatever routes on it.
func (c *Client) learnTopicWriter(sess *clientSession, topic string, live bool) {
	if sess.writers.Set(topic, live) {
		c.stateChanged()
	}
}

// learnTopicWriters applies a heartbeat answer's reports to a session:
// those of the session's contract at its agreed version.
func (c *Client) learnTopicWriters(sess *clientSession, reports []topicWriterReport) {
	if sess.version != nil && sess.writers.Learn(reports, c.contract.Name(), sess.version.contract.Version()) {
		c.stateChanged()
	}
}
