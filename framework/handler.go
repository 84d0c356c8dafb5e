package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-chi/chi/v5"

	"github.com/lockstep-dev/lockstep/framework/internal/admit"
	"github.com/lockstep-dev/lockstep/framework/internal/replay"
	"github.com/lockstep-dev/lockstep/framework/internal/wire"
	"github.com/lockstep-dev/lockstep/framework/jsonwire"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// Validator is implemented by generated message types whose generated
// checks cover their whole schema. The runtime calls Validate after decoding
// such a message instead of validating its JSON with jsonschema/v5.
//
// For generated code: lockstep-gen implements it on the message types it emits.
type Validator interface {
	Validate() error
}

// methodHandler serves one method of one contract version: it decodes and
// validates the body, runs the interceptors and handler, and encodes the
// answer.
type methodHandler struct {
	batch bool
	serve func(ctx context.Context, call *Call, body []byte) ([]byte, error)
	// invoke runs the interceptors and the typed handler on an already
	// decoded request (call.Request); fork mode calls it with converted
	// requests. For batch methods it handles one item.
	invoke func(ctx context.Context, call *Call) (any, error)
	// forkOf is, for a method served by conversion, the version whose
	// handler serves it.
	forkOf *Contract
}

// HandleUnary registers the handler of a unary method. It panics on setup
// mistakes: a method the contract does not declare, or a batch method.
//
// The handler sees only decoded, validated requests; an error it returns
// reaches the caller with its code ([NewError]), or as internal.
//
// For generated code: the typed servers lockstep-gen emits call it. A
// program without generated types may call it directly, as the README does.
func HandleUnary[Req, Resp any](s *Server, c *Contract, method string, h func(context.Context, *Req) (*Resp, error)) {
	decl := mustMethod(c, method, false)
	run := s.callChain(func(ctx context.Context, call *Call) (any, error) {
		return h(context.WithValue(ctx, callKey{}, call), call.Request.(*Req))
	})
	s.register(c, method, &methodHandler{invoke: run, serve: func(ctx context.Context, call *Call, body []byte) ([]byte, error) {
		req := new(Req)
		if err := decodeMessage(c, decl.Request, body, req); err != nil {
			return nil, err
		}
		call.Request = req
		out, err := run(ctx, call)
		if err != nil {
			return nil, processedError(err)
		}
		return encodeResponse[Resp](out)
	}})
}

// HandleBatch registers the handler of a batch method. The body is
// {"items":[…]}; the handler is called once per item, in order, and each item
// gets its own result or coded error: {"results":[{"ok":…}|{"error":…}]}.
// An item that does not decode or validate gets invalid_argument without
// reaching the handler. Interceptors run once per item.
//
// For generated code: the typed servers lockstep-gen emits call it. A
// program without generated types may call it directly, as the README does.
func HandleBatch[Req, Resp any](s *Server, c *Contract, method string, h func(context.Context, *Req) (*Resp, error)) {
	decl := mustMethod(c, method, true)
	run := s.callChain(func(ctx context.Context, call *Call) (any, error) {
		return h(context.WithValue(ctx, callKey{}, call), call.Request.(*Req))
	})
	maxItems := s.batchItems(c, method)
	s.register(c, method, &methodHandler{batch: true, invoke: run, serve: func(ctx context.Context, call *Call, body []byte) ([]byte, error) {
		return s.serveBatchItems(ctx, call, body, maxItems, func(ctx context.Context, i int, raw json.RawMessage, h http.Header) ([]byte, error) {
			req := new(Req)
			if err := decodeMessage(c, decl.Request, raw, req); err != nil {
				return nil, err
			}
			itemCall := *call
			itemCall.Request, itemCall.Batch, itemCall.Item, itemCall.Header = req, true, i, h
			resp, err := run(ctx, &itemCall)
			if err != nil {
				return nil, processedError(err)
			}
			return encodeResponse[Resp](resp)
		})
	}})
}

// processedError is the error a caller sees once a handler has run. The
// codes handshake_required and incompatible_peer promise that a call was not
// processed, so the client may resend it; a handler or interceptor that
// returns one (passing on a downstream peer's error, say) must not make the
// caller resend a call it already handled, so it travels as unavailable.
func processedError(err error) error {
	switch CodeOf(err) {
	case CodeHandshakeRequired, CodeIncompatiblePeer:
		return NewError(CodeUnavailable, err)
	}
	return err
}

