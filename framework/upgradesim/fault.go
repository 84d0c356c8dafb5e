package upgradesim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-dev/lockstep/framework"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// Errors the fault-injecting transport returns. A partition and a killed
// caller look like a connection that could not be made (a dial error), so
// clients know the request never left; a dropped answer does not, so they
// know it may have been processed.
var (
	errPartitioned = errors.New("upgradesim: partitioned")
	errKilled      = errors.New("upgradesim: the calling replica was killed")
	// ErrDropped is what a call whose answer a [Drop] step lost fails with,
	// inside the client's error.
	ErrDropped = errors.New("upgradesim: connection dropped after the request was sent")
)

// fault is one fault in force between two sides (component or replica
// names).
type fault struct {
	a, b     string
	op       Op
	latency  time.Duration
	dropLeft int
}

// disturbance is a span of time during which faults touched a pair; b "*"
// means every peer of a (a kill, of replica).
type disturbance struct {
	a, b     string
	from, to time.Duration
	replica  string
}

// sideMatches reports whether a step's side names replica r.
func sideMatches(side string, r *replica) bool { return side == r.comp.Name || side == r.name }

func (f *fault) between(x, y *replica) bool {
	return (sideMatches(f.a, x) && sideMatches(f.b, y)) || (sideMatches(f.a, y) && sideMatches(f.b, x))
}

func (c *Cluster) addFault(st Step) {
	now := c.now()
	c.mu.Lock()
	c.faults = append(c.faults, &fault{a: st.Target, b: st.Peer, op: st.Op, latency: st.Duration, dropLeft: st.Count})
	c.disturbances = append(c.disturbances, disturbance{a: sideComponent(st.Target), b: sideComponent(st.Peer), from: now, to: math.MaxInt64})
	c.mu.Unlock()
	c.tl.mark(now, "fault", st.String())
}

// heal removes the faults between a and b and ends their disturbance.
func (c *Cluster) heal(a, b string) {
	now := c.now()
	c.mu.Lock()
	kept := c.faults[:0]
	for _, f := range c.faults {
		if !((f.a == a && f.b == b) || (f.a == b && f.b == a)) {
			kept = append(kept, f)
		}
	}
	c.faults = kept
	ca, cb := sideComponent(a), sideComponent(b)
	for i := range c.disturbances {
		d := &c.disturbances[i]
		if d.to == math.MaxInt64 && ((d.a == ca && d.b == cb) || (d.a == cb && d.b == ca)) {
			d.to = now
		}
	}
	c.mu.Unlock()
	c.tl.mark(now, "heal", a+" and "+b)
}

func sideComponent(side string) string {
	name, _, _ := strings.Cut(side, "#")
	return name
}

// disturbedLocked reports whether a fault touched the pair of components
// between from and to.
func (c *Cluster) disturbedLocked(a, b string, from, to time.Duration) bool {
	for _, d := range c.disturbances {
		if d.to < from || d.from > to {
			continue
		}
		if (d.a == a && (d.b == b || d.b == "*")) || (d.a == b && (d.b == a || d.b == "*")) {
			return true
		}
	}
	return false
}

// partitioned reports whether a partition separates replicas x and y.
func (c *Cluster) partitionedLocked(x, y *replica) bool {
	for _, f := range c.faults {
		if f.op == OpPartition && f.between(x, y) {
			return true
		}
	}
	return false
}

// effect is what the faults in force do to one request.
type effect struct {
	partitioned bool
	latency     time.Duration
	drop        bool
}

func (c *Cluster) effectOn(from, to *replica, call bool) effect {
	c.mu.Lock()
	defer c.mu.Unlock()
	var e effect
	for _, f := range c.faults {
		if !f.between(from, to) {
			continue
		}
		switch f.op {
		case OpPartition:
			e.partitioned = true
		case OpSlow:
			e.latency = max(e.latency, f.latency)
		case OpDrop:
			if call && f.dropLeft > 0 && !e.drop {
				f.dropLeft--
				e.drop = true
			}
		}
	}
	return e
}

