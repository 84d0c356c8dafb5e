package watch

// Publishers: the writer of a topic whose writer is the client, which
// keeps every replica of the server holding the state it wants.

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"sync"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/frames"
)

// Publisher writes a topic whose writer is the client, on behalf of
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
type Publisher[T any] struct {
	env    *Env
	cfg    PublisherConfig[T]
	topic  string
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
	targets map[Target]*publishTarget
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
	sess  any // nil until every key was written through the current session
	acked map[string]uint64
}

// PublisherConfig is what a publisher takes from package framework's
// NewTopicPublisher, which checked that the client writes the topic.
type PublisherConfig[T any] struct {
	Topic string
	// Epoch is the publisher's epoch, new for each publisher.
	Epoch string
	// Key reads an object's key from the object or its encoding.
	Key func(obj *T, raw []byte) (string, error)
	// Marshal encodes an object, CheckKey checks a key given to Delete.
	Marshal  func(v any) ([]byte, error)
	CheckKey func(key string) error
}

// NewPublisher returns a publisher of a client-written topic for the
// client of env and starts its background loop, which republishes to
// endpoints whose session changes. Stop it with [Publisher.Close].
func NewPublisher[T any](env *Env, cfg PublisherConfig[T]) *Publisher[T] {
	p := &Publisher[T]{
		env: env, cfg: cfg, topic: cfg.Topic, epoch: cfg.Epoch, done: make(chan struct{}),
		desired: map[string]publishedObject{}, deleted: map[string]uint64{}, deleteHeader: map[string]http.Header{},
		targets: map[Target]*publishTarget{},
	}
	p.ctx, p.cancel = context.WithCancel(env.Ctx)
	go p.run()
	return p
}

// Epoch returns the publisher's epoch.
func (p *Publisher[T]) Epoch() string { return p.epoch }

// Set makes obj the object at the key in its key field. It returns once
// at least one endpoint holds it; endpoints that cannot be written now get
// it when they can. Errors: invalid_argument (obj does not encode, has no
// key, or fails the topic's schema), conflict (another writer owns the
// key), resource_exhausted (the topic is full); after any of these the
// publisher forgets obj. When ctx ends before an endpoint is routable, Set
// returns the reason and the publisher still publishes obj later.
func (p *Publisher[T]) Set(ctx context.Context, obj *T) error {
	if obj == nil {
		return apierror.Errorf(apierror.CodeInvalidArgument, "%s: nil object", p.topic)
	}
	raw, err := p.cfg.Marshal(obj)
	if err != nil {
		return apierror.Errorf(apierror.CodeInvalidArgument, "%s object does not encode: %v", p.topic, err)
	}
	key, err := p.cfg.Key(obj, raw)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.seq++
	header := p.env.Inject(ctx)
	p.desired[key] = publishedObject{raw: raw, seq: p.seq, header: header}
	delete(p.deleted, key)
	delete(p.deleteHeader, key)
	p.mu.Unlock()
	return p.push(ctx, key)
}

// Delete removes the object at key, on the same terms as
// [Publisher.Set]. Deleting a key the server does not hold succeeds.
func (p *Publisher[T]) Delete(ctx context.Context, key string) error {
	if err := p.cfg.CheckKey(key); err != nil {
		return err
	}
	p.mu.Lock()
	p.seq++
	delete(p.desired, key)
	p.deleted[key] = p.seq
	delete(p.deleteHeader, key)
	if header := p.env.Inject(ctx); len(header) > 0 {
		p.deleteHeader[key] = header
	}
	p.mu.Unlock()
	return p.push(ctx, key)
}

// Close stops the publisher's background loop and waits for it. The keys
// stay on the server until the client's session ends (then the topic's
// lost-writer policy applies) or another publisher of the client instance
// replaces them.
func (p *Publisher[T]) Close() error {
	p.cancel()
	<-p.done
	return nil
}

