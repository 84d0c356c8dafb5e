package framework

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"sync"

	"github.com/lockstep-dev/lockstep/framework/internal/frames"
	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// TopicPublisher writes a topic whose writer is the client, on behalf of
// one client instance. It is level-based like the watch side: it holds the
// state its writer wants (the latest object of every key it set and has not
// deleted) and makes every compatible endpoint of the server hold it too.
// Writes ride the client's version-aware routing: they wait while no
// endpoint holds a session at an agreed version, go to every endpoint that
// does (so each replica of the server holds the writer's keys), and are
// repeated, in full, to an endpoint whose session changed: one that
// restarted and forgot the topic, one that came back, one newly added.
//
// Every write carries the publisher's epoch, new for each publisher, and a
// sequence number that grows with each write, so a resend changes nothing
// and watchers see one version per write. A publisher of the same client
// instance with a new epoch is taken by the server for a restarted writer:
// the keys of the earlier epoch it does not write again follow the topic's
// lost-writer policy.
type TopicPublisher[T any] struct {
	c      *Client
	topic  string
	key    func(obj *T, raw []byte) (string, error)
	epoch  string
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	seq     uint64
	desired map[string]publishedObject // key → latest object set
	deleted map[string]uint64          // key → sequence of its delete, while some endpoint may hold it
	// deleteHeader holds, for a key in deleted, what ClientConfig.Propagator
	// injected from Delete's context (nil entries are left out).
	deleteHeader map[string]http.Header

	// pushMu serialises writes to the server and guards targets.
	pushMu  sync.Mutex
	targets map[*endpoint]*publishTarget
}

type publishedObject struct {
	raw []byte
	seq uint64
	// header is what ClientConfig.Propagator injected from Set's context:
	// the write carries it, and the change it makes to its watchers.
	header http.Header
}

// publishTarget is what one endpoint holds of the publisher's state, as
// far as the publisher knows: the session it was written through, and the
// sequence of every key the endpoint acknowledged.
type publishTarget struct {
	sess  *clientSession // nil until every key was written through the current session
	acked map[string]uint64
}

// NewTopicPublisher returns a publisher of a client-written topic of c's
// contract and starts its background loop, which republishes to endpoints
// whose session changes. Stop it with [TopicPublisher.Close].
func NewTopicPublisher[T any](c *Client, topic string) (*TopicPublisher[T], error) {
	decl, ok := c.contract.Topic(topic)
	if !ok {
		return nil, Errorf(CodeNotFound, "contract %s %s declares no topic %s", c.contract.Name(), c.contract.Version(), topic)
	}
	if decl.Writer != handshake.RoleClient {
		return nil, Errorf(CodePermissionDenied, "topic %s is written by %s, not by its clients", topic, c.contract.Server())
	}
	p := &TopicPublisher[T]{
		c: c, topic: topic, key: keyReader[T](decl.Key), epoch: randomID(8), done: make(chan struct{}),
		desired: map[string]publishedObject{}, deleted: map[string]uint64{}, deleteHeader: map[string]http.Header{},
		targets: map[*endpoint]*publishTarget{},
	}
	p.ctx, p.cancel = context.WithCancel(c.ctx)
	go p.run()
	return p, nil
}

// Epoch returns the publisher's epoch.
func (p *TopicPublisher[T]) Epoch() string { return p.epoch }

// Set makes obj the object at the key in its key field. It returns once
// at least one endpoint holds it; endpoints that cannot be written now get
// it when they can. Errors: invalid_argument (obj does not encode, has no
// key, or fails the topic's schema), conflict (another writer owns the
// key), resource_exhausted (the topic is full); after any of these the
// publisher forgets obj. When ctx ends before an endpoint is routable, Set
// returns the reason and the publisher still publishes obj later.
func (p *TopicPublisher[T]) Set(ctx context.Context, obj *T) error {
	if obj == nil {
		return Errorf(CodeInvalidArgument, "%s: nil object", p.topic)
	}
	raw, err := marshal(obj)
	if err != nil {
		return Errorf(CodeInvalidArgument, "%s object does not encode: %v", p.topic, err)
	}
	key, err := p.key(obj, raw)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.seq++
	var header http.Header
	if prop := p.c.cfg.Propagator; prop != nil {
		header = http.Header{}
		prop.Inject(ctx, header)
	}
	p.desired[key] = publishedObject{raw: raw, seq: p.seq, header: header}
	delete(p.deleted, key)
	delete(p.deleteHeader, key)
	p.mu.Unlock()
	return p.push(ctx, key)
}

// Delete removes the object at key, on the same terms as
// [TopicPublisher.Set]. Deleting a key the server does not hold succeeds.
func (p *TopicPublisher[T]) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	p.mu.Lock()
	p.seq++
	delete(p.desired, key)
	p.deleted[key] = p.seq
	delete(p.deleteHeader, key)
	if prop := p.c.cfg.Propagator; prop != nil {
		header := http.Header{}
		prop.Inject(ctx, header)
		if len(header) > 0 {
			p.deleteHeader[key] = header
		}
	}
	p.mu.Unlock()
	return p.push(ctx, key)
}

