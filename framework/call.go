package framework

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/lockstep-dev/lockstep/framework/internal/resend"
	"github.com/lockstep-dev/lockstep/framework/internal/wire"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// CallOption changes how one call is made.
type CallOption interface {
	applyCall(*callOptions)
}

type callOptions struct {
	failFast       bool
	idempotencyKey string
	itemContexts   []context.Context
}

type callOptionFunc func(*callOptions)

func (f callOptionFunc) applyCall(o *callOptions) { f(o) }

// FailFast makes a call return at once with unavailable (or
// incompatible_peer) when no endpoint holds a compatible session, instead
// of blocking until one does.
func FailFast() CallOption {
	return callOptionFunc(func(o *callOptions) { o.failFast = true })
}

// WithIdempotencyKey gives a call an idempotency key: it travels in
// Lockstep-Idempotency-Key, and the server instance that runs the call
// records its answer under it, so a resend is answered from the record
// and never runs the handler twice. After a failure that leaves its fate
// unknown (a lost answer), the call is resent to that instance only; once
// that instance is gone, the call fails with [CodeUnknown]. A key names
// one request: reused for another, it is refused. ClientConfig.ExactlyOnce
// gives every non-idempotent call a key of its own.
func WithIdempotencyKey(key string) CallOption {
	return callOptionFunc(func(o *callOptions) { o.idempotencyKey = key })
}

// WithItemContexts gives the items of a batch call the contexts they come
// from, one per item in order (nil for an item that has none): an item
// collected from another request than the call's own keeps that request's
// trace. Client interceptors find them in [Call.ItemContexts] and may put
// headers of each item's own in [Call.ItemHeader] (a trace context), which
// travel with the item (docs/protocol.md, "headers" of a batch call) and
// which the server adds to the call's headers for that item. Ignored by
// unary calls; a list whose length is not the number of items is
// invalid_argument.
func WithItemContexts(ctxs ...context.Context) CallOption {
	return callOptionFunc(func(o *callOptions) { o.itemContexts = ctxs })
}

