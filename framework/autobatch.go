package framework

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/lockstep-dev/lockstep/framework/internal/wire"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// AutoBatch shapes automatic batching, which clients do by default:
// concurrent unary calls to the same endpoint travel together as one
// multi-call request, and each caller gets its own answer or error. Batches
// form opportunistically, with no delay: a call goes out at once, alone,
// while fewer than MaxInFlight requests are under way to its endpoint, so a
// lone caller's call is sent exactly as without batching; only calls that
// find every slot busy wait, and leave together in one request when a slot
// frees. Under load that caps the connections and requests per endpoint and
// shares their costs (system calls, headers, HTTP parsing) among the calls.
// A request under way longer than StallAfter stops holding its slot, so a
// slow handler delays the calls behind it by at most that long.
// With MaxDelay set, a call also waits up to that long for companions.
type AutoBatch struct {
	// Disabled turns automatic batching off: every call travels in a
	// request of its own, on as many connections as there are concurrent
	// calls.
	Disabled bool
	// MaxCalls bounds the calls in one request; default 64, at most
	// [MaxMultiCalls].
	MaxCalls int
	// MaxInFlight bounds the requests under way per endpoint; default 4.
	MaxInFlight int
	// StallAfter is how long a request holds its slot at most; default
	// 20ms.
	StallAfter time.Duration
	// MaxDelay, if set, lets a call wait that long for companions even when
	// a request could go out at once.
	MaxDelay time.Duration
}

// defaultStallAfter is AutoBatch.StallAfter's default: well above a call's
// time under way on a loaded machine, well below what a caller notices.
const defaultStallAfter = 20 * time.Millisecond

// autoBatch is the client's batching configuration with its defaults: a nil
// ClientConfig.AutoBatch batches at the defaults.
func (c *Client) autoBatch() AutoBatch {
	var a AutoBatch
	if c.cfg.AutoBatch != nil {
		a = *c.cfg.AutoBatch
	}
	return a.withDefaults()
}

func (a AutoBatch) withDefaults() AutoBatch {
	if a.MaxCalls <= 0 {
		a.MaxCalls = 64
	}
	a.MaxCalls = min(a.MaxCalls, MaxMultiCalls)
	if a.MaxInFlight <= 0 {
		a.MaxInFlight = 4
	}
	if a.StallAfter <= 0 {
		a.StallAfter = defaultStallAfter
	}
	return a
}

// pendingCall is a call waiting in a batcher.
type pendingCall struct {
	ctx    context.Context
	method string
	body   []byte
	header http.Header
	done   chan attempt
}

// flight is a request under way that holds one of a batcher's slots.
type flight struct {
	start time.Time
	held  bool // still holds its slot: it has not stalled
}

// batcher merges the calls of one session at one endpoint.
type batcher struct {
	e    *endpoint
	sess *clientSession
	cfg  AutoBatch

	mu      sync.Mutex
	queue   []*pendingCall
	flights []*flight // the requests that hold a slot, oldest first
	timer   clockwork.Timer
	// stallTimer fires when the oldest flight stalls while calls wait.
	stallTimer clockwork.Timer
}

// batcherFor returns the batcher of sess, creating it on first use.
func (e *endpoint) batcherFor(sess *clientSession) *batcher {
	e.batchMu.Lock()
	defer e.batchMu.Unlock()
	if e.batch == nil || e.batch.sess != sess {
		e.batch = &batcher{e: e, sess: sess, cfg: e.c.autoBatch()}
	}
	return e.batch
}

// do sends a call through the batcher and waits for its own outcome. While
// a request slot is free and nothing waits, the call goes out at once on the
// caller's own goroutine, exactly as it would without a batcher, so a lone
// caller pays nothing for batching; only calls that find every slot busy
// wait, and leave together when a slot frees.
func (b *batcher) do(ctx context.Context, method string, body []byte, header http.Header) attempt {
	b.mu.Lock()
	if len(b.flights) < b.cfg.MaxInFlight && len(b.queue) == 0 && b.cfg.MaxDelay <= 0 {
		f := b.takeSlotLocked()
		b.mu.Unlock()
		a := b.e.send(ctx, b.sess, request{method: http.MethodPost, url: b.e.callURL(b.sess, method), body: body, header: header})
		b.mu.Lock()
		b.freeSlotLocked(f)
		b.kickLocked()
		b.mu.Unlock()
		return a
	}
	p := &pendingCall{ctx: ctx, method: method, body: body, header: header, done: make(chan attempt, 1)}
	b.queue = append(b.queue, p)
	b.kickLocked()
	b.mu.Unlock()
	select {
	case a := <-p.done:
		return a
	case <-ctx.Done():
		return attempt{transport: transportAmbiguous, err: ctx.Err()}
	}
}

// takeSlotLocked starts a request that holds a slot.
func (b *batcher) takeSlotLocked() *flight {
	f := &flight{start: b.e.c.cfg.Clock.Now(), held: true}
	b.flights = append(b.flights, f)
	return f
}

// freeSlotLocked ends f's hold on its slot, if it still has one.
func (b *batcher) freeSlotLocked(f *flight) {
	if !f.held {
		return
	}
	f.held = false
	for i, g := range b.flights {
		if g == f {
			b.flights = append(b.flights[:i], b.flights[i+1:]...)
			break
		}
	}
}