// Close stops the publisher's background loop and waits for it. The keys
// stay on the server until the client's session ends (then the topic's
// lost-writer policy applies) or another publisher of the client instance
// replaces them.
func (p *TopicPublisher[T]) Close() error {
	p.cancel()
	<-p.done
	return nil
}

// push makes every routable endpoint hold the publisher's current state of
// key, bringing endpoints whose session changed up to date first. It waits
// until some endpoint is routable and returns once one holds the key, or
// with the first refusal.
func (p *TopicPublisher[T]) push(ctx context.Context, key string) error {
	p.pushMu.Lock()
	defer p.pushMu.Unlock()
	w := p.c.newCallWait(false)
	w.what = "topic write " + p.topic + " " + key
	w.closed, w.closedErr = p.ctx.Done(), Errorf(CodeUnavailable, "topic publisher closed")
	w.freeResends = 1 // a round writes to every endpoint: pace the next
	defer w.done()
	for rounds := 0; ; rounds++ {
		if err := w.pace(ctx, rounds); err != nil {
			return err
		}
		var eps []*endpoint
		if err := w.until(ctx, func() bool { eps = p.c.topicEndpoints(); return len(eps) > 0 }); err != nil {
			return err
		}
		held := false
		var refusal error
		for _, e := range eps {
			sess := e.routableSession()
			if sess == nil || !p.c.topicSession(sess) {
				continue
			}
			tg := p.target(e)
			var res sendResult
			if tg.sess != sess {
				res = p.reconcileLocked(ctx, e, sess, tg, key)
			} else {
				res = p.sendKeyLocked(ctx, e, sess, tg, key)
			}
			switch {
			case res.err == nil:
				held = true
			case ctx.Err() != nil:
				return contextError(ctx, nil)
			case !res.resend && refusal == nil:
				refusal = res.err
			}
		}
		if refusal != nil {
			return refusal
		}
		if held {
			return nil
		}
	}
}

func (p *TopicPublisher[T]) target(e *endpoint) *publishTarget {
	tg := p.targets[e]
	if tg == nil {
		tg = &publishTarget{acked: map[string]uint64{}}
		p.targets[e] = tg
	}
	return tg
}

// sendResult is the outcome of one write: resend means the endpoint's
// session went away unprocessed or the write may not have arrived, so it
// is written again once the endpoint is routable.
type sendResult struct {
	err    error
	resend bool
}

// reconcileLocked writes every key of the publisher's state to an endpoint
// through a new session: the objects it may lack and the deletes of keys it
// may still hold. The server ignores what it already has. It returns the
// result for key ("" for none).
func (p *TopicPublisher[T]) reconcileLocked(ctx context.Context, e *endpoint, sess *clientSession, tg *publishTarget, key string) sendResult {
	tg.sess = nil
	p.mu.Lock()
	type op struct {
		key string
		seq uint64
	}
	ops := make([]op, 0, len(p.desired)+len(tg.acked)+1)
	seen := func(k string) bool {
		_, set := p.desired[k]
		_, held := tg.acked[k]
		return set || held
	}
	for k, obj := range p.desired {
		ops = append(ops, op{k, obj.seq})
	}
	for k := range tg.acked {
		if _, ok := p.desired[k]; !ok {
			ops = append(ops, op{k, p.deleted[k]})
		}
	}
	if key != "" && !seen(key) {
		ops = append(ops, op{key, p.deleted[key]})
	}
	p.mu.Unlock()
	sort.Slice(ops, func(i, j int) bool { return ops[i].seq < ops[j].seq })
	result := sendResult{}
	for _, o := range ops {
		res := p.sendKeyLocked(ctx, e, sess, tg, o.key)
		if res.resend || ctx.Err() != nil {
			return res
		}
		if o.key == key {
			result = res
		} else if res.err != nil {
			p.c.cfg.Logger.Warn("lockstep: topic key refused", "topic", p.topic, "key", o.key, "url", e.url, "err", res.err)
		}
	}
	tg.sess = sess
	return result
}