// serveBatchItems decodes the body of a batch call, {"items":[…]} of at
// most maxItems items (the method's [Server.batchItems]), serves each item
// in order with its headers (the call's, with the item's own added when
// the body has "headers"), and encodes {"results":[…]}.
func (s *Server) serveBatchItems(ctx context.Context, call *Call, body []byte, maxItems int,
	item func(ctx context.Context, i int, raw json.RawMessage, h http.Header) ([]byte, error)) ([]byte, error) {
	header := call.Header
	var in wire.BatchRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, Errorf(CodeInvalidArgument, "batch body must be {\"items\":[…]}: %v", err)
	}
	if in.Items == nil {
		return nil, Errorf(CodeInvalidArgument, "batch body must be {\"items\":[…]}: items is missing")
	}
	if len(in.Items) > maxItems {
		return nil, overLimit(s.cfg.Metrics, limitBatchItems, CodeInvalidArgument, "a batch call carries at most %d items, not %d", maxItems, len(in.Items))
	}
	if in.Headers != nil && len(in.Headers) != len(in.Items) {
		return nil, Errorf(CodeInvalidArgument, "a batch call's headers are one per item: %d for %d items", len(in.Headers), len(in.Items))
	}
	out := wire.BatchResponse{Results: make([]wire.Result, len(in.Items))}
	for i, raw := range in.Items {
		if err := ctx.Err(); err != nil {
			out.Results[i] = wire.ErrorResult(err)
			continue
		}
		h := header
		if in.Headers != nil && len(in.Headers[i]) > 0 {
			h = header.Clone()
			for k, v := range in.Headers[i] {
				h.Set(k, v)
			}
		}
		b, err := item(ctx, i, raw, h)
		if err != nil {
			out.Results[i] = wire.ErrorResult(err)
			continue
		}
		out.Results[i] = wire.Result{OK: b}
	}
	return json.Marshal(out)
}

func mustMethod(c *Contract, method string, batch bool) methodDecl {
	decl, ok := c.Method(method)
	if !ok {
		panic(fmt.Sprintf("lockstep: contract %s %s declares no method %s", c.Name(), c.Version(), method))
	}
	if decl.Batch != batch {
		if batch {
			panic(fmt.Sprintf("lockstep: %s is not a batch method; use HandleUnary", method))
		}
		panic(fmt.Sprintf("lockstep: %s is a batch method; use HandleBatch", method))
	}
	return methodDecl{Request: decl.Request, Response: decl.Response}
}

type methodDecl struct{ Request, Response string }

// handlerOf returns the handler registered for a method of a contract
// version, or nil.
func (s *Server) handlerOf(c *Contract, method string) *methodHandler {
	sc := s.lookup(c.Name())
	if sc == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sv := sc.versions[c.Version()]; sv != nil {
		return sv.methods[method]
	}
	return nil
}

// encodeResponse checks a handler's (or interceptor's) answer and encodes
// it.
func encodeResponse[Resp any](out any) ([]byte, error) {
	resp, ok := out.(*Resp)
	if !ok || resp == nil {
		return nil, Errorf(CodeInternal, "handler returned no %T", resp)
	}
	b, err := marshal(resp)
	if err != nil {
		return nil, Errorf(CodeInternal, "response did not encode: %v", err)
	}
	return b, nil
}

// decodeMessage decodes and validates one message. Generated types that
// implement [Validator] validate themselves after decoding; anything else is
// validated as JSON against the contract's schema first.
func decodeMessage(c *Contract, message string, body []byte, v any) error {
	if val, ok := v.(Validator); ok {
		if err := unmarshal(body, v); err != nil {
			if CodeOf(err) == CodeInvalidArgument {
				return err
			}
			return Errorf(CodeInvalidArgument, "%s does not decode: %v", message, err)
		}
		if err := val.Validate(); err != nil {
			if CodeOf(err) == CodeInvalidArgument {
				return err
			}
			return Errorf(CodeInvalidArgument, "%s: %v", message, err)
		}
		return nil
	}
	return c.decodeValidated(message, body, v)
}

