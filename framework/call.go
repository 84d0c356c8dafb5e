package framework

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/jonboulle/clockwork"
)

// CallOption changes how one call is made.
type CallOption interface {
	applyCall(*callOptions)
}

type callOptions struct {
	failFast       bool
	idempotencyKey string
}

type callOptionFunc func(*callOptions)

func (f callOptionFunc) applyCall(o *callOptions) { f(o) }

// FailFast makes a call return at once with unavailable (or
// incompatible_peer) when no endpoint holds a compatible session, instead
// of blocking until one does.
func FailFast() CallOption {
	return callOptionFunc(func(o *callOptions) { o.failFast = true })
}

// WithIdempotencyKey marks a call as safe to resend after a transport
// failure, like a method declared idempotent; the key travels in
// Lockstep-Idempotency-Key so the server can recognise a resend.
func WithIdempotencyKey(key string) CallOption {
	return callOptionFunc(func(o *callOptions) { o.idempotencyKey = key })
}

// CallUnary calls a unary method and returns its answer. It blocks until
// some endpoint holds a session at an agreed version (bounded by ctx and
// ClientConfig.ReadyTimeout), unless [FailFast] is given; calls refused
// unprocessed (handshake_required, incompatible_peer, a draining server) are
// resent after a new handshake or to another endpoint without the caller
// seeing them.
func CallUnary[Req, Resp any](ctx context.Context, c *Client, method string, req *Req, opts ...CallOption) (*Resp, error) {
	decl, ok := c.contract.Method(method)
	if !ok {
		return nil, Errorf(CodeNotFound, "contract %s %s declares no method %s", c.contract.Name(), c.contract.Version(), method)
	}
	if decl.Batch {
		return nil, Errorf(CodeInvalidArgument, "%s is a batch method; use CallBatch", method)
	}
	out, err := c.invoke(ctx, method, decl.Idempotent, req, opts, func(body []byte) (any, error) {
		resp := new(Resp)
		if err := json.Unmarshal(body, resp); err != nil {
			return nil, Errorf(CodeInternal, "%s answer does not decode: %v", method, err)
		}
		return resp, nil
	})
	if err != nil {
		return nil, err
	}
	resp, ok := out.(*Resp)
	if !ok || resp == nil {
		return nil, Errorf(CodeInternal, "interceptor returned %T, not %T", out, resp)
	}
	return resp, nil
}

// Result is one item's outcome in a batch call: a value or a coded error.
type Result[T any] struct {
	Value *T
	Err   error
}

// CallBatch calls a batch method with items and returns one result per
// item, in order. The returned error is for the call as a whole (nothing
// was processed, or the answer was malformed); per-item errors are in the
// results.
func CallBatch[Req, Resp any](ctx context.Context, c *Client, method string, items []*Req, opts ...CallOption) ([]Result[Resp], error) {
	decl, ok := c.contract.Method(method)
	if !ok {
		return nil, Errorf(CodeNotFound, "contract %s %s declares no method %s", c.contract.Name(), c.contract.Version(), method)
	}
	if !decl.Batch {
		return nil, Errorf(CodeInvalidArgument, "%s is not a batch method; use CallUnary", method)
	}
	if items == nil {
		items = []*Req{}
	}
	out, err := c.invoke(ctx, method, decl.Idempotent, &batchItems[Req]{Items: items}, opts, func(body []byte) (any, error) {
		var br batchResponse
		if err := json.Unmarshal(body, &br); err != nil {
			return nil, Errorf(CodeInternal, "%s answer does not decode: %v", method, err)
		}
		if len(br.Results) != len(items) {
			return nil, Errorf(CodeInternal, "%s answered %d results for %d items", method, len(br.Results), len(items))
		}
		results := make([]Result[Resp], len(items))
		for i, r := range br.Results {
			switch {
			case r.Error != nil:
				results[i].Err = r.Error.toError()
			case r.OK != nil:
				v := new(Resp)
				if err := json.Unmarshal(r.OK, v); err != nil {
					results[i].Err = Errorf(CodeInternal, "%s result %d does not decode: %v", method, i, err)
				} else {
					results[i].Value = v
				}
			default:
				results[i].Err = Errorf(CodeInternal, "%s result %d has neither ok nor error", method, i)
			}
		}
		return results, nil
	})
	if err != nil {
		return nil, err
	}
	results, ok := out.([]Result[Resp])
	if !ok {
		return nil, Errorf(CodeInternal, "interceptor returned %T, not batch results", out)
	}
	return results, nil
}