// CallUnary calls a unary method and returns its answer. It blocks until
// some endpoint holds a session at an agreed version (bounded by ctx and
// ClientConfig.ReadyTimeout), unless [FailFast] is given; calls refused
// unprocessed (handshake_required, incompatible_peer, a draining server) are
// resent after a new handshake or to another endpoint without the caller
// seeing them. At an endpoint that agreed on a fork version, the request is
// converted down and the answer up.
//
// For generated code: the typed clients lockstep-gen emits call it. A
// program without generated types may call it directly, as the README does.
func CallUnary[Req, Resp any](ctx context.Context, c *Client, method string, req *Req, opts ...CallOption) (*Resp, error) {
	decl, ok := c.contract.Method(method)
	if !ok {
		return nil, Errorf(CodeNotFound, "contract %s %s declares no method %s", c.contract.Name(), c.contract.Version(), method)
	}
	if decl.Batch {
		return nil, Errorf(CodeInvalidArgument, "%s is a batch method; use CallBatch", method)
	}
	out, err := c.invoke(ctx, req, opts, wireCall{
		method: method, idempotent: decl.Idempotent,
		encode: func(conv *MethodConversion, call *Call) ([]byte, error) {
			req := call.Request
			if conv != nil {
				old, err := conv.down(req)
				if err != nil {
					return nil, err
				}
				return marshal(old)
			}
			return marshal(req)
		},
		decode: func(v *peerVersion, body []byte) (any, error) {
			return decodeAnswer[Resp](v, method, body)
		},
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

// decodeAnswer decodes one answer at the version it travelled at: validated
// first if the peer is pinned (it never proved it speaks the contract), and
// converted up if the version is a fork.
func decodeAnswer[Resp any](v *peerVersion, method string, body []byte) (*Resp, error) {
	decl, _ := v.contract.Method(method)
	decode := func(target any) error {
		if v.pinned {
			if err := v.contract.decodeValidated(decl.Response, body, target); err != nil {
				return pinnedAnswerError(v, method, decl.Response, err)
			}
			return nil
		}
		if err := unmarshal(body, target); err != nil {
			return Errorf(CodeInternal, "%s answer does not decode: %v", method, err)
		}
		return nil
	}
	conv := v.conversion(method)
	if conv == nil {
		resp := new(Resp)
		if err := decode(resp); err != nil {
			return nil, err
		}
		return resp, nil
	}
	old := conv.newOldResp()
	if err := decode(old); err != nil {
		return nil, err
	}
	up, err := conv.up(old)
	if err != nil {
		if CodeOf(err) != CodeInternal {
			return nil, err
		}
		return nil, Errorf(CodeInternal, "%s: converting the answer up from %s: %v", method, v.contract.Version(), err)
	}
	resp, ok := up.(*Resp)
	if !ok {
		return nil, Errorf(CodeInternal, "%s conversion returned %T, not %T", method, up, resp)
	}
	return resp, nil
}

func pinnedAnswerError(v *peerVersion, method, message string, err error) error {
	return Errorf(CodeInternal, "pinned peer answered %s %s %s with something that is not a valid %s: %v",
		v.contract.Name(), v.contract.Version(), method, message, asError(err).Message())
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
//
// For generated code: the typed clients lockstep-gen emits call it. A
// program without generated types may call it directly, as the README does.
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
	out, err := c.invoke(ctx, &batchItems[Req]{Items: items}, opts, wireCall{
		method: method, idempotent: decl.Idempotent,
		encode: func(conv *MethodConversion, call *Call) ([]byte, error) {
			all := call.Request.(*batchItems[Req]).Items
			headers := itemHeaders(call.ItemHeader, len(all))
			if conv == nil {
				return json.Marshal(batchItems[Req]{Items: all, Headers: headers})
			}
			olds := make([]any, len(all))
			for i, item := range all {
				old, err := conv.down(item)
				if err != nil {
					return nil, err
				}
				olds[i] = old
			}
			return json.Marshal(batchItems[any]{Items: anyPtrs(olds), Headers: headers})
		},
		decode: func(v *peerVersion, body []byte) (any, error) {
			var br wire.BatchResponse
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
					results[i].Err = r.Error.ToError()
				case r.OK != nil:
					results[i].Value, results[i].Err = decodeAnswer[Resp](v, method, r.OK)
				default:
					results[i].Err = Errorf(CodeInternal, "%s result %d has neither ok nor error", method, i)
				}
			}
			return results, nil
		},
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

// anyPtrs keeps converted items as they are for encoding.
func anyPtrs(v []any) []*any {
	out := make([]*any, len(v))
	for i := range v {
		out[i] = &v[i]
	}
	return out
}

// batchItems is a batch call's body: its items and, when some item has
// headers of its own, one header object (or null) per item.
type batchItems[Req any] struct {
	Items   []*Req              `json:"items"`
	Headers []map[string]string `json:"headers,omitempty"`
}

func (b *batchItems[Req]) itemCount() int { return len(b.Items) }

// itemHeaders is the "headers" member of a batch call whose items have
// headers h: nil when no item has any, so that a batch call without them
// is encoded as before.
func itemHeaders(h []http.Header, n int) []map[string]string {
	if len(h) != n {
		return nil
	}
	var out []map[string]string
	for i, hi := range h {
		if len(hi) == 0 {
			continue
		}
		if out == nil {
			out = make([]map[string]string, n)
		}
		m := make(map[string]string, len(hi))
		for k, v := range hi {
			if len(v) > 0 {
				m[k] = v[0]
			}
		}
		out[i] = m
	}
	return out
}

// wireCall is a call of one method: its name, whether the contract
// declares it idempotent, and how to encode its request and decode its
// answer at whichever version the chosen endpoint speaks.
type wireCall struct {
	method     string
	idempotent bool
	// encode encodes the call's request, converted down by conv when it is
	// not nil.
	encode func(conv *MethodConversion, call *Call) ([]byte, error)
	// decode decodes (and converts up, and for pinned peers validates) an
	// answer at version v.
	decode func(v *peerVersion, body []byte) (any, error)
}

// invoke runs the interceptors around one logical call: route, encode for
// the endpoint's version, resend as needed, decode.
func (c *Client) invoke(ctx context.Context, req any, opts []CallOption, wire wireCall) (_ any, err error) {
	method, idempotent := wire.method, wire.idempotent
	var o callOptions
	for _, opt := range opts {
		opt.applyCall(&o)
	}
	call := &Call{Contract: c.contract.Name(), Version: c.contract.Version(), Method: method,
		Header: http.Header{}, Request: req}
	if o.idempotencyKey == "" && !idempotent && c.cfg.ExactlyOnce {
		o.idempotencyKey = randomID(16)
	}
	if o.idempotencyKey != "" {
		call.Header.Set(protocol.HeaderIdempotencyKey, o.idempotencyKey)
	}
	if items, ok := req.(interface{ itemCount() int }); ok {
		n := items.itemCount()
		if o.itemContexts != nil && len(o.itemContexts) != n {
			return nil, Errorf(CodeInvalidArgument, "%s: %d item contexts for %d items", method, len(o.itemContexts), n)
		}
		call.ItemContexts = o.itemContexts
		call.ItemHeader = make([]http.Header, n)
	}
	if obs := c.cfg.Observer; obs != nil {
		start := c.cfg.Clock.Now()
		defer func() { obs.Call(c.contract.Name(), call.Version, method, CodeOf(err), c.cfg.Clock.Since(start)) }()
	}
	final := func(ctx context.Context, call *Call) (any, error) {
		// The last encoding is kept: a resend to an endpoint at the same
		// version (nearly always) reuses the bytes without a map per call.
		var encodedFor *peerVersion
		var encoded []byte
		encode := func(v *peerVersion) ([]byte, error) {
			if v == encodedFor {
				return encoded, nil
			}
			ec := call
			if v.pinned && call.ItemHeader != nil {
				// A pinned peer is no lockstep server: it gets the
				// batch body of the contract's own schema only.
				plain := *call
				plain.ItemHeader = nil
				ec = &plain
			}
			b, err := wire.encode(v.conversion(method), ec)
			if err != nil {
				return nil, convError(method, c.contract.Version(), v.contract.Version(), err)
			}
			encodedFor, encoded = v, b
			return b, nil
		}
		safety := resend.Unsafe
		switch {
		case o.idempotencyKey != "":
			safety = resend.Keyed
		case idempotent:
			safety = resend.Idempotent
		}
		answer, v, err := c.send(ctx, call, encode, safety, o.failFast)
		if err != nil {
			return nil, err
		}
		return wire.decode(v, answer)
	}
	return chain(c.cfg.Interceptors, final)(ctx, call)
}

// send routes one call to a compatible endpoint, blocking while there is
// none, and resends it as the resend rules say ([resend.Call.Run]). It
// returns the answer and the version it travelled at.
func (c *Client) send(ctx context.Context, call *Call, encode func(*peerVersion) ([]byte, error), safety resend.Safety, failFast bool) ([]byte, *peerVersion, error) {
	w := c.newCallWait(failFast)
	defer w.Done()
	var what string
	what, w.What = c.callNames(call.Contract, call.Method)
	rc := resend.Call{Safety: safety,
		Pick: func() resend.Target {
			if e, sess := c.pick(call.Method); e != nil {
				return resend.Target{E: e, S: sess}
			}
			return resend.Target{}
		},
		Attempt: func(ctx context.Context, t resend.Target, alone bool) (resend.Attempt, error) {
			e, sess := t.E.(*endpoint), t.S.(*clientSession)
			call.Peer, call.Endpoint, call.Version = sess.peer, e.url, sess.version.contract.Version()
			body, err := encode(sess.version)
			if err != nil {
				return resend.Attempt{}, err
			}
			if alone {
				return c.attemptAlone(ctx, e, sess, call, body), nil
			}
			return c.attempt(ctx, e, sess, call, body), nil
		},
	}
	answer, t, err := rc.Run(ctx, w, what)
	if err != nil {
		return nil, nil, err
	}
	return answer, t.S.(*clientSession).version, nil
}

// methodNames are how a call of one method is named: in errors ("nodestatus
// ReportStatus") and in the blocked log ("call nodestatus ReportStatus").
type methodNames struct{ what, wait string }

// namesOf returns the names of the calls of each method of c, made once
// per client rather than twice at every call.
func namesOf(c *Contract) map[string]methodNames {
	names := map[string]methodNames{}
	for _, m := range c.Methods() {
		what := c.Name() + " " + m
		names[m] = methodNames{what: what, wait: "call " + what}
	}
	return names
}

// callNames returns the names of a call of method of contract (see
// [methodNames]): the client's own, unless an interceptor renamed the call.
func (c *Client) callNames(contract, method string) (what, wait string) {
	if n, ok := c.names[method]; ok && contract == c.contract.Name() {
		return n.what, n.wait
	}
	what = contract + " " + method
	return what, "call " + what
}

// attempt sends one attempt of a call to e: through its automatic batcher
// unless batching is off, the peer is pinned (it speaks no multi-call), or
// it is a batch call (a multi-call carries unary calls only).
func (c *Client) attempt(ctx context.Context, e *endpoint, sess *clientSession, call *Call, body []byte) resend.Attempt {
	if ab := c.cfg.AutoBatch; (ab == nil || !ab.Disabled) && !sess.version.pinned {
		if decl, ok := c.contract.Method(call.Method); ok && !decl.Batch {
			return e.batcherFor(sess).do(ctx, call.Method, body, call.Header)
		}
	}
	return c.attemptAlone(ctx, e, sess, call, body)
}

// attemptAlone sends one attempt of a call to e in a request of its own,
// never in a multi-call (for whom, see resend.Call's Attempt).
func (c *Client) attemptAlone(ctx context.Context, e *endpoint, sess *clientSession, call *Call, body []byte) resend.Attempt {
	return e.send(ctx, sess, resend.Request{Method: http.MethodPost, URL: e.callURL(sess, call.Method), Body: body, Header: call.Header})
}