// sendKeyLocked writes the publisher's current state of key to one
// endpoint: its object, or its delete.
func (p *TopicPublisher[T]) sendKeyLocked(ctx context.Context, e *endpoint, sess *clientSession, tg *publishTarget, key string) sendResult {
	p.mu.Lock()
	obj, set := p.desired[key]
	seq, header := obj.seq, obj.header
	if !set {
		seq, header = p.deleted[key], p.deleteHeader[key]
		if seq == 0 {
			p.seq++ // a key only this endpoint still holds
			seq = p.seq
		}
	}
	p.mu.Unlock()
	body := make([]byte, 0, len(obj.raw)+96)
	body = append(body, `{"epoch":"`...)
	body = append(body, p.epoch...)
	body = append(body, `","seq":`...)
	body = strconv.AppendUint(body, seq, 10)
	if set {
		body = append(body, `,"set":`...)
		body = append(body, obj.raw...)
	} else {
		body = append(body, `,"delete":`...)
		body = append(body, frames.Quote(key)...)
	}
	body = append(body, '}')
	res := p.c.postTopic(ctx, e, sess, p.topic, body, header)
	if res.err == nil {
		if set {
			tg.acked[key] = seq
		} else {
			delete(tg.acked, key)
			p.forgetDeleted(key, seq)
		}
		return res
	}
	if !res.resend && ctx.Err() == nil {
		// Refused: the writer may not hold this key; stop publishing it.
		p.mu.Lock()
		if cur, ok := p.desired[key]; ok && cur.seq == seq {
			delete(p.desired, key)
		}
		if !set && p.deleted[key] == seq {
			delete(p.deleted, key)
			delete(p.deleteHeader, key)
		}
		p.mu.Unlock()
	}
	return res
}

// forgetDeleted drops the delete of key once no endpoint is known to hold
// the key.
func (p *TopicPublisher[T]) forgetDeleted(key string, seq uint64) {
	for _, tg := range p.targets {
		if _, held := tg.acked[key]; held {
			return
		}
	}
	p.mu.Lock()
	if p.deleted[key] == seq {
		delete(p.deleted, key)
		delete(p.deleteHeader, key)
	}
	p.mu.Unlock()
}

// run republishes to every routable endpoint whose session changed, each
// time the client's routing changes, until the publisher is closed.
func (p *TopicPublisher[T]) run() {
	defer close(p.done)
	failures := 0
	for {
		changed := p.c.changedCh()
		if p.reconcileAll() {
			failures = 0
			select {
			case <-changed:
			case <-p.ctx.Done():
				return
			}
			continue
		}
		t := p.c.cfg.Clock.NewTimer(p.c.cfg.Backoff.Delay(failures))
		failures++
		select {
		case <-changed:
		case <-t.Chan():
		case <-p.ctx.Done():
			t.Stop()
			return
		}
		t.Stop()
	}
}

// reconcileAll brings every routable endpoint up to date and forgets the
// endpoints the client dropped; it reports whether all went well.
func (p *TopicPublisher[T]) reconcileAll() bool {
	p.pushMu.Lock()
	defer p.pushMu.Unlock()
	for e := range p.targets {
		if e.ctx.Err() != nil {
			delete(p.targets, e)
		}
	}
	p.mu.Lock()
	empty := len(p.desired) == 0 && len(p.deleted) == 0
	p.mu.Unlock()
	ok := true
	for _, e := range p.c.topicEndpoints() {
		sess := e.routableSession()
		if sess == nil || !p.c.topicSession(sess) {
			continue
		}
		tg := p.targets[e]
		if tg == nil && empty {
			continue // nothing to tell an endpoint this publisher never wrote to
		}
		if tg == nil || tg.sess != sess {
			if res := p.reconcileLocked(p.ctx, e, sess, p.target(e), ""); res.resend {
				ok = false
			}
		}
	}
	return ok || p.ctx.Err() != nil
}

// postTopic sends one topic write to an endpoint through the client's one
// request path. A topic write is idempotent (the (epoch, sequence) it
// carries makes a resend harmless), so whatever the resend rules would
// resend is marked resend, and written again once an endpoint is routable.
func (c *Client) postTopic(ctx context.Context, e *endpoint, sess *clientSession, topic string, body []byte, header http.Header) sendResult {
	a := e.send(ctx, sess, request{method: http.MethodPost,
		url: e.url + protocol.TopicPath(c.contract.Name(), c.contract.Version(), topic), body: body, header: header})
	d, err := e.settle(ctx, sess, a, idempotentCall, "topic "+topic+" write")
	switch d.action {
	case actDone:
		return sendResult{}
	case actFail:
		return sendResult{err: err}
	}
	return sendResult{err: err, resend: true}
}

// topicSession reports whether a session agreed the client's own contract
// version with a handshaking peer: topics are written only at that
// version, since a client converts the objects it watches up
// ([Fork].Topics), never those it writes down. Watches go through
// [Client.watchEndpoints].
func (c *Client) topicSession(sess *clientSession) bool {
	return sess.version != nil && !sess.version.pinned && sess.version.contract == c.contract
}

// topicEndpoints returns the routable endpoints whose session can carry
// the client's topic writes.
func (c *Client) topicEndpoints() []*endpoint {
	ready := *c.ready.Load()
	out := make([]*endpoint, 0, len(ready))
	for _, e := range ready {
		if sess := e.routableSession(); sess != nil && c.topicSession(sess) {
			out = append(out, e)
		}
	}
	return out
}