type batchItems[Req any] struct {
	Items []*Req `json:"items"`
}

// invoke runs the interceptors around one logical call: encode, route,
// resend as needed, decode.
func (c *Client) invoke(ctx context.Context, method string, idempotent bool, req any, opts []CallOption,
	decode func([]byte) (any, error)) (any, error) {
	var o callOptions
	for _, opt := range opts {
		opt.applyCall(&o)
	}
	call := &Call{Contract: c.contract.Name(), Version: c.contract.Version(), Method: method,
		Header: http.Header{}, Request: req}
	if o.idempotencyKey != "" {
		call.Header.Set(HeaderIdempotencyKey, o.idempotencyKey)
	}
	final := func(ctx context.Context, call *Call) (any, error) {
		body, err := json.Marshal(call.Request)
		if err != nil {
			return nil, Errorf(CodeInvalidArgument, "%s request does not encode: %v", method, err)
		}
		answer, err := c.send(ctx, call, body, idempotent || o.idempotencyKey != "", o.failFast)
		if err != nil {
			return nil, err
		}
		return decode(answer)
	}
	return chain(c.cfg.Interceptors, final)(ctx, call)
}

// send routes one encoded call to a compatible endpoint, blocking while
// there is none, and resends it when it was refused unprocessed.
func (c *Client) send(ctx context.Context, call *Call, body []byte, retryable, failFast bool) ([]byte, error) {
	// The ready timeout starts the first time the call has to wait.
	var readyTimeout <-chan time.Time
	var readyTimer clockwork.Timer
	defer func() {
		if readyTimer != nil {
			readyTimer.Stop()
		}
	}()
	resends := 0
	for {
		changed := c.changedCh()
		e, sess := c.pick()
		if e == nil {
			if failFast {
				return nil, c.blockedError(CodeUnavailable)
			}
			if c.cfg.ReadyTimeout > 0 && readyTimer == nil {
				readyTimer = c.cfg.Clock.NewTimer(c.cfg.ReadyTimeout)
				readyTimeout = readyTimer.Chan()
			}
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return nil, c.blockedError(CodeOf(ctx.Err()))
			case <-readyTimeout:
				return nil, c.blockedError(CodeUnavailable)
			case <-c.ctx.Done():
				return nil, Errorf(CodeUnavailable, "client closed")
			}
		}
		if resends > 2 {
			// Something keeps refusing: pace the resends.
			t := c.cfg.Clock.NewTimer(c.cfg.Backoff.Delay(resends - 3))
			select {
			case <-t.Chan():
			case <-ctx.Done():
				t.Stop()
				return nil, NewError(CodeOf(ctx.Err()), ctx.Err())
			}
		}
		resends++
		call.Peer, call.Endpoint, call.Version = sess.peer, e.url, sess.contract.Version()
		var a attempt
		if c.cfg.AutoBatch != nil {
			a = e.batcherFor(sess).do(ctx, call.Method, body, call.Header)
		} else {
			a = e.post(ctx, sess, call.Method, body, call.Header)
		}
		if a.err != nil {
			if ctx.Err() != nil {
				return nil, NewError(CodeOf(ctx.Err()), ctx.Err())
			}
			if isDialError(a.err) || retryable || e.drainingSession(sess) {
				// Never reached the server, or safe to resend anyway: the
				// method is idempotent, or a draining server cut the
				// connection, having answered every call it read.
				e.lose(sess, stateUnreachable, a.err)
				continue
			}
			return nil, Errorf(CodeUnavailable, "%s %s to %s: %v", call.Contract, call.Method, e.url, a.err)
		}
		if a.status == http.StatusOK {
			if a.draining {
				e.lose(sess, stateDraining, Errorf(CodeUnavailable, "%s is draining", sess.peer.Component))
			}
			return a.body, nil
		}
		werr := decodeWireErrorStatus(a.status, a.body)
		switch {
		case werr.Code() == CodeHandshakeRequired || werr.Code() == CodeIncompatiblePeer:
			e.lose(sess, stateConnecting, werr)
			continue
		case a.draining && a.notProcessed:
			e.lose(sess, stateDraining, werr)
			continue
		case a.draining:
			e.lose(sess, stateDraining, werr)
		}
		return nil, werr
	}
}
