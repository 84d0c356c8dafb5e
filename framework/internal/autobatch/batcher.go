// Package autobatch merges the concurrent unary calls of one session at
// one endpoint into multi-call requests: a call goes out at once, alone,
// while a request slot is free, and calls that find every slot busy wait
// and leave together when one frees (or when the oldest request under way
// stalls).
//
// It is separate because the batcher is a small scheduler with its own
// state and lock (the queue, the slots, two timers) whose rules nothing
// else in the client needs to see. It knows nothing of HTTP, sessions or
// the multi-call's wire form: the client gives it how to send one call
// alone and several together (Send), and reads each call's outcome, of
// whatever type R the client's attempts have. It never imports the
// framework.
package autobatch

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Config is a batcher's shape, with the defaults filled in
// (framework.AutoBatch documents each bound).
type Config struct {
	// MaxCalls bounds the calls in one request.
	MaxCalls int
	// MaxInFlight bounds the requests under way.
	MaxInFlight int
	// StallAfter is how long a request holds its slot at most.
	StallAfter time.Duration
	// MaxDelay, if set, lets a call wait that long for companions.
	MaxDelay time.Duration
}

// WithDefaults fills the bounds c leaves unset: 64 calls in a request, at
// most maxCalls (the multi-call's own bound); 4 requests under way; a
// slot held 20ms at most, well above a call's time under way on a loaded
// machine, well below what a caller notices.
func (c Config) WithDefaults(maxCalls int) Config {
	if c.MaxCalls <= 0 {
		c.MaxCalls = 64
	}
	c.MaxCalls = min(c.MaxCalls, maxCalls)
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 4
	}
	if c.StallAfter <= 0 {
		c.StallAfter = 20 * time.Millisecond
	}
	return c
}

// Call is a call waiting in a batcher, with its outcome's way back. A
// call whose caller received its outcome is reused for a later call of
// the same batcher (Batcher.free): nothing may hold it after Deliver.
type Call[R any] struct {
	Ctx    context.Context
	Method string
	Body   []byte
	Header http.Header
	done   chan R
}

// Deliver hands the call its outcome; Send.Many calls it once per call,
// and reads nothing of the call after it: its caller may reuse it at once.
func (c *Call[R]) Deliver(r R) { c.done <- r }

// Send is how a batcher's calls travel.
type Send[R any] struct {
	// One sends one call in a request of its own and returns its outcome.
	One func(ctx context.Context, method string, body []byte, header http.Header) R
	// Many sends calls (two or more, none of them ended) in one request
	// on ctx, which lives as long as the longest-lived call, and delivers
	// each its own outcome.
	Many func(ctx context.Context, calls []*Call[R])
	// Ended is the outcome of a call whose context ended while it waited.
	Ended func(err error) R
}

// flight is a request under way that holds one of a batcher's slots.
type flight struct {
	start time.Time
	held  bool // still holds its slot: it has not stalled
}

// Batcher merges the calls of one session at one endpoint.
type Batcher[R any] struct {
	cfg   Config
	clock clockwork.Clock
	send  Send[R]

	mu      sync.Mutex
	queue   []*Call[R]
	flights []*flight // the requests that hold a slot, oldest first
	timer   clockwork.Timer
	// stallTimer fires when the oldest flight stalls while calls wait.
	stallTimer clockwork.Timer

	// free holds the *Call[R] whose outcomes their callers received, each
	// with its empty done channel, for the next calls that wait: under
	// load nearly every call waits, and a call and its channel were two
	// allocations of each.
	free sync.Pool
}

// New returns a batcher of cfg's shape that sends through send, timing
// on clock.
func New[R any](cfg Config, clock clockwork.Clock, send Send[R]) *Batcher[R] {
	return &Batcher[R]{cfg: cfg, clock: clock, send: send}
}