// unmarshal decodes body into v. A generated message type decodes itself
// strictly, rejecting malformed JSON and trailing data as encoding/json does
// (the generator's differential and fuzz tests check both paths accept the
// same inputs), so its UnmarshalJSON is called directly: json.Unmarshal would
// scan the whole input twice first, which costs more than the generated
// decoding and validation together.
func unmarshal(body []byte, v any) error {
	if u, ok := v.(json.Unmarshaler); ok {
		if _, generated := v.(Validator); generated {
			return u.UnmarshalJSON(body)
		}
	}
	return json.Unmarshal(body, v)
}

// MaxMultiCalls bounds the calls of one multi-call request; a client's
// AutoBatch.MaxCalls should not exceed it.
const MaxMultiCalls = 256

// multiCallWorkers bounds the goroutines one multi-call runs its calls on.
const multiCallWorkers = 32

// serveCall answers POST /lockstep/<contract>/<version>/<Method> and the
// multi-call endpoint: routing, admission (admit.Gate.Admit), the body (ReadBody),
// the call's deadline, the handler once per idempotency key (dispatch),
// and the answer.
func (s *Server) serveCall(w http.ResponseWriter, r *http.Request) {
	contract, ver, method := chi.URLParam(r, "contract"), chi.URLParam(r, "version"), chi.URLParam(r, "method")
	if method != protocol.MultiCallMethod {
		// Each call of a multi-call is observed on its own (serveMulti).
		var ow *admit.ObservedWriter
		w, ow = admit.ObserveAnswer(w, s.gate.ObserveCall(contract, ver, method))
		defer ow.End()
	}
	sv, mh, err := s.routeCall(contract, ver, method)
	if err != nil {
		s.refuse(w, r, s.routingRefusal(r, err))
		return
	}
	adm, err := s.gate.Admit(r, entry{Kind: EntryCall, Contract: contract, Version: ver, Call: true})
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	defer adm.Done()
	sess := adm.Sess
	body, release, ok := s.gate.ReadBody(w, r, adm)
	if !ok {
		return
	}
	ctx, cancel, err := withTimeoutHeader(adm.Ctx, r.Header.Get(protocol.HeaderTimeout))
	if err != nil {
		// A malformed timeout is the request's own error: a resend fails
		// the same way, so it is not marked not processed. It is read
		// after the body, so the answer leaves nothing unread.
		release()
		s.fail(w, err)
		return
	}
	defer cancel()
	var out []byte
	replayed := false
	if method == protocol.MultiCallMethod {
		out, err = s.serveMulti(ctx, sv, sess, r.Header, body)
	} else {
		out, replayed, err = s.dispatch(ctx, sess, &Call{Kind: EntryCall, Contract: contract, Version: ver, Method: method, Peer: sess.peer, Header: r.Header}, body, mh.serve)
	}
	if replayed {
		w.Header().Set(protocol.HeaderReplayed, "1")
	}
	release()
	s.answer(ctx, w, adm, out, err)
}

// routeCall finds what a call's path names: the served version and, but
// for a multi-call, the method's handler. Its refusal comes before
// admission (routingRefusal).
func (s *Server) routeCall(contract, ver, method string) (*servedVersion, *methodHandler, error) {
	sc := s.lookup(contract)
	if sc == nil {
		return nil, nil, Errorf(CodeNotFound, "%s does not serve contract %q", s.cfg.Component, contract)
	}
	sv := sc.versions[ver]
	if sv == nil {
		return nil, nil, Errorf(CodeIncompatiblePeer, "%s does not speak %s %s: handshake again", s.cfg.Component, contract, ver)
	}
	mh := sv.methods[method]
	if mh == nil && method != protocol.MultiCallMethod {
		return nil, nil, Errorf(CodeNotFound, "%s %s has no method %q", contract, ver, method)
	}
	return sv, mh, nil
}

// answer writes the outcome of an admitted call whose handler ran (or may
// have run): out, or err as handlerError makes it. A call in a session
// renews it, is told when the server drains (and the session marked told)
// and when its client should resync; a plain call is told the server
// drains when it was draining as the call arrived.
func (s *Server) answer(ctx context.Context, w http.ResponseWriter, a *admitted, out []byte, err error) {
	draining := a.Draining
	if sess := a.Sess; sess != nil {
		sess.lastSeen.Store(s.now())
		if draining = s.draining.Load(); draining {
			sess.drainNotified.Store(true)
		}
	}
	if err != nil {
		s.fail(w, handlerError(ctx, err))
		return
	}
	if draining {
		markDraining(w)
	}
	if a.Sess != nil && a.Sess.resync.Swap(false) {
		w.Header().Set(protocol.HeaderResync, "1")
	}
	writeJSON(w, http.StatusOK, out)
}