// faultTransport carries one incarnation's requests and applies the faults
// in force between its replica and the one each request goes to.
type faultTransport struct {
	c        *Cluster
	from     *replica
	inc      *incarnation
	base     http.RoundTripper
	own      *http.Transport // the default transport it made, closed with it
	killCtx  context.Context
	killFunc context.CancelFunc
	once     sync.Once
}

func newFaultTransport(c *Cluster, inc *incarnation) *faultTransport {
	own := framework.NewTransport(nil)
	t := &faultTransport{c: c, from: inc.r, inc: inc, base: own, own: own}
	t.killCtx, t.killFunc = context.WithCancel(context.Background())
	return t
}

// wrap returns a transport with the same faults around base, a transport
// of the user's.
func (t *faultTransport) wrap(base http.RoundTripper) http.RoundTripper {
	return &wrappedTransport{parent: t, base: base}
}

// wrappedTransport applies its parent's faults (and kill switch) around a
// user's transport.
type wrappedTransport struct {
	parent *faultTransport
	base   http.RoundTripper
}

// RoundTrip applies the parent's faults around the user's transport.
func (w *wrappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return w.parent.roundTrip(req, w.base)
}

// CloseIdleConnections drops the idle connections of the user's
// transport, as the runtime asks when a server drains or goes away.
func (w *wrappedTransport) CloseIdleConnections() {
	if c, ok := w.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// CloseIdleConnections drops the idle connections of the transport it
// carries requests on, as the runtime asks when a server drains or goes
// away.
func (t *faultTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// kill makes every request fail as if the connection could not be made,
// and cuts those in flight: the replica is gone.
func (t *faultTransport) kill() { t.killFunc() }

// close releases the transport's connections.
func (t *faultTransport) close() {
	t.once.Do(func() {
		t.killFunc()
		t.own.CloseIdleConnections()
	})
}

func dialError(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }

// isCallRequest reports whether a request is a call (whose answer a drop
// may lose) rather than a handshake, heartbeat, session close or watch.
func isCallRequest(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	switch r.URL.Path {
	case protocol.PathHandshake, protocol.PathHeartbeat, protocol.PathSession:
		return false
	}
	return !strings.Contains(r.URL.Path, "/topics/")
}

// RoundTrip applies the faults in force, then carries the request.
func (t *faultTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.roundTrip(req, t.base)
}

func (t *faultTransport) roundTrip(req *http.Request, base http.RoundTripper) (*http.Response, error) {
	if t.killCtx.Err() != nil {
		return nil, dialError(errKilled)
	}
	var e effect
	to := t.c.byAddr[req.URL.Host]
	var sentTo *incarnation
	if to != nil {
		e = t.c.effectOn(t.from, to, isCallRequest(req))
		t.c.mu.Lock()
		sentTo = to.inc
		t.c.mu.Unlock()
	}
	noted := t.c.noteAttempt(req, t.inc, to, sentTo)
	if session := t.c.noteSession(req, t.inc, to, sentTo); session != nil {
		noted = session
	}
	if e.partitioned {
		noted(nil, errPartitioned)
		return nil, dialError(errPartitioned)
	}
	if e.latency > 0 {
		timer := time.NewTimer(e.latency)
		select {
		case <-timer.C:
		case <-req.Context().Done():
			timer.Stop()
			noted(nil, req.Context().Err())
			return nil, req.Context().Err()
		case <-t.killCtx.Done():
			timer.Stop()
			noted(nil, errKilled)
			return nil, dialError(errKilled)
		}
	}
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(t.killCtx, cancel)
	release := func() {
		stop()
		cancel()
	}
	resp, err := base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		release()
		noted(nil, err)
		return nil, err
	}
	if e.drop {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		release()
		noted(nil, fmt.Errorf("%w (the answer was %s)", ErrDropped, answerText(resp, nil)))
		return nil, ErrDropped
	}
	noted(resp, nil)
	if w, ok := watchPath(req.URL.Path); ok && to != nil && req.Method == http.MethodGet && resp.StatusCode == http.StatusOK {
		t.c.watchServed(t.inc, to, sentTo, w)
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// releasingBody releases a request's context when its answer is closed.
type releasingBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

// Close closes the answer and releases its request's context.
func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