// Do sends a call through the batcher and waits for its own outcome. While
// a request slot is free and nothing waits, the call goes out at once on the
// caller's own goroutine, exactly as it would without a batcher, so a lone
// caller pays nothing for batching; only calls that find every slot busy
// wait, and leave together when a slot frees.
func (b *Batcher[R]) Do(ctx context.Context, method string, body []byte, header http.Header) R {
	b.mu.Lock()
	if len(b.flights) < b.cfg.MaxInFlight && len(b.queue) == 0 && b.cfg.MaxDelay <= 0 {
		f := b.takeSlotLocked()
		b.mu.Unlock()
		r := b.send.One(ctx, method, body, header)
		b.mu.Lock()
		b.freeSlotLocked(f)
		b.kickLocked()
		b.mu.Unlock()
		return r
	}
	c := b.newCall()
	c.Ctx, c.Method, c.Body, c.Header = ctx, method, body, header
	b.queue = append(b.queue, c)
	b.kickLocked()
	b.mu.Unlock()
	select {
	case r := <-c.done:
		// Delivered: the batcher is done with c, which is free again.
		*c = Call[R]{done: c.done}
		b.free.Put(c)
		return r
	case <-ctx.Done():
		// c stays with the batcher, which may still deliver to it: it is
		// not reused.
		return b.send.Ended(ctx.Err())
	}
}

// newCall returns a free call, or a new one.
func (b *Batcher[R]) newCall() *Call[R] {
	if c, ok := b.free.Get().(*Call[R]); ok {
		return c
	}
	return &Call[R]{done: make(chan R, 1)}
}

// takeSlotLocked starts a request that holds a slot.
func (b *Batcher[R]) takeSlotLocked() *flight {
	f := &flight{start: b.clock.Now(), held: true}
	b.flights = append(b.flights, f)
	return f
}

// freeSlotLocked ends f's hold on its slot, if it still has one.
func (b *Batcher[R]) freeSlotLocked(f *flight) {
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
func (b *Batcher[R]) kickLocked() {
	for len(b.flights) < b.cfg.MaxInFlight && len(b.queue) > 0 {
		if b.cfg.MaxDelay > 0 && len(b.queue) < b.cfg.MaxCalls {
			if b.timer == nil {
				b.timer = b.clock.AfterFunc(b.cfg.MaxDelay, func() {
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
		wait := b.cfg.StallAfter - b.clock.Since(b.flights[0].start)
		b.stallTimer = b.clock.AfterFunc(max(wait, 0), b.unstall)
	}
}

// unstall takes the slots of the requests under way longer than
// StallAfter away from them, so the calls waiting behind a slow handler
// go out.
func (b *Batcher[R]) unstall() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stallTimer = nil
	now := b.clock.Now()
	for len(b.flights) > 0 && now.Sub(b.flights[0].start) >= b.cfg.StallAfter {
		b.freeSlotLocked(b.flights[0])
	}
	b.kickLocked()
}

// flushLocked takes up to MaxCalls waiting calls and sends them on their own
// goroutine.
func (b *Batcher[R]) flushLocked() {
	if len(b.queue) == 0 {
		return
	}
	n := min(len(b.queue), b.cfg.MaxCalls)
	calls := make([]*Call[R], n)
	copy(calls, b.queue)
	b.queue = append(b.queue[:0], b.queue[n:]...)
	f := b.takeSlotLocked()
	go func() {
		b.deliver(calls)
		b.mu.Lock()
		b.freeSlotLocked(f)
		b.kickLocked()
		b.mu.Unlock()
	}()
}

// deliver sends calls whose contexts have not ended: one alone as a plain
// call, several as one request that lives as long as the longest-lived
// of them.
func (b *Batcher[R]) deliver(calls []*Call[R]) {
	live := calls[:0]
	for _, c := range calls {
		if c.Ctx.Err() == nil {
			live = append(live, c)
		}
	}
	switch len(live) {
	case 0:
		return
	case 1:
		c := live[0]
		c.Deliver(b.send.One(c.Ctx, c.Method, c.Body, c.Header))
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var latest time.Time
	unbounded := false
	for _, c := range live {
		if dl, ok := c.Ctx.Deadline(); ok {
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
	b.send.Many(ctx, live)
}