// handlerError is what a handler's error is answered with: an uncoded
// failure (internal) of a handler whose context ended is the deadline's
// doing, and is answered deadline_exceeded, which the caller can act on.
// Every call is answered through it: a call alone, each call of a
// multi-call, a plain call.
func handlerError(ctx context.Context, err error) error {
	if ctx.Err() != nil && CodeOf(err) == CodeInternal {
		return NewError(CodeDeadlineExceeded, ctx.Err())
	}
	return err
}

// withTimeoutHeader applies a Lockstep-Timeout value to ctx.
func withTimeoutHeader(ctx context.Context, value string) (context.Context, context.CancelFunc, error) {
	if value == "" {
		return ctx, func() {}, nil
	}
	d, err := decodeTimeout(value)
	if err != nil {
		return nil, nil, Errorf(CodeInvalidArgument, "%s: %v", protocol.HeaderTimeout, err)
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, cancel, nil
}

// runBounded runs fn(0) … fn(n-1) on at most workers goroutines, the
// caller's among them, and waits for them: the calls of a multi-call came
// from concurrent callers, but one request must not start unbounded
// goroutines. Each worker takes the next index left until none is, so a
// call that blocks holds up only its own worker, while quick calls run
// one after the other on whichever worker is running, instead of being
// handed to the workers one by one through a channel (a park and a wake-up
// each, on the scheduler's queue beside every other goroutine).
func runBounded(n, workers int, fn func(i int)) {
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			fn(i)
		}
	}
	var wg sync.WaitGroup
	for range min(n, workers) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
}

// serveMulti runs the calls of a multi-call concurrently, each through its
// method's handler and the interceptors as if it had come alone, and answers
// {"results":[…]} in order.
func (s *Server) serveMulti(ctx context.Context, sv *servedVersion, sess *session, header http.Header, body []byte) ([]byte, error) {
	in, err := wire.DecodeMultiRequest(body)
	if err != nil {
		return nil, Errorf(CodeInvalidArgument, "multi-call body must be {\"calls\":[…]}: %v", err)
	}
	if len(in.Calls) > MaxMultiCalls {
		return nil, overLimit(s.cfg.Metrics, limitMultiCalls, CodeInvalidArgument, "a multi-call carries at most %d calls, not %d", MaxMultiCalls, len(in.Calls))
	}
	// Each call counts against the session's and the peer's in-flight
	// limits, as it would alone (the request itself was counted once
	// already).
	if extra := int64(len(in.Calls) - 1); extra > 0 {
		if n := sess.inFlight.Add(extra); n > int64(s.cfg.MaxInFlightPerSession) {
			sess.inFlight.Add(-extra)
			return nil, overLimit(s.cfg.Metrics, limitInFlightPerSession, CodeResourceExhausted, "session would have %d calls in flight, the limit is %d", n, s.cfg.MaxInFlightPerSession)
		}
		defer sess.inFlight.Add(-extra)
		end, err := s.limits.BeginCall(sess.usage, extra)
		if err != nil {
			return nil, err
		}
		defer end()
	}
	out := wire.BatchResponse{Results: make([]wire.Result, len(in.Calls))}
	run := func(i int) {
		mc := in.Calls[i]
		defer func() {
			// net/http recovers a handler's panic and ends only the
			// request; the calls of a multi-call run on goroutines of
			// their own, where it would end the process. The call that
			// panicked is answered internal, the others as usual.
			if p := recover(); p != nil {
				s.cfg.Logger.Error("lockstep: a call of a multi-call panicked", "contract", sv.contract.Name(),
					"version", sv.contract.Version(), "method", mc.Method, "panic", p, "stack", string(debug.Stack()))
				out.Results[i] = wire.ErrorResult(Errorf(CodeInternal, "%s failed", mc.Method))
			}
		}()
		mh := sv.methods[mc.Method]
		if mh == nil || mh.batch {
			out.Results[i] = wire.ErrorResult(Errorf(CodeNotFound, "%s %s has no unary method %q",
				sv.contract.Name(), sv.contract.Version(), mc.Method))
			return
		}
		cctx, cancel, err := withTimeoutHeader(ctx, mc.Timeout)
		if err != nil {
			out.Results[i] = wire.ErrorResult(err)
			return
		}
		defer cancel()
		h := header
		if len(mc.Header) > 0 {
			h = header.Clone()
			for k, v := range mc.Header {
				h.Set(k, v)
			}
		}
		observed := s.gate.ObserveCall(sv.contract.Name(), sv.contract.Version(), mc.Method)
		b, replayed, err := s.dispatch(cctx, sess, &Call{Kind: EntryCall, Contract: sv.contract.Name(), Version: sv.contract.Version(),
			Method: mc.Method, Peer: sess.peer, Header: h}, mc.Request, mh.serve)
		observed.End(CodeOf(err))
		if err != nil {
			out.Results[i] = wire.ErrorResult(handlerError(cctx, err))
		} else {
			out.Results[i] = wire.Result{OK: b}
		}
		out.Results[i].Replayed = replayed
	}
	runBounded(len(in.Calls), multiCallWorkers, run)
	size := len(`{"results":[]}`)
	for _, r := range out.Results {
		size += len(`{"ok":},`) + len(r.OK)
	}
	return wire.AppendMultiResponse(make([]byte, 0, size), out)
}