// push makes every routable endpoint hold the publisher's current state of
// key, bringing endpoints whose session changed up to date first. It waits
// until some endpoint is routable and returns once one holds the key, or
// with the first refusal.
func (p *Publisher[T]) push(ctx context.Context, key string) error {
	p.pushMu.Lock()
	defer p.pushMu.Unlock()
	// A round writes to every endpoint: the wait paces the next.
	w := p.env.Writes.Wait("topic write "+p.topic+" "+key, p.ctx.Done(), apierror.Errorf(apierror.CodeUnavailable, "topic publisher closed"))
	defer w.Done()
	for rounds := 0; ; rounds++ {
		if err := w.Pace(ctx, rounds); err != nil {
			return err
		}
		var eps []Target
		if err := w.Until(ctx, func() bool { eps = p.env.Writes.Targets(); return len(eps) > 0 }); err != nil {
			return err
		}
		held := false
		var refusal error
		for _, e := range eps {
			sess := e.Session()
			if sess == nil {
				continue
			}
			tg := p.target(e)
			var res Result
			if tg.sess != sess {
				res = p.reconcileLocked(ctx, e, sess, tg, key)
			} else {
				res = p.sendKeyLocked(ctx, e, sess, tg, key)
			}
			switch {
			case res.Err == nil:
				held = true
			case ctx.Err() != nil:
				return apierror.FromContext(ctx, nil)
			case !res.Resend && refusal == nil:
				refusal = res.Err
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

func (p *Publisher[T]) target(e Target) *publishTarget {
	tg := p.targets[e]
	if tg == nil {
		tg = &publishTarget{acked: map[string]uint64{}}
		p.targets[e] = tg
	}
	return tg
}

// reconcileLocked writes every key of the publisher's state to an endpoint
// through a new session: the objects it may lack and the deletes of keys it
// may still hold. The server ignores what it already has. It returns the
// result for key ("" for none).
func (p *Publisher[T]) reconcileLocked(ctx context.Context, e Target, sess any, tg *publishTarget, key string) Result {
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
	result := Result{}
	for _, o := range ops {
		res := p.sendKeyLocked(ctx, e, sess, tg, o.key)
		if res.Resend || ctx.Err() != nil {
			return res
		}
		if o.key == key {
			result = res
		} else if res.Err != nil {
			p.env.Logger.Warn("lockstep: topic key refused", "topic", p.topic, "key", o.key, "url", e.URL(), "err", res.Err)
		}
	}
	tg.sess = sess
	return result
}

// sendKeyLocked writes the publisher's current state of key to one
// endpoint: its object, or its delete.
func (p *Publisher[T]) sendKeyLocked(ctx context.Context, e Target, sess any, tg *publishTarget, key string) Result {
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
	res := p.env.Writes.Post(ctx, e, Write{Session: sess, Topic: p.topic, Body: body, Header: header})
	if res.Err == nil {
		if set {
			tg.acked[key] = seq
		} else {
			delete(tg.acked, key)
			p.forgetDeleted(key, seq)
		}
		return res
	}
	if !res.Resend && ctx.Err() == nil {
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
func (p *Publisher[T]) forgetDeleted(key string, seq uint64) {
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
func (p *Publisher[T]) run() {
	defer close(p.done)
	failures := 0
	for {
		changed := p.env.Changed()
		if p.reconcileAll() {
			failures = 0
			select {
			case <-changed:
			case <-p.ctx.Done():
				return
			}
			continue
		}
		t := p.env.Clock.NewTimer(p.env.Backoff(failures))
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
func (p *Publisher[T]) reconcileAll() bool {
	p.pushMu.Lock()
	defer p.pushMu.Unlock()
	for e := range p.targets {
		if e.Gone() {
			delete(p.targets, e)
		}
	}
	p.mu.Lock()
	empty := len(p.desired) == 0 && len(p.deleted) == 0
	p.mu.Unlock()
	ok := true
	for _, e := range p.env.Writes.Targets() {
		sess := e.Session()
		if sess == nil {
			continue
		}
		tg := p.targets[e]
		if tg == nil && empty {
			continue // nothing to tell an endpoint this publisher never wrote to
		}
		if tg == nil || tg.sess != sess {
			if res := p.reconcileLocked(p.ctx, e, sess, p.target(e), ""); res.Resend {
				ok = false
			}
		}
	}
	return ok || p.ctx.Err() != nil
}