// kickLocked sends what waits while a request slot is free, honouring
// MaxDelay, and otherwise watches the oldest request for a stall.
func (b *batcher) kickLocked() {
	for len(b.flights) < b.cfg.MaxInFlight && len(b.queue) > 0 {
		if b.cfg.MaxDelay > 0 && len(b.queue) < b.cfg.MaxCalls {
			if b.timer == nil {
				b.timer = b.e.c.cfg.Clock.AfterFunc(b.cfg.MaxDelay, func() {
					b.mu.Lock()
					b.timer = nil
					if len(b.flights) < b.cfg.MaxInFlight {
						b.flushLocked()
					}
					b.mu.Unlock()
				})
			}
			return
		}
		b.flushLocked()
	}
	if len(b.queue) > 0 && b.stallTimer == nil {
		wait := b.cfg.StallAfter - b.e.c.cfg.Clock.Since(b.flights[0].start)
		b.stallTimer = b.e.c.cfg.Clock.AfterFunc(max(wait, 0), b.unstall)
	}
}

// unstall takes the slots of the requests under way longer than
// StallAfter away from them, so the calls waiting behind a slow handler
// go out.
func (b *batcher) unstall() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stallTimer = nil
	now := b.e.c.cfg.Clock.Now()
	for len(b.flights) > 0 && now.Sub(b.flights[0].start) >= b.cfg.StallAfter {
		b.freeSlotLocked(b.flights[0])
	}
	b.kickLocked()
}

// flushLocked takes up to MaxCalls waiting calls and sends them on their own
// goroutine.
func (b *batcher) flushLocked() {
	if len(b.queue) == 0 {
		return
	}
	n := min(len(b.queue), b.cfg.MaxCalls)
	calls := make([]*pendingCall, n)
	copy(calls, b.queue)
	b.queue = append(b.queue[:0], b.queue[n:]...)
	f := b.takeSlotLocked()
	go func() {
		b.send(calls)
		b.mu.Lock()
		b.freeSlotLocked(f)
		b.kickLocked()
		b.mu.Unlock()
	}()
}

// send delivers calls: one alone as a plain call, several as a multi-call.
func (b *batcher) send(calls []*pendingCall) {
	live := calls[:0]
	for _, p := range calls {
		if p.ctx.Err() == nil {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		return
	}
	if len(live) == 1 {
		p := live[0]
		p.done <- b.e.send(p.ctx, b.sess, request{method: http.MethodPost, url: b.e.callURL(b.sess, p.method), body: p.body, header: p.header})
		return
	}
	// The request lives as long as its longest-lived call.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var latest time.Time
	unbounded := false
	for _, p := range live {
		if dl, ok := p.ctx.Deadline(); ok {
			if dl.After(latest) {
				latest = dl
			}
		} else {
			unbounded = true
		}
	}
	if !unbounded {
		ctx, cancel = context.WithDeadline(ctx, latest)
		defer cancel()
	}
	whole := b.e.send(withMultiCallItems(ctx, live), b.sess, request{method: http.MethodPost, url: b.e.callURL(b.sess, protocol.MultiCallMethod), body: b.encode(live)})
	if whole.transport != transportOK || whole.status != http.StatusOK {
		for _, p := range live {
			p.done <- whole
		}
		return
	}
	br, err := wire.DecodeMultiResponse(whole.body)
	if err != nil || len(br.Results) != len(live) {
		bad := attempt{status: http.StatusInternalServerError,
			body: mustJSON(toWire(Errorf(CodeInternal, "multi-call answer does not decode")))}
		for _, p := range live {
			p.done <- bad
		}
		return
	}
	for i, p := range live {
		r := br.Results[i]
		a := attempt{draining: whole.draining}
		switch {
		case r.Error != nil:
			// An item's own error says nothing of whether it was
			// processed: only the request as a whole can be refused
			// unprocessed.
			a.status = r.Error.ToError().Code().HTTPStatus()
			a.body = mustJSON(r.Error)
		default:
			a.status, a.body = http.StatusOK, r.OK
		}
		p.done <- a
	}
}

// encode writes the multi-call body around the already encoded requests.
func (b *batcher) encode(calls []*pendingCall) []byte {
	size := len(`{"calls":[]}`)
	for _, p := range calls {
		size += len(`{"method":"","timeout":"","request":},`) + len(p.method) + 16 + len(p.body)
	}
	buf := append(make([]byte, 0, size), `{"calls":[`...)
	for i, p := range calls {
		if i > 0 {
			buf = append(buf, ',')
		}
		var timeout string
		if dl, ok := p.ctx.Deadline(); ok {
			timeout = encodeTimeout(time.Until(dl))
		}
		var h map[string]string
		if len(p.header) > 0 {
			h = make(map[string]string, len(p.header))
			for k := range p.header {
				h[k] = p.header.Get(k)
			}
		}
		buf = wire.AppendMultiCall(buf, p.method, timeout, h, p.body)
	}
	return append(buf, `]}`...)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{"code":"internal","message":"did not encode"}`)
	}
	return b
}