// replayKeyOf names the record of a call with key in sess.
func replayKeyOf(sess *session, key string) replay.Key {
	return replay.Key{Contract: sess.contract, Peer: sess.usage.Key, Instance: sess.peer.Instance, Key: key}
}

// dispatch serves one call of sess through serve, once per idempotency
// key: a call that carries Lockstep-Idempotency-Key is recorded under its
// peer and instance (replayKeyOf), and a
// replay of it is answered from the record (replayed is true) without
// running serve again; a replay that arrives while the first still runs
// waits for its answer. The first call's handler runs on a context that
// keeps its deadline but not the request's cancellation, so a connection
// cut after the call arrived does not stop it halfway: its answer is
// recorded for the resend. Calls without a key are served as they are.
func (s *Server) dispatch(ctx context.Context, sess *session, call *Call, body []byte, serve func(context.Context, *Call, []byte) ([]byte, error)) (out []byte, replayed bool, err error) {
	key := call.Header.Get(protocol.HeaderIdempotencyKey)
	if key == "" {
		out, err = serve(ctx, call, body)
		return out, false, err
	}
	k := replayKeyOf(sess, key)
	digest := replay.RequestDigest(call.Method, body)
	rec, first, err := s.replays.Begin(k, digest, s.cfg.Clock.Now())
	if err != nil {
		return nil, false, err
	}
	if first {
		hctx, cancel := detached(ctx)
		defer cancel()
		err = Errorf(CodeInternal, "the handler of %s did not return", call.Method)
		defer func() { s.replays.Finish(k, rec, replay.Answer{Out: out, Err: err}) }()
		out, err = serve(hctx, call, body)
		return out, false, err
	}
	select {
	case <-rec.Done():
	case <-ctx.Done():
		return nil, false, NewError(CodeDeadlineExceeded, ctx.Err())
	}
	a := rec.Answer()
	return a.Out, true, a.Err
}

// detached returns a context with ctx's values and deadline, but not its
// cancellation.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	d := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(d, dl)
	}
	return d, func() {}
}

// replayLimits are the bounds of the idempotency records
// (replay.Limits), as the limits' counters name them.
var replayLimits = []limit{limit(replay.LimitKeysPerPeer), limit(replay.LimitBytesPerPeer), limit(replay.LimitBytes)}

// Plain serving: one contract version served to callers that do not
// handshake, such as a Kubernetes kube-scheduler calling a scheduler
// extender. Such a caller cannot take part in version negotiation, so the
// server's operator pins the version for it, as a client pins an external
// peer ([PinnedPeer]): the plain paths are that version's declared paths,
// and the calls reach the very handlers (interceptors, fork conversions
// and validation included) that the version's sessions reach.

// ServePlain serves contract version c to callers that do not handshake:
// every method of c that declares a path is served at prefix + path
// (prefix is a Kubernetes scheduler configuration's urlPrefix path, "" for
// none), POST only. A request is decoded and validated exactly as a call
// in a session is (the version's generated decoding, case-insensitive
// where the contract says so, and its schemas), runs the server's
// interceptors and the handler registered for the method, and is answered
// with the method's response as JSON, or with lockstep's error shape and
// its code's HTTP status.
//
// Call it after registering c's handlers ([HandleUnary], [ForkUnary],
// generated Register functions). It panics on setup mistakes: c not
// served, a method with a path but no handler, a contract without paths,
// unary methods only, once the server has started.
//
// A plain call has no session: handlers see a [Call] without a peer, and
// [PlainRequest] returns its HTTP request. It is served while the server
// drains (its caller has no other replica to be sent to) and counted in
// the drain's calls in flight.
func (s *Server) ServePlain(c *Contract, prefix string) {
	prefix = "/" + strings.Trim(prefix, "/")
	if prefix == "/" {
		prefix = ""
	}
	served := 0
	for _, method := range c.Methods() {
		decl, _ := c.Method(method)
		if decl.Path == "" {
			continue
		}
		if decl.Batch {
			panic(fmt.Sprintf("lockstep: plain serving: %s %s method %s is a batch method; plain callers make unary calls", c.Name(), c.Version(), method))
		}
		mh := s.handlerOf(c, method)
		if mh == nil || s.lookup(c.Name()).versions[c.Version()].contract.Fingerprint() != c.Fingerprint() {
			panic(fmt.Sprintf("lockstep: plain serving: %s %s method %s has no handler; register the version's handlers first", c.Name(), c.Version(), method))
		}
		path := prefix + "/" + strings.TrimPrefix(decl.Path, "/")
		s.route(path, s.plainHandler(c, method, mh), false)
		served++
	}
	if served == 0 {
		panic(fmt.Sprintf("lockstep: plain serving: %s %s declares no method paths", c.Name(), c.Version()))
	}
}

type plainKey struct{}

// PlainRequest returns the HTTP request of a call served to a caller that
// does not handshake ([Server.ServePlain]), or nil for a call in a session.
func PlainRequest(ctx context.Context) *http.Request {
	r, _ := ctx.Value(plainKey{}).(*http.Request)
	return r
}

// plainHandler serves one method of c to plain callers, through the
// same admission (admit, EntryPlain), body reading and answer as a call
// in a session.
func (s *Server) plainHandler(c *Contract, method string, mh *methodHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w, ow := admit.ObserveAnswer(w, s.gate.ObserveCall(c.Name(), c.Version(), method))
		defer ow.End()
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			s.refuse(w, r, s.routingRefusal(r, Errorf(CodeNotFound, "%s is not served at %s: POST only", r.Method, r.URL.Path)))
			return
		}
		adm, err := s.gate.Admit(r, entry{Kind: EntryPlain, Contract: c.Name(), Version: c.Version()})
		if err != nil {
			s.refuse(w, r, err)
			return
		}
		defer adm.Done()
		body, release, ok := s.gate.ReadBody(w, r, adm)
		if !ok {
			return
		}
		defer release()
		ctx := context.WithValue(adm.Ctx, plainKey{}, r.WithContext(adm.Ctx))
		out, err := mh.serve(ctx, &Call{Kind: EntryPlain, Contract: c.Name(), Version: c.Version(), Method: method, Header: r.Header}, body)
		s.answer(ctx, w, adm, out, err)
	})
}

// encodeBufs holds scratch buffers for marshal, so that a message is
// encoded without growing a fresh slice member by member.
var encodeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledBuf bounds the buffers returned to the pool, so that one huge
// message does not pin its buffer for the life of the process.
const maxPooledBuf = 64 << 10

// marshal encodes a message: with its generated encoder ([jsonwire.Appender])
// when it has one, into a pooled scratch buffer, returning a copy of exactly
// the encoded length (the one allocation json.Marshal also makes); otherwise with
// json.Marshal. Requests, answers and topic objects all go through it.
func marshal(v any) ([]byte, error) {
	a, ok := v.(jsonwire.Appender)
	if !ok {
		return json.Marshal(v)
	}
	bp := encodeBufs.Get().(*[]byte)
	b, err := a.AppendJSON((*bp)[:0])
	var out []byte
	if err == nil {
		out = make([]byte, len(b))
		copy(out, b)
	}
	if cap(b) <= maxPooledBuf {
		*bp = b[:0]
		encodeBufs.Put(bp)
	}
	return out, err
}
